"""Deterministic photo augmentation (crop, flip, colour jitter, JPEG re-compression) to grow evaluation sets."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance, ImageOps


@dataclass(frozen=True)
class Augmented:
    """One augmented photo: its JPEG bytes and the index of the source photo it came from."""

    source: int
    jpeg: bytes


def augment(image: Image.Image, rng: np.random.Generator) -> bytes:
    """One random but reproducible variant of image as JPEG bytes.

    Crop keeping 60–100% of each side, horizontal flip with p=0.5, brightness/contrast/saturation
    ×0.75–1.25, then JPEG at quality 60–95.
    """
    image = image.convert("RGB")
    width, height = image.size
    keep_w, keep_h = (int(side * rng.uniform(0.6, 1.0)) for side in (width, height))
    left, top = int(rng.integers(0, width - keep_w + 1)), int(rng.integers(0, height - keep_h + 1))
    image = image.crop((left, top, left + keep_w, top + keep_h))
    if rng.random() < 0.5:
        image = ImageOps.mirror(image)
    for enhancer in (ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color):
        image = enhancer(image).enhance(float(rng.uniform(0.75, 1.25)))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=int(rng.integers(60, 96)))
    return out.getvalue()


def augmented_set(photos: Sequence[Path], count: int, seed: int = 0, max_side: int = 640) -> list[Augmented]:
    """`count` augmented photos cycling over `photos` (each first shrunk to max_side), reproducible by seed."""
    rng = np.random.default_rng(seed)
    sources = []
    for path in photos:
        with Image.open(path) as img:
            image = ImageOps.exif_transpose(img).convert("RGB")
        image.thumbnail((max_side, max_side))
        sources.append(image)
    return [Augmented(i % len(sources), augment(sources[i % len(sources)], rng)) for i in range(count)]
