"""OpenVINO passes: conversion to OpenVINO IR, and NNCF INT8 post-training quantization (plain or with NNCF's
accuracy control driven by our own fidelity metric). The IR (model.xml + model.bin) runs on the openvino backend."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidModel
from turboinfer.optimize.passes.base import Feeds, Pass, PassContext, Transformed
from turboinfer.runtime.openvino import import_openvino


def read_model(card: ModelCard) -> Any:
    """The card's model (ONNX or IR) as an openvino.Model."""
    ov = import_openvino()
    return ov.Core().read_model(str(card.onnx_path))


@dataclass(frozen=True)
class ConvertConfig:
    """OpenVINO conversion options."""

    compress_to_fp16: bool = False
    """Store weights as FP16 (half the file; the CPU plugin still computes in its inference precision)."""
    SEARCHABLE: ClassVar[tuple[str, ...]] = ()


class OpenVinoConvert(Pass):
    """ONNX → OpenVINO IR, so later loads skip the ONNX frontend."""

    name: ClassVar[str] = "openvino-ir"
    Config = ConvertConfig
    config: ConvertConfig

    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Write folder/model.xml (+ .bin)."""
        ov = import_openvino()
        target = folder / "model.xml"
        ov.save_model(read_model(card), str(target), compress_to_fp16=self.config.compress_to_fp16)
        return target, Transformed()


@dataclass(frozen=True)
class NncfInt8Config:
    """NNCF post-training quantization options (NNCF's names)."""

    preset: Literal["performance", "mixed"] = "performance"
    """performance: symmetric activations (fastest); mixed: asymmetric activations (more accurate)."""
    subset_size: int = 300
    """Calibration inputs NNCF uses at most."""
    fast_bias_correction: bool = True
    overflow_fix: Literal["disable", "enable", "first_layer_only"] = "disable"
    """7-bit weights against u8×s8 saturation: needed on CPUs without VNNI/AMX only."""
    accuracy_control: bool = False
    """Let NNCF return layers to float until our metric on the tuning split is within max_drop."""
    max_drop: float = 0.01
    max_iterations: int = 6
    """Accuracy-control rounds at most (each re-evaluates the tuning split)."""
    ranking_subset: int = 32
    """Tuning inputs NNCF ranks the quantized layers on (ranking dominates accuracy control's time)."""
    SEARCHABLE: ClassVar[tuple[str, ...]] = ("preset", "accuracy_control")


class NncfInt8(Pass):
    """INT8 with NNCF on an OpenVINO model, calibrated on real inputs."""

    name: ClassVar[str] = "nncf-int8"
    uses_calibration: ClassVar[bool] = True
    Config = NncfInt8Config
    config: NncfInt8Config

    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Quantize and write folder/model.xml (+ .bin)."""
        import nncf
        from nncf.quantization.advanced_parameters import (
            AdvancedAccuracyRestorerParameters,
            AdvancedQuantizationParameters,
            OverflowFix,
        )

        ov, c = import_openvino(), self.config
        nncf.set_log_level(logging.WARNING)  # its INFO lines would interleave with our progress bar
        calibration = [feeds for feeds in context.calibration_batches(card, 1)]
        common: dict[str, Any] = {
            "preset": nncf.QuantizationPreset(c.preset),
            "subset_size": min(c.subset_size, len(calibration)),
            "fast_bias_correction": c.fast_bias_correction,
            "model_type": nncf.ModelType.TRANSFORMER if card.task == "embed" else None,
        }
        advanced = AdvancedQuantizationParameters(overflow_fix=OverflowFix(c.overflow_fix))
        facts: dict[str, Any] = {}
        with contextlib.redirect_stdout(io.StringIO()):  # NNCF draws progress bars on stdout
            if c.accuracy_control:
                if context.tuning is None or context.item_score is None:
                    raise InvalidModel("NNCF accuracy control needs tuning inputs and a metric")
                items = list(enumerate(context.tuning(card)))
                quantized = nncf.quantize_with_accuracy_control(
                    read_model(card), nncf.Dataset(calibration), nncf.Dataset(items, lambda item: item[1]),
                    validation_fn(context.item_score), max_drop=c.max_drop, advanced_quantization_parameters=advanced,
                    advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(
                        max_num_iterations=c.max_iterations, ranking_subset_size=min(c.ranking_subset, len(items))
                    ), **common,
                )  # fmt: skip
                facts["tuning_items"] = len(items)
            else:
                quantized = nncf.quantize(
                    read_model(card), nncf.Dataset(calibration), advanced_parameters=advanced, **common
                )
        target = folder / "model.xml"
        ov.save_model(quantized, str(target), compress_to_fp16=False)
        return target, Transformed(facts=facts)


def validation_fn(score: Callable[[int, Feeds], float]) -> Any:
    """NNCF's validation function: our per-item fidelity to the original over (index, feeds) items."""

    def validate(compiled: Any, items: Any) -> tuple[float, list[float]]:
        values = [score(index, outputs_by_name(compiled, feeds)) for index, feeds in items]
        return float(np.mean(values)), values

    return validate


def outputs_by_name(compiled: Any, feeds: Feeds) -> Feeds:
    """Run an OpenVINO compiled model and key its outputs by tensor name."""
    results = compiled(feeds)
    return {port.get_any_name(): np.asarray(results[port]) for port in compiled.outputs}
