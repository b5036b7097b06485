"""The fast image path: DCT-downscaled decode → one resize of just the crop → lookup-table normalize into a
preallocated batch, and a thread pool that fills batches in parallel (the decoders release the GIL).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import simplejpeg
from PIL import Image

from turboinfer.core.errors import InvalidInput
from turboinfer.core.types import ImagePreprocess
from turboinfer.models.decoders import Decoder, choose_decoder


def crop_box(
    width: int, height: int, full_size: tuple[int, int], spec: ImagePreprocess
) -> tuple[float, float, float, float]:
    """The region the reference path uses (resize the shorter side to spec.resize, centre-crop spec.size), as a
    float (left, top, right, bottom) box in the pixels of a width×height decode of a full_size original."""
    full_w, full_h = full_size
    scale = spec.resize / min(full_w, full_h)
    new_w, new_h = max(spec.size, round(full_w * scale)), max(spec.size, round(full_h * scale))
    left, top = (new_w - spec.size) // 2, (new_h - spec.size) // 2  # integer crop offsets, as the reference
    sx, sy = width / new_w, height / new_h  # reference-resized pixels → decoded pixels
    return left * sx, top * sy, (left + spec.size) * sx, (top + spec.size) * sy


def resize_crop(pixels: np.ndarray, full_size: tuple[int, int], spec: ImagePreprocess) -> np.ndarray:
    """Resize only the crop region to size×size with the reference's filter (Pillow bilinear, antialiased).

    Sampling the same box of the original as the reference keeps the output within rounding of it, even
    when the decode was DCT-downscaled.
    """
    height, width = pixels.shape[:2]
    box = crop_box(width, height, full_size, spec)
    image = Image.fromarray(pixels)
    return np.asarray(image.resize((spec.size, spec.size), Image.Resampling.BILINEAR, box=box))


@dataclass(frozen=True)
class NormalizeTable:
    """A per-channel lookup table: uint8 value → (v/255 − mean)/std as float32, applied in one cv2.LUT pass."""

    table: np.ndarray  # [256, 1, 3] float32, the layout cv2.LUT takes for 3-channel input

    @classmethod
    def for_spec(cls, spec: ImagePreprocess) -> NormalizeTable:
        """The table for a preprocessing spec."""
        values = np.arange(256, dtype=np.float64)[:, None] / 255  # [256, 1]
        table = (values - np.asarray(spec.mean)[None, :]) / np.asarray(spec.std)[None, :]  # [256, 3]
        return cls(table.astype(np.float32)[:, None, :])

    def write(self, pixels: np.ndarray, out: np.ndarray, layout: str) -> None:
        """Normalize uint8 [H, W, 3] into out ([3, H, W] for NCHW, [H, W, 3] for NHWC)."""
        import cv2

        normalized = cv2.LUT(np.ascontiguousarray(pixels), self.table)  # [H, W, 3] float32
        out[...] = normalized.transpose(2, 0, 1) if layout == "NCHW" else normalized


@dataclass
class ImagePipeline:
    """Bytes → model input, as the ModelCard's preprocessing spec describes, on the fastest decoder."""

    spec: ImagePreprocess
    decoder: Decoder = field(default_factory=choose_decoder)
    oversample: float = 2.0
    """Decode at ≥ oversample × spec.resize on the shorter side before the antialiased resize. 2.0 keeps
    EfficientNet-Lite0's top-1 identical to the reference on 300 real photos; 1.0 is faster but flips ~2%."""

    def __post_init__(self) -> None:
        self._table = NormalizeTable.for_spec(self.spec)

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """Shape of one model input (no batch axis)."""
        size = self.spec.size
        return (3, size, size) if self.spec.layout == "NCHW" else (size, size, 3)

    @property
    def dtype(self) -> np.dtype:
        """dtype of the model input."""
        return np.dtype(self.spec.input_dtype)

    def empty_batch(self, n: int) -> np.ndarray:
        """A preallocated batch buffer [n, ...]."""
        return np.empty((n, *self.sample_shape), dtype=self.dtype)

    def pixels(self, data: bytes) -> np.ndarray:
        """Decode and crop/resize: uint8 [size, size, 3]."""
        decoded = self.decoder.decode(data, round(self.spec.resize * self.oversample))
        return resize_crop(decoded.pixels, decoded.full_size, self.spec)

    def into(self, data: bytes, out: np.ndarray) -> None:
        """Write one preprocessed image into out (a slot of a batch buffer)."""
        pixels = self.pixels(data)
        if self.spec.input_dtype == "uint8":
            out[...] = pixels if self.spec.layout == "NHWC" else pixels.transpose(2, 0, 1)
        else:
            self._table.write(pixels, out, self.spec.layout)

    def __call__(self, data: bytes) -> np.ndarray:
        """One preprocessed image (no batch axis)."""
        out = self.empty_batch(1)[0]
        self.into(data, out)
        return out

    def warm_up(self) -> np.ndarray:
        """Run a generated photo-sized JPEG through the pipeline once (its output returned): the first decode pays
        one-time set-up costs (tens of ms) that a server must not charge to its first request."""
        rows = np.linspace(0, 255, 480, dtype=np.uint8)[:, None, None]
        image = np.broadcast_to(rows, (480, 640, 3)).copy()
        return self(simplejpeg.encode_jpeg(image, quality=90, colorspace="RGB"))


@dataclass(frozen=True)
class BatchResult:
    """A filled batch and the items that failed (index → message); failed slots are zero."""

    tensor: np.ndarray
    failed: dict[int, str]


class DecodePool:
    """N threads preprocessing images into preallocated batches; bounded in flight (back-pressure)."""

    def __init__(self, pipeline: ImagePipeline, threads: int = 2) -> None:
        if threads < 1:
            raise InvalidInput(f"threads must be >= 1, got {threads}")
        self.pipeline = pipeline
        self.threads = threads
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="decode")

    def batch(self, items: Sequence[bytes]) -> BatchResult:
        """Preprocess items in parallel into one batch; bad items are reported, not fatal."""
        out = self.pipeline.empty_batch(len(items))
        futures = [self._executor.submit(self.pipeline.into, data, out[i]) for i, data in enumerate(items)]
        failed: dict[int, str] = {}
        for i, future in enumerate(futures):
            error = future.exception()
            if isinstance(error, InvalidInput):
                failed[i] = str(error)
                out[i] = 0
            elif error is not None:
                raise error
        return BatchResult(out, failed)

    def map(self, items: Iterable[bytes], batch_size: int) -> Iterator[BatchResult]:
        """Batches over a stream of items, preparing at most two batches ahead of the consumer."""
        pending: list[Future[BatchResult]] = []
        chunk: list[bytes] = []
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="batcher") as batcher:
            for data in items:
                chunk.append(data)
                if len(chunk) == batch_size:
                    pending.append(batcher.submit(self.batch, chunk))
                    chunk = []
                    if len(pending) > 2:
                        yield pending.pop(0).result()
            if chunk:
                pending.append(batcher.submit(self.batch, chunk))
            for future in pending:
                yield future.result()

    def close(self) -> None:
        """Stop the worker threads."""
        self._executor.shutdown(wait=True)

    def __enter__(self) -> DecodePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
