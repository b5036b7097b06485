"""Decoders against the reference path (Pillow full decode + torchvision-style transforms), side by side on
real photos of several sizes, interleaved so machine noise hits every method alike."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from turboinfer.core.errors import DataUnavailable, InvalidInput
from turboinfer.core.settings import Settings
from turboinfer.core.types import ImagePreprocess
from turboinfer.measure.fidelity import classify_metrics
from turboinfer.measure.stats import PairedRatio, Summary, paired_ratio_ci, summarize
from turboinfer.measure.timer import interleave
from turboinfer.models.augment import augmented_set
from turboinfer.models.decoders import Decoder, available_decoders
from turboinfer.models.image_pipeline import DecodePool, ImagePipeline
from turboinfer.models.photos import MATE_NATURE, OPENCV_DATA, all_photos, debian_folder, files_with_suffix
from turboinfer.models.preprocess import image_tensor
from turboinfer.runtime.session import Session

BASELINE = "baseline"
"""Pillow full decode + Resize(256) + CenterCrop(224) + normalize: what torchvision's transforms do."""


@dataclass(frozen=True)
class DecodeCase:
    """One JPEG to decode, and where it came from."""

    label: str
    jpeg: bytes
    width: int
    height: int
    origin: str

    @property
    def megapixels(self) -> float:
        """Size in millions of pixels."""
        return self.width * self.height / 1e6

    def describe(self) -> dict[str, Any]:
        """JSON-ready description (no bytes)."""
        return {
            "label": self.label,
            "width": self.width,
            "height": self.height,
            "kib": len(self.jpeg) // 1024,
            "origin": self.origin,
        }


