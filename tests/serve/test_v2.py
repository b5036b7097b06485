"""The V2 response encoder: JSON data straight from numpy, valid JSON for non-finite values, binary tails."""

import json

import numpy as np

from turboinfer.serve.v2 import InferRequest, encode_response


def test_json_outputs_are_valid_json_with_the_tensor_values():
    request = InferRequest("r1", {}, None, frozenset())
    results = {"logits": np.array([[0.5, np.nan, -np.inf]], np.float32), "ids": np.array([[3, 4]], np.int64)}
    body, headers = encode_response("m", "1", request, results)
    assert headers == {"Content-Type": "application/json"}
    answer = json.loads(body)  # strict JSON: non-finite floats are null, never the invalid NaN/Infinity
    assert answer["id"] == "r1" and answer["model_name"] == "m"
    logits, ids = answer["outputs"]
    assert logits == {"name": "logits", "datatype": "FP32", "shape": [1, 3], "data": [0.5, None, None]}
    assert ids["data"] == [3, 4] and ids["datatype"] == "INT64"


def test_binary_outputs_follow_the_json_header():
    request = InferRequest(None, {}, ("features",), frozenset({"features"}))
    features = np.arange(6, dtype=np.float32).reshape(2, 3)
    body, headers = encode_response("m", "1", request, {"features": features, "logits": np.zeros((2, 4))})
    head = int(headers["Inference-Header-Content-Length"])
    answer = json.loads(body[:head])
    assert [o["name"] for o in answer["outputs"]] == ["features"]
    assert np.array_equal(np.frombuffer(body[head:], np.float32).reshape(2, 3), features)
