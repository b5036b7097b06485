"""Normalization folded into the graph: the model takes uint8 pixels and normalizes them itself, so the data
path skips the float normalize (and, with NHWC input, the transpose) entirely."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidModel
from turboinfer.core.types import ImagePreprocess, TensorSpec
from turboinfer.optimize.passes.base import Pass, PassContext, Transformed


@dataclass(frozen=True)
class FoldConfig:
    """Layout of the new uint8 input."""

    layout: Literal["NHWC", "NCHW"] = "NHWC"
    """NHWC is what decoders produce: the pipeline then copies pixels with no transpose."""
    SEARCHABLE: ClassVar[tuple[str, ...]] = ("layout",)


class FoldNormalization(Pass):
    """Prepend Cast → (Transpose) → Mul → Add to the graph: x_float = (x_uint8 / 255 − mean) / std.

    A prologue, not weights folded into the first convolution: folding into the weights changes what the
    zero padding at the border means, so it would not compute the same function.
    """

    name: ClassVar[str] = "fold-normalize"
    Config = FoldConfig
    config: FoldConfig

    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Write the model with a normalizing prologue and a uint8 input to folder/model.onnx."""
        spec = card.preprocess
        if not isinstance(spec, ImagePreprocess) or spec.input_dtype != "float32" or spec.layout != "NCHW":
            raise InvalidModel("normalization folding needs an image model with float NCHW input")
        model = onnx.load(str(card.onnx_path))
        graph = model.graph
        image = card.inputs[0]
        inner = f"{image.name}_normalized"
        for node in graph.node:
            node.input[:] = [inner if name == image.name else name for name in node.input]
        scale = 1 / (255 * np.asarray(spec.std, dtype=np.float64))  # per channel: x·scale + shift
        shift = -np.asarray(spec.mean, dtype=np.float64) / np.asarray(spec.std, dtype=np.float64)
        nhwc = self.config.layout == "NHWC"
        shape = (1, 1, 1, 3) if nhwc else (1, 3, 1, 1)  # broadcast over the channel axis of the uint8 input
        graph.initializer.extend([
            numpy_helper.from_array(scale.astype(np.float32).reshape(shape), f"{inner}_scale"),
            numpy_helper.from_array(shift.astype(np.float32).reshape(shape), f"{inner}_shift"),
        ])  # fmt: skip
        prologue = [
            helper.make_node("Cast", [image.name], [f"{inner}_float"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{inner}_float", f"{inner}_scale"], [f"{inner}_scaled"]),
            helper.make_node("Add", [f"{inner}_scaled", f"{inner}_shift"], [f"{inner}_nhwc" if nhwc else inner]),
        ]
        if nhwc:
            prologue.append(helper.make_node("Transpose", [f"{inner}_nhwc"], [inner], perm=[0, 3, 1, 2]))
        batch, channels, height, width = image.shape
        new_shape = (batch, height, width, channels) if nhwc else image.shape
        nodes = [*prologue, *graph.node]
        del graph.node[:]
        graph.node.extend(nodes)
        graph.input.remove(next(v for v in graph.input if v.name == image.name))
        graph.input.insert(0, helper.make_tensor_value_info(image.name, TensorProto.UINT8, list(new_shape)))
        onnx.checker.check_model(model)
        target = folder / "model.onnx"
        onnx.save(model, str(target))
        new_input = TensorSpec(image.name, new_shape, "uint8")
        layout = self.config.layout
        return target, Transformed(
            inputs=(new_input, *card.inputs[1:]), preprocess=replace(spec, input_dtype="uint8", layout=layout)
        )
