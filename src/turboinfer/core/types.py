"""Frozen value types shared by every layer: tensor specs, preprocessing specs, metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from turboinfer.core.errors import InvalidInput, InvalidModel

Dim = int | str
"""A tensor dimension: a fixed size, or a symbolic name such as "batch"."""
UNKNOWN_RANK: tuple[Dim, ...] = ("...",)
"""The shape of a tensor whose graph records no shape at all (not even its rank)."""
UNNAMED = "?"
"""A symbolic dim the graph leaves unnamed: any size, tied to no other dim."""

ONNX_TO_NUMPY = {
    "float": "float32",
    "float16": "float16",
    "double": "float64",
    "bfloat16": "bfloat16",
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "int64": "int64",
    "bool": "bool",
}

V2_DATATYPES = {
    "float32": "FP32", "float16": "FP16", "float64": "FP64", "int64": "INT64", "int32": "INT32", "int8": "INT8",
    "uint8": "UINT8", "bool": "BOOL",
}  # fmt: skip
"""numpy dtype name → Open Inference Protocol datatype."""


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape (with symbolic dims) and numpy dtype name of one model input or output."""

    name: str
    shape: tuple[Dim, ...]
    dtype: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TensorSpec:
        """Inverse of to_dict."""
        return cls(str(data["name"]), tuple(data["shape"]), str(data["dtype"]))

    def concrete_shape(self, **dims: int) -> tuple[int, ...]:
        """The shape with symbolic dims replaced by the given sizes (e.g. batch=8)."""
        try:
            return tuple(d if isinstance(d, int) else dims[d] for d in self.shape)
        except KeyError as missing:
            raise InvalidModel(f"input {self.name!r} needs a size for dim {missing}") from None

    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype of this tensor."""
        return np.dtype(self.dtype)

    def check_shape(self, shape: Sequence[int]) -> None:
        """InvalidInput unless shape fits: the rank, every fixed dim, and no dim of size 0."""
        if self.shape == UNKNOWN_RANK:
            return
        got = list(shape)
        if len(got) != len(self.shape):
            raise InvalidInput(
                f"input {self.name!r} must have {len(self.shape)} dims {list(self.shape)}, got shape {got}"
            )
        for axis, (want, size) in enumerate(zip(self.shape, got, strict=True)):
            if isinstance(want, int) and want != size:
                raise InvalidInput(f"input {self.name!r} dim {axis} must be {want}, got shape {got}")
            if size < 1:
                raise InvalidInput(f"input {self.name!r} dim {axis} must be at least 1, got shape {got}")


def check_shapes(specs: Sequence[TensorSpec], shapes: Mapping[str, Sequence[int]]) -> None:
    """The one shape check of inputs (sessions and servers): each shape fits its spec, and a symbolic dim that
    several inputs name (batch, sequence) has one size in all of them."""
    sizes: dict[str, tuple[int, str]] = {}
    for spec in specs:
        shape = shapes[spec.name]
        spec.check_shape(shape)
        if spec.shape == UNKNOWN_RANK:
            continue
        for want, size in zip(spec.shape, shape, strict=True):
            if isinstance(want, str) and want != UNNAMED:
                seen = sizes.setdefault(want, (size, spec.name))
                if seen[0] != size:
                    raise InvalidInput(
                        f"inputs {seen[1]!r} and {spec.name!r} disagree on dim {want!r}: {seen[0]} vs {size}"
                    )


@dataclass(frozen=True)
class ImagePreprocess:
    """How raw image bytes become the model's input tensor (the ModelCard's preprocessing spec)."""

    size: int = 224
    """Side of the square model input, pixels."""
    resize: int = 256
    """Shorter side after resize, before the centre crop, pixels."""
    mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    """Per-channel mean, on 0..1 pixel values."""
    std: tuple[float, float, float] = (0.229, 0.224, 0.225)
    """Per-channel standard deviation, on 0..1 pixel values."""
    layout: Literal["NCHW", "NHWC"] = "NCHW"
    input_dtype: Literal["float32", "uint8"] = "float32"
    """uint8 when normalization is folded into the model."""
    kind: Literal["image"] = "image"


@dataclass(frozen=True)
class TextPreprocess:
    """How sentences become token tensors, and which model inputs take them."""

    tokenizer: str = "tokenizer.json"
    """Tokenizer file (Hugging Face tokenizers JSON), relative to the card's folder (or absolute); "" = none yet."""
    max_length: int = 256
    """Longest sequence in tokens; longer inputs are truncated."""
    ids: str = "input_ids"
    """The input that takes token ids."""
    mask: str = "attention_mask"
    """The input that takes the attention mask ("" = the model has none)."""
    type_ids: str = "token_type_ids"
    """The input that takes token type (segment) ids ("" = the model has none)."""
    kind: Literal["text"] = "text"


Preprocess = ImagePreprocess | TextPreprocess


def preprocess_to_dict(spec: Preprocess | None) -> dict[str, Any] | None:
    """JSON-ready form of a preprocessing spec."""
    if spec is None:
        return None
    data = dict(spec.__dict__)
    for key in ("mean", "std"):
        if key in data:
            data[key] = list(data[key])
    return data


def preprocess_from_dict(data: dict[str, Any] | None) -> Preprocess | None:
    """Inverse of preprocess_to_dict."""
    if data is None:
        return None
    fields = dict(data)
    kind = fields.get("kind")
    if kind == "image":
        for key in ("mean", "std"):
            fields[key] = tuple(float(v) for v in fields[key])
        return ImagePreprocess(**fields)
    if kind == "text":
        return TextPreprocess(**fields)
    raise InvalidModel(f"unknown preprocessing kind {kind!r}")


@dataclass(frozen=True)
class Metric:
    """One measured quantity with its unit and, when known, a 95% confidence interval."""

    name: str
    value: float
    unit: str
    ci: tuple[float, float] | None = None
    method: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = {"name": self.name, "value": self.value, "unit": self.unit}
        if self.ci is not None:
            out["ci95"] = list(self.ci)
        if self.method:
            out["method"] = self.method
        out.update(self.extra)
        return out
