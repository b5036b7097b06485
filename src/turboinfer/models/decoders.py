"""Image decoders behind one interface. JPEG decoders shrink in the DCT domain (1/2, 1/4, 1/8) to the smallest
scale that still covers the target, which skips most of the work for large photos.

Every decoder returns RGB uint8 [H, W, 3] with EXIF orientation applied, with the size of the full-resolution
(oriented) image, and raises InvalidInput for bad bytes.
"""

from __future__ import annotations

import importlib.util
import io
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from PIL import Image, UnidentifiedImageError

from turboinfer.core.errors import InvalidInput
from turboinfer.models.preprocess import MAX_PIXELS, NOT_AN_IMAGE, check_pixel_limit, decode_image
from turboinfer.runtime.torch import cuda_available, decode_jpeg

JPEG_MAGIC = b"\xff\xd8\xff"
JPEG_EOI = b"\xff\xd9"
EXIF_ORIENTATION = 0x0112
TRANSPOSING = (5, 6, 7, 8)
"""EXIF orientations that swap width and height."""


@dataclass(frozen=True)
class Decoded:
    """Decoded pixels, RGB uint8 [H, W, 3], possibly at reduced scale, and the full image's (width, height)."""

    pixels: np.ndarray
    full_size: tuple[int, int]

    @classmethod
    def full(cls, pixels: np.ndarray) -> Decoded:
        """A full-resolution decode."""
        return cls(pixels, (pixels.shape[1], pixels.shape[0]))

    @classmethod
    def scaled(cls, pixels: np.ndarray, width: int, height: int, orientation: int) -> Decoded:
        """A reduced decode of a width×height original (header size), oriented as EXIF says."""
        oriented = apply_orientation(pixels, orientation)
        return cls(oriented, (height, width) if orientation in TRANSPOSING else (width, height))


class Decoder(Protocol):
    """Bytes → pixels whose shorter side is at least min_side (or the original's, if smaller)."""

    @property
    def name(self) -> str:
        """Short name, as in benchmarks and options."""
        ...

    def decode(self, data: bytes, min_side: int) -> Decoded:
        """Decode, possibly at reduced scale."""
        ...


def is_jpeg(data: bytes) -> bool:
    """True when the bytes start with the JPEG SOI marker."""
    return data[:3] == JPEG_MAGIC


def header_size(data: bytes, max_pixels: int = MAX_PIXELS) -> tuple[int, int]:
    """(width, height) from the header alone; InvalidInput for non-images and images over max_pixels."""
    if not data:
        raise InvalidInput("empty image: 0 bytes")
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except Image.DecompressionBombError as err:
        raise InvalidInput(f"image too large: {err}") from None
    except UnidentifiedImageError:
        raise InvalidInput(NOT_AN_IMAGE) from None
    except Exception as err:  # Pillow raises UnidentifiedImageError, OSError, SyntaxError... for bad headers
        raise InvalidInput(f"not a decodable image: {err}") from None
    check_pixel_limit(width, height, max_pixels)
    return width, height


