"""INT8 with ONNX Runtime's quantization tools: dynamic (weights only, activations at run time) and static QDQ
calibrated on real inputs."""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import onnx

from turboinfer.core.card import ModelCard
from turboinfer.optimize.passes.base import Feeds, Pass, PassContext, Transformed
from turboinfer.optimize.passes.graph import node_count

QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")
MISSING_DB = 100.0
"""SQNR assumed for a tensor with no quantized counterpart (exact), dB."""
FUSED_ACTIVATIONS = ("Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "LeakyRelu")
CALIBRATION_BATCH = 16
"""Calibration inputs per ORT calibration step; with the context's cap this bounds calibration memory."""


def quant_type(name: str) -> Any:
    """onnxruntime's QuantType for "int8" / "uint8"."""
    from onnxruntime.quantization import QuantType

    return QuantType.QInt8 if name == "int8" else QuantType.QUInt8


def prepared(card: ModelCard, folder: Path) -> Path:
    """ORT's recommended pre-processing (shape inference and graph clean-up) before quantization."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    target = folder / "prepared.onnx"
    quant_pre_process(str(card.onnx_path), str(target), skip_symbolic_shape=True)  # ORT's symbolic pass fails on MiniLM
    return target


@dataclass(frozen=True)
class DynamicInt8Config:
    """Dynamic quantization options. Convolutions are left out by default: ConvInteger is slow on CPUs."""

    per_channel: bool = False
    reduce_range: bool = False
    weight_type: Literal["int8", "uint8"] = "int8"
    op_types: tuple[str, ...] = ("MatMul", "Gemm", "Attention")
    SEARCHABLE: ClassVar[tuple[str, ...]] = ("per_channel",)


class OrtDynamicInt8(Pass):
    """INT8 weights; activations quantized per call from their observed range (no calibration)."""

    name: ClassVar[str] = "ort-int8-dynamic"
    Config = DynamicInt8Config
    config: DynamicInt8Config

    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Write the quantized model to folder/model.onnx."""
        from onnxruntime.quantization import quantize_dynamic

        c, target = self.config, folder / "model.onnx"
        quantize_dynamic(
            prepared(card, folder), target, op_types_to_quantize=list(c.op_types), per_channel=c.per_channel,
            reduce_range=c.reduce_range, weight_type=quant_type(c.weight_type),
        )  # fmt: skip
        (folder / "prepared.onnx").unlink()
        return target, Transformed(facts={"nodes": node_count(target)})


class FeedsReader:
    """An ORT CalibrationDataReader over an iterator of feeds."""

    def __init__(self, batches: Iterator[Feeds]) -> None:
        self._batches = batches

    def get_next(self) -> Feeds | None:
        """The next calibration batch, or None at the end."""
        return next(self._batches, None)

    def __iter__(self) -> Iterator[Feeds]:
        """The remaining batches (qdq_loss_debug iterates its reader)."""
        return self._batches


@dataclass(frozen=True)
class StaticInt8Config:
    """Static QDQ quantization options (ORT's names in brackets)."""

    per_channel: bool = True
    calibration: Literal["minmax", "entropy", "percentile"] = "minmax"
    """How activation ranges are chosen from the calibration inputs (calibrate_method)."""
    percentile: float = 99.999
    activation_type: Literal["int8", "uint8"] = "uint8"
    weight_type: Literal["int8", "uint8"] = "int8"
    reduce_range: bool = False
    """7-bit weights: avoids the u8×s8 saturation of CPUs without VNNI, at some accuracy cost."""
    exclude_nodes: tuple[str, ...] = ()
    """Nodes kept in float (nodes_to_exclude); the culprit finder fills this."""
    op_types: tuple[str, ...] = ()
    """Only these operator types are quantized (op_types_to_quantize); empty = all that ORT can."""
    SEARCHABLE: ClassVar[tuple[str, ...]] = ("per_channel", "calibration", "activation_type")


class OrtStaticInt8(Pass):
    """INT8 weights and activations in QDQ form, activation ranges calibrated on real inputs."""

    name: ClassVar[str] = "ort-int8-static"
    uses_calibration: ClassVar[bool] = True
    Config = StaticInt8Config
    config: StaticInt8Config

    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Calibrate on the context's calibration inputs and write the QDQ model to folder/model.onnx."""
        from onnxruntime.quantization import CalibrationMethod, QuantFormat, quantize_static

        c, target = self.config, folder / "model.onnx"
        batch = card.inputs[0].shape[0]
        reader = FeedsReader(context.calibration_batches(card, batch if isinstance(batch, int) else CALIBRATION_BATCH))
        methods = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
                   "percentile": CalibrationMethod.Percentile}  # fmt: skip
        with contextlib.redirect_stdout(io.StringIO()):  # ORT prints calibration progress to stdout
            quantize_static(
                prepared(card, folder), target, reader, quant_format=QuantFormat.QDQ,
                op_types_to_quantize=list(c.op_types) or None, per_channel=c.per_channel, reduce_range=c.reduce_range,
                activation_type=quant_type(c.activation_type), weight_type=quant_type(c.weight_type),
                nodes_to_exclude=list(c.exclude_nodes), calibrate_method=methods[c.calibration],
                extra_options={"CalibPercentile": c.percentile},
            )  # fmt: skip
        (folder / "prepared.onnx").unlink()
        return target, Transformed(facts={"nodes": node_count(target), "excluded": list(c.exclude_nodes)})


