"""What a model's graph says about its inputs beyond their specs: the integer inputs that index a table, and how
large the table is (token ids into an embedding), so that a server can refuse an out-of-range id as a client
mistake instead of failing inside the engine."""

from __future__ import annotations

from pathlib import Path

import onnx

from turboinfer.core.errors import InvalidModel

TABLE_INPUTS = {"Gather": ((1, 0),), "EmbedLayerNormalization": ((0, 2), (1, 4))}
"""Op type → (index input, table input) pairs: Gather(data, indices); ORT's fused embedding (input_ids,
segment_ids, word_embedding, position_embedding, segment_embedding, ...)."""


def load_graph(path: Path) -> onnx.ModelProto:
    """The ONNX model at path without its external weights; InvalidModel when it is not one."""
    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as err:  # onnx raises DecodeError, OSError, ... for non-ONNX bytes
        raise InvalidModel(f"{path} is not a readable ONNX model: {str(err).splitlines()[0]}") from None


def index_limits(model: onnx.ModelProto) -> dict[str, int]:
    """Integer graph inputs used directly as indices into a constant table → the table's size (valid: 0..size-1)."""
    graph = model.graph
    tables = {init.name: tuple(init.dims) for init in graph.initializer}
    inputs = {v.name for v in graph.input if v.name not in tables}
    limits: dict[str, int] = {}
    for node in graph.node:
        for index, table in TABLE_INPUTS.get(node.op_type, ()):
            if len(node.input) <= max(index, table) or node.input[index] not in inputs:
                continue
            dims = tables.get(node.input[table])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0) if node.op_type == "Gather" else 0
            if dims and -len(dims) <= axis < len(dims):
                size = dims[axis]
                limits[node.input[index]] = min(size, limits.get(node.input[index], size))
    return limits