@dataclass(frozen=True)
class MethodResult:
    """One method on one case: latency, speedup over the baseline (paired), pool throughput by threads."""

    case: str
    method: str
    latency: Summary
    speedup: PairedRatio | None
    images_per_s: dict[int, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (seconds; speedup = baseline median / method median)."""
        return {
            "case": self.case,
            "method": self.method,
            "latency": self.latency.to_dict(),
            "speedup": None if self.speedup is None else {"ratio": self.speedup.ratio, "ci95": list(self.speedup.ci)},
            "images_per_s": self.images_per_s,
        }


def jpeg_case(label: str, path: Path, size: tuple[int, int] | None = None, quality: int = 92) -> DecodeCase:
    """A case from a real photo: its own bytes, or re-encoded at another size (labelled as such)."""
    if size is None:
        with Image.open(path) as image:
            width, height = image.size
        return DecodeCase(label, path.read_bytes(), width, height, path.name)
    with Image.open(path) as image:
        resized = image.convert("RGB").resize(size, Image.Resampling.LANCZOS)
    out = io.BytesIO()
    resized.save(out, format="JPEG", quality=quality)
    return DecodeCase(label, out.getvalue(), *size, f"{path.name} resized to {size[0]}x{size[1]}, q{quality}")


def default_cases(settings: Settings) -> list[DecodeCase]:
    """~0.3 MP and ~4 MP real photos, and a ≥12 MP one (a real 4 MP photo upscaled: no 12 MP photo ships)."""
    opencv, mate = debian_folder(settings, OPENCV_DATA), debian_folder(settings, MATE_NATURE)
    if opencv is None or mate is None:
        raise DataUnavailable("the decode benchmark needs the Debian photos; run `make data`")
    big = mate / "TwoWings.jpg"
    return [
        jpeg_case("0.3 MP", opencv / "aero1.jpg"),
        jpeg_case("4.1 MP", big),
        jpeg_case("12.5 MP", big, size=(4480, 2800)),
    ]


def folder_cases(folder: Path) -> list[DecodeCase]:
    """One case per JPEG in folder, labelled by size."""
    paths = files_with_suffix(folder, {".jpg", ".jpeg"}) if folder.is_dir() else []
    if not paths:
        raise DataUnavailable(f"no JPEG files in {folder}")
    cases = []
    for path in paths:
        case = jpeg_case("", path)
        cases.append(
            DecodeCase(f"{path.name} ({case.megapixels:.1f} MP)", case.jpeg, case.width, case.height, path.name)
        )
    return cases


def methods(spec: ImagePreprocess) -> dict[str, Callable[[bytes], np.ndarray]]:
    """The baseline and one fast pipeline per available decoder, each bytes → model input."""
    table: dict[str, Callable[[bytes], np.ndarray]] = {BASELINE: lambda data: image_tensor(data, spec)}
    for decoder in available_decoders():
        if decoder.name != "pillow-full":
            table[decoder.name] = ImagePipeline(spec, decoder)
    return table


def timed_methods(
    fns: dict[str, Callable[[bytes], Any]], data: bytes, rounds: int, seconds: float
) -> dict[str, np.ndarray]:
    """Each method warmed up once on data, then timed interleaved (at least 6 rounds, then until `seconds`)."""
    for fn in fns.values():
        fn(data)
    return interleave({name: partial(fn, data) for name, fn in fns.items()}, rounds, seconds, min_rounds=6)


def pool_throughput(pipeline: Callable[[bytes], Any], data: bytes, threads: int, n: int) -> float:
    """Images/s preprocessing n copies of data with `threads` decode threads (the baseline: one call each)."""
    if not isinstance(pipeline, ImagePipeline):
        start = time.perf_counter()
        for _ in range(n):
            pipeline(data)
        return n / (time.perf_counter() - start)
    with DecodePool(pipeline, threads) as pool:
        pool.batch([data] * threads)  # start the threads
        start = time.perf_counter()
        pool.batch([data] * n)
        return n / (time.perf_counter() - start)


def compare_decoders(
    cases: list[DecodeCase], spec: ImagePreprocess, threads: tuple[int, ...] = (1, 2), seconds: float = 5.0
) -> list[MethodResult]:
    """Latency (interleaved) and pool throughput of every method on every case."""
    results = []
    for case in cases:
        fns = methods(spec)
        samples = timed_methods(fns, case.jpeg, rounds=400, seconds=seconds)
        base = samples[BASELINE]
        batch = max(8, min(64, int(2.0 / max(float(np.median(base)), 1e-4))))
        for name, fn in fns.items():
            speedup = None if name == BASELINE else paired_ratio_ci(samples[name], base)
            counts = (1,) if name == BASELINE else threads  # the baseline has no pool: one call at a time
            throughput = {t: pool_throughput(fn, case.jpeg, t, batch) for t in counts}
            results.append(MethodResult(case.label, name, summarize(samples[name]), speedup, throughput))
    return results


def fidelity_set(settings: Settings, size: int = 300, seed: int = 1) -> list[bytes]:
    """Every real photo plus augmented variants (up to 1600 px), `size` JPEG/PNG byte strings in all."""
    photos = all_photos(settings)
    extra = augmented_set(photos, max(0, size - len(photos)), seed=seed, max_side=1600)
    return [p.read_bytes() for p in photos][:size] + [a.jpeg for a in extra]


def top1_agreement(
    session: Session, spec: ImagePreprocess, items: list[bytes], decoder: Decoder, oversample: float = 2.0
) -> dict[str, float]:
    """The classifier's answers through the fast pipeline (at this oversampling) against the reference path's, as
    the optimizer's budget measures them (measure.fidelity.classify_metrics): decisive and overall top-1
    agreement, top-5 overlap."""
    name = session.inputs[0].name

    def logits(batch: np.ndarray) -> np.ndarray:
        chunks = [session.run({name: batch[i : i + 25]}) for i in range(0, len(batch), 25)]
        return np.concatenate([next(iter(c.values())) for c in chunks])

    reference = logits(np.stack([image_tensor(data, spec) for data in items]))
    with DecodePool(ImagePipeline(spec, decoder, oversample), threads=2) as pool:
        result = pool.batch(items)
    if result.failed:
        raise InvalidInput(f"{len(result.failed)} items failed the fast path: {next(iter(result.failed.values()))}")
    return classify_metrics(reference, logits(result.tensor))
