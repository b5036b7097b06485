"""Roofline: FLOPs and bytes of every node from the ONNX graph with inferred shapes, placed against the
machine's measured ceilings (Williams, Waterman & Patterson, "Roofline", CACM 2009)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import onnx

ELEMENTWISE = {
    "Add", "Sub", "Mul", "Div", "Relu", "Clip", "Sigmoid", "Tanh", "Erf", "Sqrt", "Pow", "HardSigmoid",
    "HardSwish", "Exp", "Neg", "Where", "Max", "Min", "Cast", "Equal", "Not", "Less", "Greater", "Abs",
    "LeakyRelu", "Gelu", "Reciprocal", "Floor", "Ceil", "Mod", "And", "Or", "GreaterOrEqual", "LessOrEqual",
    "IsNaN", "IsInf",
}  # fmt: skip
"""One FLOP per output element."""
PER_ELEMENT = {"BatchNormalization": 2, "Softmax": 5, "LayerNormalization": 8, "InstanceNormalization": 8}
"""FLOPs per output element for normalizations (scale+shift; max, sub, exp, sum, div; mean, var, ...)."""
DATA_MOVEMENT = {
    "Reshape", "Transpose", "Concat", "Gather", "Slice", "Unsqueeze", "Squeeze", "Flatten", "Expand", "Pad",
    "Identity", "Split", "Tile",
}  # fmt: skip
"""No arithmetic, only bytes."""
FREE = {"Shape", "Constant", "ConstantOfShape", "Range", "Size"}
"""Shape bookkeeping: neither FLOPs nor tensor traffic worth counting."""
BYTES = {1: 4, 2: 1, 3: 1, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 16: 2}
"""Bytes per element by ONNX TensorProto data type (float, uint8, int8, uint16, int32, int64, bool, f16, f64, bf16)."""
Shape = tuple[int, ...]


@dataclass(frozen=True)
class NodeCost:
    """Arithmetic and memory traffic of one node for one inference."""

    name: str
    op_type: str
    flops: float | None
    """None when the op is not modelled (counted as unknown, never guessed)."""
    bytes: float
    """Inputs (weights included) read once plus outputs written once, bytes."""

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity, FLOP/byte."""
        return None if self.flops is None or self.bytes == 0 else self.flops / self.bytes


def op_flops(
    op_type: str, inputs: Sequence[Shape | None], outputs: Sequence[Shape | None], kernel: Shape | None = None
) -> float | None:
    """FLOPs of one op from its tensor shapes (a multiply-add counts 2); None when not modelled or unknown.

    Conv: 2 · output elements · (C/groups · kh · kw), read off the weight's shape [M, C/groups, kh, kw], so
    grouped and depthwise convolutions need no attribute. MatMul/Gemm: 2 · output elements · K.
    """
    if op_type in FREE or op_type in DATA_MOVEMENT or op_type.startswith("Reorder"):
        return 0.0
    out = outputs[0] if outputs else None
    if out is None:
        return None
    out_elems = prod(out)
    first = inputs[0] if inputs else None
    if op_type in ("Conv", "FusedConv"):
        weight = inputs[1] if len(inputs) > 1 else None
        if weight is None or len(weight) < 3:
            return None
        return 2.0 * out_elems * prod(weight[1:]) + (out_elems if len(inputs) > 2 else 0)
    if op_type in ("MatMul", "Gemm", "FusedMatMul", "FusedGemm"):
        return None if first is None else 2.0 * out_elems * first[-1]
    if op_type in ELEMENTWISE:
        return float(out_elems)
    if op_type in PER_ELEMENT:
        return float(PER_ELEMENT[op_type] * out_elems)
    if op_type in ("GlobalAveragePool", "ReduceMean", "ReduceSum", "GlobalMaxPool", "ReduceMax", "ReduceL2"):
        return None if first is None else float(prod(first))
    if op_type in ("AveragePool", "MaxPool"):
        return None if kernel is None else float(out_elems * prod(kernel))
    return None


def node_flops(node: onnx.NodeProto, shapes: dict[str, tuple[Shape, int]]) -> float | None:
    """FLOPs of a graph node, from the inferred shapes of its tensors."""

    def shape(name: str) -> Shape | None:
        return shapes[name][0] if name in shapes else None

    transposed = node.op_type == "Gemm" and any(a.name == "transA" and a.i for a in node.attribute)
    inputs = [shape(n) for n in node.input]
    if transposed and inputs and inputs[0] is not None:
        inputs[0] = (*inputs[0][:-2], inputs[0][-1], inputs[0][-2])
    kernel = next((tuple(a.ints) for a in node.attribute if a.name == "kernel_shape"), None)
    return op_flops(node.op_type, inputs, [shape(n) for n in node.output], kernel)


def node_bytes(node: onnx.NodeProto, shapes: dict[str, tuple[Shape, int]]) -> float:
    """Bytes read and written by a node, each known tensor counted once."""
    if node.op_type in FREE:
        return 0.0
    total = 0.0
    for name in [*node.input, *node.output]:
        if name in shapes:
            dims, elem_type = shapes[name]
            total += prod(dims) * BYTES.get(elem_type, 4)
    return total


def graph_costs(model: onnx.ModelProto, shapes: dict[str, tuple[Shape, int]]) -> list[NodeCost]:
    """Cost of every node of a graph, given the shape of every tensor (runtime.shapes.observed_shapes)."""
    return [
        NodeCost(node.name or f"{node.op_type}_{i}", node.op_type, node_flops(node, shapes), node_bytes(node, shapes))
        for i, node in enumerate(model.graph.node)
    ]


@dataclass(frozen=True)
class Ceilings:
    """The machine's measured ceilings the roofline is drawn with."""

    peak_gflops: float
    bandwidth_gbps: float
    int8_gops: float | None = None
    """Measured INT8 GEMM throughput, when measured: the roof an INT8 model would run under."""

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the memory roof meets the compute roof."""
        return self.peak_gflops / self.bandwidth_gbps


@dataclass(frozen=True)
class RooflinePoint:
    """One node (or the whole model) on the roofline, with the share of its ceiling it reached."""

    name: str
    op_type: str
    flops: float
    bytes: float
    seconds: float | None
    bound: str
    """"compute" or "memory": which roof sits above this intensity."""
    attained_gflops: float | None
    ceiling_gflops: float
    """min(peak, intensity × bandwidth): the most this node could reach here."""

    @property
    def intensity(self) -> float | None:
        """FLOP per byte (None when no bytes were counted)."""
        return self.flops / self.bytes if self.bytes else None

    @property
    def share_of_ceiling(self) -> float | None:
        """Attained / ceiling (1.0 = on the roof)."""
        return None if self.attained_gflops is None else self.attained_gflops / self.ceiling_gflops

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**self.__dict__, "intensity": self.intensity, "share_of_ceiling": self.share_of_ceiling}


def place(
    name: str, op_type: str, flops: float, nbytes: float, seconds: float | None, ceilings: Ceilings
) -> RooflinePoint:
    """A point on the roofline; attained throughput only when a measured time is given."""
    intensity = flops / nbytes if nbytes else float("inf")
    ceiling = min(ceilings.peak_gflops, intensity * ceilings.bandwidth_gbps)
    attained = flops / seconds / 1e9 if seconds else None
    bound = "compute" if intensity >= ceilings.ridge else "memory"
    return RooflinePoint(name, op_type, flops, nbytes, seconds, bound, attained, ceiling)
