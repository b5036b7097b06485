"""A demo gallery from the real photos that installed packages ship: each photo whole and cut into tiles."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageOps

MAX_SIDE = 640
"""Gallery images are stored at most this many pixels on their longer side."""


def tiles(image: Image.Image, grid: int) -> list[Image.Image]:
    """The image cut into grid × grid equal, non-overlapping tiles (row by row)."""
    width, height = image.size
    boxes = [(c * width // grid, r * height // grid, (c + 1) * width // grid, (r + 1) * height // grid)
             for r in range(grid) for c in range(grid)]  # fmt: skip
    return [image.crop(box) for box in boxes]


def write_gallery(photos: Sequence[Path], dest: Path, grid: int = 2, quality: int = 90) -> list[Path]:
    """Write every photo (EXIF-upright, RGB, ≤ MAX_SIDE) and its grid × grid tiles as JPEGs into dest.

    Tiles of one photo share its colours and style but not its content: hard distractors for near-duplicate
    search, and enough images (photos × (1 + grid²)) to fit a 256-dimension PCA.
    """
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for number, path in enumerate(photos):
        with Image.open(path) as img:
            image = ImageOps.exif_transpose(img).convert("RGB")
        parts = [("", image)] + [(f"-t{i}", tile) for i, tile in enumerate(tiles(image, grid) if grid > 1 else [])]
        for suffix, part in parts:
            part.thumbnail((MAX_SIDE, MAX_SIDE))
            target = dest / f"{number:03d}-{path.stem}{suffix}.jpg"
            part.save(target, format="JPEG", quality=quality)
            written.append(target)
    return written
