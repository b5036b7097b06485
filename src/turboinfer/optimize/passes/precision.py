"""Lower-precision floats. FP16 is a graph conversion (for GPUs: CPUs emulate it slowly); BF16 is not a graph
change but the OpenVINO precision hint, searched as a session option (AMX or AVX512-BF16 CPUs)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import onnx

from turboinfer.core.card import ModelCard
from turboinfer.optimize.passes.base import Pass, PassContext, Transformed


@dataclass(frozen=True)
class Fp16Config:
    """FP16 conversion options."""

    keep_io_types: bool = True
    """Keep float32 inputs and outputs (casts at the edges) so callers need no change."""
    SEARCHABLE: ClassVar[tuple[str, ...]] = ()


class Fp16(Pass):
    """Weights and activations in FP16 (ONNX Runtime's converter), for the CUDA and TensorRT providers."""

    name: ClassVar[str] = "fp16"
    Config = Fp16Config
    config: Fp16Config

    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Write the FP16 model to folder/model.onnx."""
        from onnxruntime.transformers.float16 import convert_float_to_float16

        target = folder / "model.onnx"
        model = convert_float_to_float16(onnx.load(str(card.onnx_path)), keep_io_types=self.config.keep_io_types)
        onnx.save(model, str(target))
        return target, Transformed()
