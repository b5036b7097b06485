"""Observed tensor shapes: run the graph once with every intermediate exposed as an output.

Shape inference cannot resolve graphs whose shapes flow through data (dynamic padding, attention masks);
running the model on real-shaped inputs gives every shape exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from turboinfer.core.errors import InvalidModel

Shapes = dict[str, tuple[tuple[int, ...], int]]
"""Tensor name → (shape, ONNX element type)."""


def observed_shapes(path: Path, feeds: Mapping[str, np.ndarray]) -> tuple[onnx.ModelProto, Shapes]:
    """The model and the shape and element type of every tensor in it, for these inputs."""
    try:
        model = onnx.load(str(path))
    except Exception as err:  # onnx raises DecodeError, OSError, ... for a non-model file
        raise InvalidModel(f"cannot read {path}: {str(err).splitlines()[0]}") from None
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    known = {o.name for o in probe.graph.output}
    for node in probe.graph.node:
        for name in node.output:
            if name and name not in known:
                probe.graph.output.append(onnx.ValueInfoProto(name=name))
                known.add(name)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, dict(feeds))
    shapes: Shapes = {}
    for name, value in [*zip(names, values, strict=True), *feeds.items()]:
        array = np.asarray(value)
        shapes[name] = (tuple(array.shape), onnx.helper.np_dtype_to_tensor_dtype(array.dtype))
    for init in model.graph.initializer:
        shapes[init.name] = (tuple(init.dims), init.data_type)
    return model, shapes
