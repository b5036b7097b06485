"""Optimization passes, one table: name → pass class (each with its frozen Config)."""

from __future__ import annotations

from typing import Any

from turboinfer.core.errors import InvalidInput
from turboinfer.optimize.passes.base import Pass
from turboinfer.optimize.passes.fold import FoldNormalization
from turboinfer.optimize.passes.graph import OnnxSlim, OrtGraph, TransformerFusion
from turboinfer.optimize.passes.openvino import NncfInt8, OpenVinoConvert
from turboinfer.optimize.passes.precision import Fp16
from turboinfer.optimize.passes.quantize import OrtDynamicInt8, OrtStaticInt8

PASSES: dict[str, type[Pass]] = {
    cls.name: cls
    for cls in (OrtGraph, OnnxSlim, TransformerFusion, OrtDynamicInt8, OrtStaticInt8, Fp16, OpenVinoConvert, NncfInt8,
                FoldNormalization)
}  # fmt: skip
"""Every pass by name (each class carries its Config)."""


def make_pass(name: str, config: dict[str, Any] | None = None) -> Pass:
    """A pass from its name and a JSON config (lists become tuples); InvalidInput for unknown names or fields."""
    if name not in PASSES:
        raise InvalidInput(f"unknown pass {name!r}; known passes: {', '.join(PASSES)}")
    cls = PASSES[name]
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in (config or {}).items()}
    try:
        return cls(cls.Config(**values))
    except TypeError as err:
        raise InvalidInput(f"bad config for pass {name!r}: {err}") from None
