"""Preprocessing as explicit stages: decode → resize + centre crop → normalize (images); tokenize (text).

This is the reference (Pillow) path that every faster path is checked against.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidInput, InvalidModel
from turboinfer.core.types import ImagePreprocess, TextPreprocess

MAX_PIXELS = 100_000_000
"""Refuse images above this many pixels before decoding (decompression bombs); 100 MP by default."""


NOT_AN_IMAGE = "not a decodable image: no image format recognized in the bytes"


def check_pixel_limit(width: int, height: int, max_pixels: int = MAX_PIXELS) -> None:
    """Raise InvalidInput when a header's width×height exceeds max_pixels (checked before decoding)."""
    if width * height > max_pixels:
        raise InvalidInput(
            f"image too large: {width}x{height} = {width * height / 1e6:.0f} MP, "
            f"over the {max_pixels / 1e6:.0f} MP limit"
        )


def decode_pil(data: bytes, max_pixels: int = MAX_PIXELS) -> Image.Image:
    """Bytes of any Pillow format → an RGB Pillow image, EXIF orientation applied."""
    if not data:
        raise InvalidInput("empty image: 0 bytes")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own limit applies below
            image = Image.open(io.BytesIO(data))
            check_pixel_limit(*image.size, max_pixels)
            image.load()
    except Image.DecompressionBombError as err:
        raise InvalidInput(f"image too large: {err}") from None
    except UnidentifiedImageError:
        raise InvalidInput(NOT_AN_IMAGE) from None
    except (OSError, SyntaxError, ValueError) as err:
        raise InvalidInput(f"corrupt or truncated image: {err}") from None
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        raise InvalidInput(f"unsupported {image.mode} (16/32-bit) image; convert it to 8-bit RGB")
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    ImageOps.exif_transpose(rgb, in_place=True)  # copies nothing when there is no orientation tag
    return rgb


def decode_image(data: bytes, max_pixels: int = MAX_PIXELS) -> np.ndarray:
    """Bytes of any Pillow format → RGB uint8 array [H, W, 3], EXIF orientation applied."""
    return np.asarray(decode_pil(data, max_pixels))


def resize_and_crop(pixels: Image.Image | np.ndarray, spec: ImagePreprocess) -> np.ndarray:
    """Resize the shorter side to spec.resize (bilinear, antialiased), then centre-crop spec.size × spec.size.

    The same operations as torchvision's Resize(resize) + CenterCrop(size) on a Pillow image.
    """
    image = pixels if isinstance(pixels, Image.Image) else Image.fromarray(pixels)
    width, height = image.size
    scale = spec.resize / min(height, width)
    new_w, new_h = max(spec.size, round(width * scale)), max(spec.size, round(height * scale))
    image = image.resize((new_w, new_h), Image.Resampling.BILINEAR)
    left, top = (new_w - spec.size) // 2, (new_h - spec.size) // 2
    return np.asarray(image.crop((left, top, left + spec.size, top + spec.size)))


def normalize(pixels: np.ndarray, spec: ImagePreprocess) -> np.ndarray:
    """uint8 [H, W, 3] → the model's input layout and dtype ((x/255 - mean)/std in float32, or raw uint8)."""
    if spec.input_dtype == "uint8":
        out = pixels
    else:
        mean = np.asarray(spec.mean, dtype=np.float32) * 255  # [3], in 0..255 units
        inv_std = 1.0 / (np.asarray(spec.std, dtype=np.float32) * 255)
        out = (pixels.astype(np.float32) - mean) * inv_std
    return np.ascontiguousarray(out.transpose(2, 0, 1) if spec.layout == "NCHW" else out)


def image_tensor(data: bytes, spec: ImagePreprocess) -> np.ndarray:
    """Image bytes → one model input, without the batch axis (the reference path)."""
    return normalize(resize_and_crop(decode_pil(data), spec), spec)


def image_batch(images: Sequence[bytes], spec: ImagePreprocess) -> np.ndarray:
    """Several image byte strings → a stacked batch [N, ...]."""
    return np.stack([image_tensor(data, spec) for data in images])


def read_bytes(path: Path) -> bytes:
    """The bytes of a file (the pipeline's first stage)."""
    return path.read_bytes()


class TextTokenizer:
    """Sentences → the token tensors a text model takes (ids, and its attention mask and type ids if it has them)."""

    def __init__(self, tokenizer_file: Path, spec: TextPreprocess) -> None:
        from tokenizers import Tokenizer

        if not tokenizer_file.is_file():
            raise InvalidInput(f"tokenizer file not found: {tokenizer_file}")
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as err:  # tokenizers raises a bare Exception for a file it cannot parse
            raise InvalidInput(f"{tokenizer_file} is not a tokenizers JSON file: {str(err).splitlines()[0]}") from None
        self._spec = spec

    @property
    def vocab_size(self) -> int:
        """Number of token ids the tokenizer can produce."""
        return int(self._tokenizer.get_vocab_size())

    def __call__(self, sentences: Sequence[str], pad_to: int | None = None) -> dict[str, np.ndarray]:
        """Token tensors [batch, sequence], int64, padded to the longest; pad_to fixes the length instead."""
        if not sentences or not all(isinstance(s, str) for s in sentences):
            raise InvalidInput("need a non-empty list of strings")
        self._tokenizer.enable_truncation(pad_to or self._spec.max_length)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]", length=pad_to)
        encodings = self._tokenizer.encode_batch(list(sentences))
        columns = {self._spec.ids: [e.ids for e in encodings], self._spec.mask: [e.attention_mask for e in encodings],
                   self._spec.type_ids: [e.type_ids for e in encodings]}  # fmt: skip
        return {name: np.array(rows, dtype=np.int64) for name, rows in columns.items() if name}


def tokenizer_file(card: ModelCard) -> Path:
    """The tokenizer of a text model's card; InvalidModel saying how to give one when it has none."""
    spec = card.preprocess
    if not isinstance(spec, TextPreprocess):
        raise InvalidModel(f"{card.name} takes no text (its inputs are not token ids)")
    if not spec.tokenizer:
        raise InvalidModel(
            f"{card.name} takes token ids but has no tokenizer: pass --tokenizer tokenizer.json, or set the card's "
            f"preprocess.tokenizer (turboinfer card init {card.onnx_path.name} --tokenizer FILE)"
        )
    return card.folder / spec.tokenizer


def text_tokenizer(card: ModelCard) -> TextTokenizer:
    """The TextTokenizer of a text model's card (see tokenizer_file)."""
    assert isinstance(card.preprocess, TextPreprocess)
    return TextTokenizer(tokenizer_file(card), card.preprocess)
