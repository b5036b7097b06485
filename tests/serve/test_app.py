"""The server over a real socket: KServe V2 with tritonclient, the image route, health, metrics, bad input."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest
import skimage.data
from PIL import Image

from tests.support.http import TEST_LIMIT, call
from tests.support.images import encode
from turboinfer.models.image_pipeline import ImagePipeline
from turboinfer.models.labels import CAT_CLASSES
from turboinfer.runtime.session import open_session


@pytest.fixture(scope="module")
def cat_jpeg() -> bytes:
    return encode(Image.fromarray(skimage.data.chelsea()), quality=90)


ZEROS = np.zeros((1, 3, 224, 224), np.float32)
BINARY_HEADER = json.dumps({"inputs": [{"name": "image", "shape": [1, 3, 224, 224], "datatype": "FP32",
                                        "parameters": {"binary_data_size": ZEROS.nbytes}}]}).encode()  # fmt: skip
BINARY_TOO_SHORT = BINARY_HEADER + ZEROS.tobytes()[:1000]


def v2_body(array: np.ndarray, request_id: str = "r-1", **extra) -> bytes:
    payload = {"id": request_id, "inputs": [{"name": "image", "shape": list(array.shape), "datatype": "FP32",
                                             "data": array.reshape(-1).tolist()}], **extra}  # fmt: skip
    return json.dumps(payload).encode()


def test_health_and_metadata(served):
    base, _ = served
    assert call(f"{base}/v2/health/live")[0] == 200
    assert json.loads(call(f"{base}/v2/health/ready")[2]) == {"ready": True}
    health = {"ready": True, "models": {"efficientnet-lite0": {"state": "ready", "reason": ""}}}
    assert json.loads(call(f"{base}/health")[2]) == health  # one health surface: a V2 model's state too
    assert "binary_tensor_data" in json.loads(call(f"{base}/v2")[2])["extensions"]
    meta = json.loads(call(f"{base}/v2/models/efficientnet-lite0")[2])
    assert meta["inputs"][0] == {"name": "image", "datatype": "FP32", "shape": [-1, 3, 224, 224]}
    assert call(f"{base}/v2/models/efficientnet-lite0/ready")[0] == 200


@pytest.mark.parametrize("name", ["resnet9000", "..%2F..%2Fetc%2Fpasswd", "a" * 200])
def test_unknown_and_malicious_model_names_are_404_without_paths(served, name):
    base, _ = served
    status, _, body = call(f"{base}/v2/models/{name}/infer", b"{}", {"Content-Type": "application/json"})
    assert status == 404
    message = json.loads(body)["error"]
    assert "/" not in message and "etc" not in message


def test_v2_json_inference_echoes_the_id_and_classifies_a_cat(served, cat_jpeg, effnet):
    base, _ = served
    tensor = ImagePipeline(effnet.preprocess)(cat_jpeg)[None]
    status, _, body = call(f"{base}/v2/models/efficientnet-lite0/infer", v2_body(tensor))
    assert status == 200
    answer = json.loads(body)
    assert answer["id"] == "r-1" and answer["model_name"] == "efficientnet-lite0"
    assert [o["name"] for o in answer["outputs"]] == ["logits", "features"]
    logits = np.array(answer["outputs"][0]["data"]).reshape(answer["outputs"][0]["shape"])
    assert int(logits.argmax()) in CAT_CLASSES
    expected = open_session(effnet.onnx_path).run({"image": tensor})["logits"]
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
    only = json.loads(
        call(f"{base}/v2/models/efficientnet-lite0/infer", v2_body(tensor, outputs=[{"name": "features"}]))[2]
    )
    assert [o["name"] for o in only["outputs"]] == ["features"]


def test_tritonclient_works_unmodified(served, cat_jpeg, effnet):
    import tritonclient.http as triton

    base, _ = served
    client = triton.InferenceServerClient(base.removeprefix("http://"))
    assert client.is_server_live() and client.is_model_ready("efficientnet-lite0")
    batch = np.stack([ImagePipeline(effnet.preprocess)(cat_jpeg)] * 2)
    request = triton.InferInput("image", list(batch.shape), "FP32")
    request.set_data_from_numpy(batch)  # binary tensor extension by default
    result = client.infer("efficientnet-lite0", [request], outputs=[triton.InferRequestedOutput("logits")],
                          request_id="t-7")  # fmt: skip
    logits = result.as_numpy("logits")
    assert logits.shape == (2, 1000)
    assert result.get_response()["id"] == "t-7"
    np.testing.assert_allclose(
        logits, open_session(effnet.onnx_path).run({"image": batch})["logits"], rtol=1e-4, atol=1e-4
    )


def test_image_route(served, cat_jpeg):
    base, _ = served
    status, _, body = call(f"{base}/v1/models/efficientnet-lite0/image", cat_jpeg, {"Content-Type": "image/jpeg"})
    assert status == 200
    assert json.loads(body)["top5"][0]["class"] in CAT_CLASSES


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "message"),
    [
        ("image", b"\xff\xd8\xff\xe0 truncated jpeg", {}, 400, "image"),
        ("image", b"", {}, 400, "0 bytes"),
        ("infer", b"{not json", {}, 400, "not valid JSON"),
        ("infer", b'{"inputs": []}', {}, 400, "non-empty 'inputs'"),
        ("infer", v2_body(np.zeros((1, 3, 224, 225), np.float32)), {}, 400, "dim 3 must be 224"),
        ("infer", v2_body(np.zeros((1, 3, 224), np.float32)), {}, 400, "must have 4 dims"),
        ("infer", v2_body(ZEROS).replace(b"FP32", b"INT64"), {}, 400, "datatype must be FP32"),
        ("infer", v2_body(np.full((1, 3, 224, 224), np.nan, np.float32)), {}, 400, "NaN"),
        ("infer", b'{"inputs": [{"name": "image", "shape": [1, 3, 224, 224], "datatype": "FP32", "data": [1, 2]}]}', {},
         400, "2 values"),
        ("infer", b'{"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]}', {}, 400,
         "unknown input"),
        ("infer", b"{}", {"Inference-Header-Content-Length": "999"}, 400, "outside"),
        ("infer", v2_body(ZEROS, outputs=[{"name": "nope"}]), {}, 400, "unknown output"),
        ("infer", v2_body(ZEROS), {"X-Request-Timeout-Ms": "0"}, 504, "deadline"),
        ("infer", v2_body(ZEROS), {"X-Request-Priority": "high"}, 400, "X-Request-Priority"),
        ("infer", v2_body(ZEROS), {"X-Request-Timeout-Ms": "soon"}, 400, "X-Request-Timeout-Ms"),
        ("infer", b"{}", {"Inference-Header-Content-Length": "two"}, 400, "must be an integer"),
        ("infer", BINARY_TOO_SHORT, {"Inference-Header-Content-Length": str(len(BINARY_HEADER))}, 400,
         "runs past the body"),
    ],
)  # fmt: skip
def test_bad_requests_get_precise_4xx_and_the_server_keeps_serving(
    served, cat_jpeg, path, body, headers, status, message
):
    base, _ = served
    url = (
        f"{base}/v1/models/efficientnet-lite0/image"
        if path == "image"
        else f"{base}/v2/models/efficientnet-lite0/infer"
    )
    got, _, raw = call(url, body, {"Content-Type": "application/json", **headers})
    assert got == status, raw
    assert message in json.loads(raw)["error"]
    assert call(f"{base}/v1/models/efficientnet-lite0/image", cat_jpeg)[0] == 200


def test_body_over_the_limit_is_refused_from_its_declared_length(served):
    base, _ = served
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = (f"POST /v2/models/efficientnet-lite0/infer HTTP/1.1\r\nHost: {host}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {TEST_LIMIT + 1}\r\n\r\n")  # fmt: skip
        sock.sendall(head.encode() + b"{")
        reply = sock.recv(65536).decode(errors="replace")
    assert reply.startswith("HTTP/1.1 413") and "limit" in reply


def test_slow_body_is_cut_off_with_408_and_others_are_served_meanwhile(served, cat_jpeg):
    base, _ = served
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = (f"POST /v2/models/efficientnet-lite0/infer HTTP/1.1\r\nHost: {host}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n")  # fmt: skip
        sock.sendall(head.encode() + b'{"inp')  # ...and then nothing more
        assert call(f"{base}/v1/models/efficientnet-lite0/image", cat_jpeg)[0] == 200
        reply = sock.recv(65536).decode(errors="replace")
    assert reply.startswith("HTTP/1.1 408") and "took longer than 1 s" in reply


def test_body_at_the_limit_is_read_not_refused(served):
    base, _ = served
    status, _, raw = call(f"{base}/v2/models/efficientnet-lite0/infer", b" " * TEST_LIMIT)
    assert status == 400 and "not valid JSON" in json.loads(raw)["error"]  # read in full, then judged


def test_metrics_count_outcomes_and_batches(served, cat_jpeg):
    base, _ = served
    call(f"{base}/v1/models/efficientnet-lite0/image", cat_jpeg)
    text = call(f"{base}/metrics")[2].decode()
    assert 'turboinfer_requests_total{model="efficientnet-lite0",outcome="ok"}' in text
    assert 'turboinfer_requests_total{model="efficientnet-lite0",outcome="invalid"}' in text
    assert "turboinfer_batch_size_bucket" in text and "turboinfer_queue_duration_seconds_bucket" in text
    assert 'turboinfer_batches_total{model="efficientnet-lite0",reason="delay"}' in text
    assert "turboinfer_inference_count_total" in text and "turboinfer_execution_count_total" in text


def test_openapi_lists_every_route(served):
    base, _ = served
    document = json.loads(call(f"{base}/openapi.json")[2])
    assert document["openapi"].startswith("3.")
    for path in ("/v2/health/ready", "/v2/models/{name}/infer", "/v1/models/{name}/image", "/metrics"):
        assert path in document["paths"]