def exif_orientation(data: bytes) -> int:
    """EXIF orientation tag (1–8) of a JPEG, 1 when absent; reads the header only."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            return int(image.getexif().get(EXIF_ORIENTATION, 1))
    except Exception:  # a broken EXIF block must not lose an otherwise decodable photo
        return 1


def apply_orientation(pixels: np.ndarray, orientation: int) -> np.ndarray:
    """Rotate/flip [H, W, C] pixels as EXIF orientation 1–8 asks (the same as ImageOps.exif_transpose)."""
    ops = {
        2: lambda a: a[:, ::-1],
        3: lambda a: a[::-1, ::-1],
        4: lambda a: a[::-1],
        5: lambda a: a.transpose(1, 0, 2),
        6: lambda a: np.rot90(a, k=-1),
        7: lambda a: a[::-1, ::-1].transpose(1, 0, 2),  # transverse: mirror across the anti-diagonal
        8: lambda a: np.rot90(a, k=1),
    }
    op = ops.get(orientation)
    return np.ascontiguousarray(op(pixels)) if op else pixels


def scale_for(width: int, height: int, min_side: int, factors: tuple[int, ...] = (8, 4, 2)) -> int:
    """The largest DCT reduction factor that keeps the shorter side ≥ min_side (1 when none does)."""
    short = min(width, height)
    return next((f for f in factors if short // f >= min_side), 1)


@dataclass(frozen=True)
class PillowFull:
    """Reference: Pillow decodes every pixel (the baseline)."""

    name: str = "pillow-full"
    max_pixels: int = MAX_PIXELS

    def decode(self, data: bytes, min_side: int) -> Decoded:
        """Full-resolution decode; min_side is ignored."""
        return Decoded.full(decode_image(data, self.max_pixels))


@dataclass(frozen=True)
class PillowDraft:
    """Pillow with draft() mode: libjpeg's DCT scaling for JPEG, full decode for other formats."""

    name: str = "pillow-draft"
    max_pixels: int = MAX_PIXELS

    def decode(self, data: bytes, min_side: int) -> Decoded:
        """Decode at the smallest JPEG scale covering min_side."""
        width, height = header_size(data, self.max_pixels)
        if not is_jpeg(data):
            return Decoded.full(decode_image(data, self.max_pixels))
        factor = scale_for(width, height, min_side)
        try:
            with Image.open(io.BytesIO(data)) as image:
                image.draft("RGB", (-(-width // factor), -(-height // factor)))
                pixels = np.asarray(image.convert("RGB"))
        except (OSError, SyntaxError, ValueError) as err:
            raise InvalidInput(f"corrupt or truncated image: {err}") from None
        return Decoded.scaled(pixels, width, height, exif_orientation(data))


@dataclass(frozen=True)
class SimpleJpeg:
    """libjpeg-turbo through simplejpeg, DCT-downscaled; non-JPEG and CMYK JPEGs go through Pillow."""

    name: str = "simplejpeg"
    max_pixels: int = MAX_PIXELS

    def decode(self, data: bytes, min_side: int) -> Decoded:
        """Decode at the smallest JPEG scale covering min_side; releases the GIL while decoding."""
        import simplejpeg

        if not is_jpeg(data):
            return Decoded.full(decode_image(data, self.max_pixels))
        try:
            height, width, colorspace, _ = simplejpeg.decode_jpeg_header(data)
        except ValueError as err:
            raise InvalidInput(f"corrupt JPEG header: {err}") from None
        check_pixel_limit(width, height, self.max_pixels)
        if colorspace in ("CMYK", "YCCK"):
            return Decoded.full(decode_image(data, self.max_pixels))
        factor = scale_for(width, height, min_side)
        try:
            pixels = simplejpeg.decode_jpeg(
                data, colorspace="RGB", min_height=-(-height // factor), min_width=-(-width // factor)
            )
        except ValueError as err:
            raise InvalidInput(f"corrupt or truncated JPEG: {err}") from None
        return Decoded.scaled(pixels, width, height, exif_orientation(data))


@dataclass(frozen=True)
class OpenCvReduced:
    """OpenCV imdecode with IMREAD_REDUCED_COLOR_{2,4,8} (DCT scaling; EXIF orientation applied by OpenCV)."""

    name: str = "opencv"
    max_pixels: int = MAX_PIXELS

    def decode(self, data: bytes, min_side: int) -> Decoded:
        """Decode at the smallest JPEG scale covering min_side."""
        import cv2

        width, height = header_size(data, self.max_pixels)
        if not is_jpeg(data):
            return Decoded.full(decode_image(data, self.max_pixels))
        flags = {1: cv2.IMREAD_COLOR, 2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4}
        flag = flags.get(scale_for(width, height, min_side), cv2.IMREAD_REDUCED_COLOR_8)
        if JPEG_EOI not in data[-64:]:
            raise InvalidInput("corrupt or truncated JPEG: no end-of-image marker")
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), flag)
        if bgr is None:
            raise InvalidInput("corrupt or truncated JPEG: OpenCV could not decode it")
        oriented_by_opencv = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        swap = exif_orientation(data) in TRANSPOSING
        return Decoded(oriented_by_opencv, (height, width) if swap else (width, height))


@dataclass(frozen=True)
class TorchvisionJpeg:
    """torchvision.io.decode_jpeg at full size: libjpeg-turbo on the CPU, nvJPEG on a CUDA device (optional:
    needs the torch extra); non-JPEG formats go through Pillow."""

    device: str = "cpu"
    max_pixels: int = MAX_PIXELS

    @property
    def name(self) -> str:
        """ "nvjpeg" on a GPU, "torchvision" on the CPU."""
        return "nvjpeg" if self.device.startswith("cuda") else "torchvision"

    def decode(self, data: bytes, min_side: int) -> Decoded:
        """Full-resolution decode (torchvision has no DCT scaling); min_side is ignored."""
        width, height = header_size(data, self.max_pixels)
        if not is_jpeg(data):
            return Decoded.full(decode_image(data, self.max_pixels))
        return Decoded.scaled(decode_jpeg(data, self.device), width, height, exif_orientation(data))


def available_decoders() -> list[Decoder]:
    """Decoders whose libraries are installed, fastest first (order measured by benchmarks/decode.py); nvJPEG
    leads when a CUDA device is present."""
    decoders: list[Decoder] = [TorchvisionJpeg("cuda")] if cuda_available() else []
    for module, decoder in (("simplejpeg", SimpleJpeg()), ("cv2", OpenCvReduced())):
        if importlib.util.find_spec(module) is not None:
            decoders.append(decoder)
    decoders.append(PillowDraft())
    if importlib.util.find_spec("torchvision") is not None:
        decoders.append(TorchvisionJpeg())
    return [*decoders, PillowFull()]


def choose_decoder(name: str = "auto") -> Decoder:
    """The named decoder, or the fastest available one for "auto"."""
    decoders = available_decoders()
    if name == "auto":
        return decoders[0]
    for decoder in decoders:
        if decoder.name == name:
            return decoder
    raise InvalidInput(f"decoder {name!r} is not available; choose from {', '.join(d.name for d in decoders)}")
