"""Optimization passes, one table: name → pass class (each with its frozen Config)."""

from __future__ import annotations

from typing import Any

from turboinfer.core.errors import InvalidInput
from turboinfer.optimize.passes.base import Pass
from turboinfer.optimize.passes.fold import FoldConfig, FoldNormalization
from turboinfer.optimize.passes.graph import (
    FusionConfig,
    OnnxSlim,
    OnnxSlimConfig,
    OrtGraph,
    OrtGraphConfig,
    TransformerFusion,
)
from turboinfer.optimize.passes.openvino import ConvertConfig, NncfInt8, NncfInt8Config, OpenVinoConvert
from turboinfer.optimize.passes.precision import Fp16, Fp16Config
from turboinfer.optimize.passes.quantize import DynamicInt8Config, OrtDynamicInt8, OrtStaticInt8, StaticInt8Config

PASSES: dict[str, tuple[type, type]] = {
    OrtGraph.name: (OrtGraph, OrtGraphConfig),
    OnnxSlim.name: (OnnxSlim, OnnxSlimConfig),
    TransformerFusion.name: (TransformerFusion, FusionConfig),
    OrtDynamicInt8.name: (OrtDynamicInt8, DynamicInt8Config),
    OrtStaticInt8.name: (OrtStaticInt8, StaticInt8Config),
    Fp16.name: (Fp16, Fp16Config),
    OpenVinoConvert.name: (OpenVinoConvert, ConvertConfig),
    NncfInt8.name: (NncfInt8, NncfInt8Config),
    FoldNormalization.name: (FoldNormalization, FoldConfig),
}
"""Every pass by name, with its config class."""


def make_pass(name: str, config: dict[str, Any] | None = None) -> Pass:
    """A pass from its name and a JSON config (lists become tuples); InvalidInput for unknown names or fields."""
    if name not in PASSES:
        raise InvalidInput(f"unknown pass {name!r}; known passes: {', '.join(PASSES)}")
    cls, config_cls = PASSES[name]
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in (config or {}).items()}
    try:
        return cls(config_cls(**values))
    except TypeError as err:
        raise InvalidInput(f"bad config for pass {name!r}: {err}") from None
