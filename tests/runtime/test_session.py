import numpy as np
import pytest

from turboinfer.core.errors import InvalidInput, InvalidModel, ModelNotFound
from turboinfer.runtime.session import SessionOptions, open_session

BACKENDS = ["ort", "openvino"]


def reference(x: np.ndarray, path) -> np.ndarray:
    import onnx
    from onnx import numpy_helper

    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    return np.maximum(x @ weights["W"] + weights["b"], 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_compute_the_model(tiny_model, backend):
    session = open_session(tiny_model, backend, SessionOptions(intra_threads=1))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    out = session.run({"x": x})
    assert list(out) == ["y"]
    np.testing.assert_allclose(out["y"], reference(x, tiny_model), rtol=1e-5, atol=1e-6)
    assert session.inputs[0].name == "x"
    assert session.inputs[0].shape[1] == 4
    assert isinstance(session.inputs[0].shape[0], str)
    described = session.describe()
    assert described["backend"] == backend
    assert described["precision"]


def test_openvino_reports_the_precision_it_runs(tiny_model):
    assert open_session(tiny_model, "openvino").describe()["precision"] == "f32"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        ({"z": np.zeros((1, 4), np.float32)}, "expected inputs"),
        ({"x": np.zeros((1, 4), np.float64)}, "must be float32"),
        ({"x": np.zeros((4,), np.float32)}, "must have 2 dims"),
        ({"x": np.zeros((1, 5), np.float32)}, "dim 1 must be 4"),
        ({"x": [[0.0] * 4]}, "numpy array"),
    ],
)
def test_bad_feeds_are_invalid_input(tiny_model, backend, feeds, message):
    session = open_session(tiny_model, backend)
    with pytest.raises(InvalidInput, match=message):
        session.run(feeds)


@pytest.mark.parametrize("backend", BACKENDS)
def test_missing_empty_and_corrupt_model_files(tmp_path, backend):
    with pytest.raises(ModelNotFound, match="nope.onnx"):
        open_session(tmp_path / "nope.onnx", backend)
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(InvalidModel, match="empty"):
        open_session(empty, backend)
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"\x08\x07garbage that is not a protobuf model" * 10)
    with pytest.raises(InvalidModel, match="corrupt.onnx"):
        open_session(corrupt, backend)


def test_unknown_backend_and_provider(tiny_model):
    with pytest.raises(InvalidInput, match="unknown backend"):
        open_session(tiny_model, "tensorflow")
    with pytest.raises(InvalidModel, match="not available"):
        open_session(tiny_model, "ort", SessionOptions(provider="tensorrt"))


def test_executor_options_change_nothing_in_the_answer(tiny_model):
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    want = open_session(tiny_model).run({"x": x})["y"]
    for options in (SessionOptions(memory_arena=False), SessionOptions(spin=True, intra_threads=2)):
        session = open_session(tiny_model, "ort", options)
        np.testing.assert_array_equal(session.run({"x": x})["y"], want)
        assert session.describe()["options"]["memory_arena"] is options.memory_arena


def test_an_openvino_ir_is_refused_by_onnx_runtime_with_the_reason(tmp_path):
    ir = tmp_path / "model.xml"
    ir.write_text("<net/>")
    with pytest.raises(InvalidModel, match="OpenVINO IR: run it on the openvino backend"):
        open_session(ir, "ort")
