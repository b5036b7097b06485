"""The worker on real sessions: dynamic-batch models in one run, fixed-batch models padded and split."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from turboinfer.runtime.session import open_session
from turboinfer.serve.v2.worker import ModelWorker


def fixed_batch_model(path, batch: int):
    """y = x @ W with x fixed at [batch, 4]."""
    weight = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])],
        "fixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])],
        initializer=[weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_fixed_batch_model_is_padded_and_split(tmp_path):
    session = open_session(fixed_batch_model(tmp_path / "fixed.onnx", 4))
    worker = ModelWorker(session)
    assert worker.fixed_batch == 4
    rng = np.random.default_rng(0)
    items = [{"x": rng.standard_normal((rows, 4)).astype(np.float32)} for rows in (1, 3, 6)]  # 10 rows: 4 + 4 + 2
    outputs = worker.infer(items)
    weight = np.arange(12, dtype=np.float32).reshape(4, 3)
    for item, out in zip(items, outputs, strict=True):
        np.testing.assert_allclose(out["y"], item["x"] @ weight, rtol=1e-5)
    worker.close()


def test_dynamic_batch_model_runs_once(tiny_model):
    worker = ModelWorker(open_session(tiny_model))
    assert worker.fixed_batch is None
    outputs = worker.infer([{"x": np.ones((2, 4), np.float32)}, {"x": np.zeros((1, 4), np.float32)}])
    assert [o["y"].shape for o in outputs] == [(2, 3), (1, 3)]
    worker.close()
