import numpy as np
import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.runtime.profiling import node_runs
from turboinfer.runtime.session import SessionOptions
from turboinfer.runtime.shapes import observed_shapes


@pytest.mark.parametrize("backend", ["ort", "openvino"])
def test_node_runs_time_every_executed_node(tiny_model, backend):
    runs = node_runs(tiny_model, backend, SessionOptions(intra_threads=1), {"x": np.ones((8, 4), np.float32)}, runs=3)
    assert runs and all(r.seconds >= 0 for r in runs)
    if backend == "ort":
        assert any(r.output_shapes == ((8, 3),) for r in runs)


def test_unsupported_backend(tiny_model):
    with pytest.raises(InvalidInput, match="ort and openvino"):
        node_runs(tiny_model, "torch", SessionOptions(), {}, runs=1)


def test_observed_shapes_cover_every_tensor(tiny_model):
    model, shapes = observed_shapes(tiny_model, {"x": np.ones((5, 4), np.float32)})
    assert shapes["x"][0] == (5, 4)
    assert shapes["xw"][0] == (5, 3) and shapes["y"][0] == (5, 3)
    assert shapes["W"][0] == (4, 3)
    assert len(model.graph.node) == 3
