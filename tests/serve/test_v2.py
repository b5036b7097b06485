"""The V2 response encoder: JSON data straight from numpy, valid JSON for non-finite values, binary tails."""

import json
import re

import numpy as np
import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.core.types import TensorSpec
from turboinfer.serve.v2.codec import InferRequest, decode_request, encode_response


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


IMAGE = (TensorSpec("image", ("batch", 3, 2, 2), "float32"),)
TOKENS = (TensorSpec("input_ids", ("batch", "sequence"), "int64"),
          TensorSpec("attention_mask", ("batch", "sequence"), "int64"))  # fmt: skip
OUTPUTS = (TensorSpec("logits", ("batch", 10), "float32"),)


def body(**fields) -> bytes:
    entry = {"name": "image", "shape": [1, 3, 2, 2], "datatype": "FP32", "data": [0.5] * 12}
    return json.dumps({"inputs": [{**entry, **fields}]}).encode()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"[1, 2]", "request body must be an object, got array"),
        (b'{"inputs": {"name": "image"}}', "inputs must be an array, got object"),
        (b'{"inputs": ["image"]}', "inputs[0] must be an object, got string"),
        (body(name=["image"]), "inputs[0].name must be a string, got array"),
        (body(name={"a": 1}), "inputs[0].name must be a string, got object"),
        (body(name=None), "inputs[0].name is required"),
        (body(datatype=32), "inputs[0].datatype must be a string, got integer"),
        (body(datatype="FP64"), "datatype must be FP32, got 'FP64'"),
        (body(shape="1,3,2,2"), "inputs[0].shape must be an array, got string"),
        (body(shape=[1, 3, 2, 2.0]), "inputs[0].shape[3] must be an integer, got number"),
        (body(shape=[1, 3, True, 2]), "inputs[0].shape[2] must be an integer, got boolean"),
        (body(shape=[0, 3, 2, 2], data=[]), "dim 0 must be at least 1"),
        (body(shape=[-1, 3, 2, 2]), "dim 0 must be at least 1"),
        (body(data="0.5"), "inputs[0].data must be an array, got string"),
        (body(data=["0.5"] * 12), "must be float32 values, got strings"),
        (body(data=[True] * 12), "got booleans"),
        (body(data=[None] * 12), "not all numbers"),
        (body(data=[[0.5, 0.5], [0.5]]), "evenly nested"),
        (body(data=[{"v": 1}] * 12), "not all numbers"),
        (body(parameters=[1]), "inputs[0].parameters must be an object, got array"),
        (body(parameters={"binary_data_size": "12"}), "binary_data_size must be an integer, got string"),
        (body(parameters={"binary_data_size": -4}), "binary_data_size must be between 0"),
        (json.dumps({"id": 7, "inputs": []}).encode(), "id must be a string, got integer"),
        (json.dumps({"inputs": json.loads(body())["inputs"] * 2}).encode(), "given twice"),
        (json.dumps({**json.loads(body()), "outputs": "logits"}).encode(), "outputs must be an array, got string"),
        (json.dumps({**json.loads(body()), "outputs": [{"name": 3}]}).encode(), "outputs[0].name must be a string"),
        (json.dumps({**json.loads(body()), "parameters": {"binary_data_output": "yes"}}).encode(),
         "parameters.binary_data_output must be a boolean, got string"),
        (b'{"inputs": [' * 3000 + b"]" * 3000 + b"}", "not valid JSON"),
        (b'{"inputs": [{"name": "image", "shape": [1,3,2,2], "datatype": "FP32", "data": [NaN]}]}', "NaN or Infinity"),
    ],
)  # fmt: skip
def test_every_wrong_field_type_is_named_in_a_clear_invalid_input(raw, message):
    with pytest.raises(InvalidInput, match=re.escape(message)):
        decode_request(raw, None, IMAGE, OUTPUTS)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([("input_ids", [1, 8], "INT64", [1] * 8), ("attention_mask", [1, 16], "INT64", [1] * 16)],
         "disagree on dim 'sequence': 8 vs 16"),
        ([("input_ids", [1, 2], "INT64", [1.5, 2]), ("attention_mask", [1, 2], "INT64", [1, 1])],
         "must be int64 values, got fractional numbers"),
        ([("input_ids", [1, 2], "INT64", [1, 2]), ("attention_mask", [2, 1], "INT64", [1, 1])],
         "disagree on dim 'batch'"),
    ],
)  # fmt: skip
def test_inputs_that_share_a_symbolic_dim_must_agree_on_it(entries, message):
    raw = json.dumps({"inputs": [{"name": n, "shape": s, "datatype": d, "data": v} for n, s, d, v in entries]})
    with pytest.raises(InvalidInput, match=re.escape(message)):
        decode_request(raw.encode(), None, TOKENS, OUTPUTS)


def test_uint8_data_outside_its_range_and_trailing_binary_bytes_are_refused():
    spec = (TensorSpec("pixels", ("batch", 2), "uint8"),)
    raw = json.dumps({"inputs": [{"name": "pixels", "shape": [1, 2], "datatype": "UINT8", "data": [0, 256]}]})
    with pytest.raises(InvalidInput, match="outside the range of uint8"):
        decode_request(raw.encode(), None, spec, OUTPUTS)
    head = json.dumps({"inputs": [{"name": "pixels", "shape": [1, 2], "datatype": "UINT8",
                                   "parameters": {"binary_data_size": 2}}]}).encode()  # fmt: skip
    with pytest.raises(InvalidInput, match="1 bytes of binary data follow"):
        decode_request(head + b"\x01\x02\x03", str(len(head)), spec, OUTPUTS)
    decoded = decode_request(head + b"\x01\x02", str(len(head)), spec, OUTPUTS)
    assert decoded.inputs["pixels"].tolist() == [[1, 2]]


def test_nested_row_major_data_decodes_like_flat_data():
    nested = body(data=np.full((1, 3, 2, 2), 0.25).tolist())
    assert np.array_equal(decode_request(nested, None, IMAGE, OUTPUTS).inputs["image"], np.full((1, 3, 2, 2), 0.25))