@dataclass(frozen=True)
class NodeLoss:
    """A quantized node, the SQNR (dB) lost across it, and the nodes to exclude to keep it in float."""

    name: str
    loss_db: float
    group: tuple[str, ...]
    """The node and the quantized nodes feeding it: ORT quantizes a quantized node's output for its consumers,
    so a node reads float inputs only when their producers are excluded too."""


def rank_nodes(float_card: ModelCard, qdq_card: ModelCard, batches: list[Feeds]) -> list[NodeLoss]:
    """Quantized nodes, worst first, with the signal-to-quantization-noise (dB) each loses between its inputs and
    its output when the float and the QDQ model run the same calibration inputs (qdq_loss_debug). Keeping every
    ranked node in float gives back the float model, so a search over the ranking always ends inside it."""
    from onnxruntime.quantization.qdq_loss_debug import (
        collect_activations,
        compute_activation_error,
        create_activation_matching,
        modify_model_output_intermediate_tensors,
    )

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        float_path = prepared(float_card, folder)  # the graph the quantizer saw: same node names
        modify_model_output_intermediate_tensors(str(float_path), str(folder / "float_aug.onnx"))
        modify_model_output_intermediate_tensors(str(qdq_card.onnx_path), str(folder / "qdq_aug.onnx"))
        float_acts = collect_activations(str(folder / "float_aug.onnx"), FeedsReader(iter(batches)))
        qdq_acts = collect_activations(str(folder / "qdq_aug.onnx"), FeedsReader(iter(batches)))
        float_nodes = list(onnx.load(str(float_path), load_external_data=False).graph.node)
    errors = compute_activation_error(create_activation_matching(qdq_acts, float_acts))
    sqnr = {name: float(e["xmodel_err"]) for name, e in errors.items() if "xmodel_err" in e}
    quantized = quantized_nodes(onnx.load(str(qdq_card.onnx_path), load_external_data=False).graph)
    consumers: dict[str, list[onnx.NodeProto]] = {}
    producers = {output: node for node in float_nodes for output in node.output}
    for node in float_nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    scores = []
    for node in float_nodes:
        output = quantized_output(node.output[0], sqnr, consumers)
        if node.name not in quantized or output is None:
            continue
        before = min((sqnr[name] for name in node.input if name in sqnr), default=MISSING_DB)
        feeding = (compute_producer(name, producers) for name in node.input)
        group = (node.name, *sorted({p.name for p in feeding if p is not None and p.name in quantized}))
        scores.append(NodeLoss(node.name, before - sqnr[output], group))
    return sorted(scores, key=lambda item: -item.loss_db)


def quantized_nodes(graph: onnx.GraphProto) -> set[str]:
    """Names of the nodes of a QDQ graph that read at least one dequantized tensor (excluding the Q/DQ nodes)."""
    dequantized = {out for n in graph.node if n.op_type == "DequantizeLinear" for out in n.output}
    return {n.name for n in graph.node if n.op_type not in QDQ_OPS and dequantized & set(n.input)}


def compute_producer(tensor: str, producers: dict[str, onnx.NodeProto]) -> onnx.NodeProto | None:
    """The node behind tensor, looking through one-input activations (Relu, Clip, …)."""
    node = producers.get(tensor)
    while node is not None and node.op_type in FUSED_ACTIVATIONS:
        node = producers.get(node.input[0])
    return node


def quantized_output(tensor: str, sqnr: dict[str, float], consumers: dict[str, list[onnx.NodeProto]]) -> str | None:
    """The first tensor from `tensor` on that the quantizer measured: it skips one-consumer activations (a Conv
    followed by Relu/Clip is quantized after the activation)."""
    while tensor not in sqnr:
        following = consumers.get(tensor, [])
        if len(following) != 1 or following[0].op_type not in FUSED_ACTIVATIONS:
            return None
        tensor = following[0].output[0]
    return tensor
