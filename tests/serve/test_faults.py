"""Faults contained, over real sockets: an engine error fails only the requests it hit (500 JSON with a request id,
counted as errors), a client that leaves before its batch runs is skipped, readiness follows whether the session
can run, the model repository is listed for Triton tooling, logs are one structured line per request."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import tritonclient.http as triton
from onnx import TensorProto, helper, numpy_helper

from tests.support.http import call, free_port, metric, running, wait_ready
from turboinfer.models.variant import parse_variant
from turboinfer.runtime.session import Session
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.run import build_server
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import ModelServing


def save(path: Path, nodes: list, inputs: list, outputs: list, initializers: list) -> Path:
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def lookup_model(path: Path) -> Path:
    """ids [batch, 4] int64 → mean of rows of an 8×3 table. Its table comes through an Identity, so no validator
    can bound the ids: an id ≥ 8 is a real ONNX Runtime failure (Gather out of bounds) inside a batch."""
    table = numpy_helper.from_array(np.arange(24, dtype=np.float32).reshape(8, 3), "table")
    nodes = [helper.make_node("Identity", ["table"], ["rows"]), helper.make_node("Gather", ["rows", "ids"], ["g"]),
             helper.make_node("ReduceMean", ["g"], ["y"], axes=[1], keepdims=0)]  # fmt: skip
    return save(path, nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 4])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], [table])  # fmt: skip


def slow_model(path: Path, layers: int = 150) -> Path:
    """x [batch, 1024] → `layers` chained 1024×1024 MatMuls (one shared weight): ~0.3 GFLOP per row."""
    weight = numpy_helper.from_array((np.eye(1024) * 0.999).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i}", "w"], [f"h{i + 1}"]) for i in range(layers)]
    nodes.append(helper.make_node("Identity", [f"h{layers}"], ["y"]))
    return save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1024])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1024])], [weight])  # fmt: skip


def ids_body(ids: list[int]) -> bytes:
    return json.dumps({"inputs": [{"name": "ids", "shape": [1, 4], "datatype": "INT64", "data": ids}]}).encode()


def serve(path: Path, settings, batching: BatcherConfig, wrap=None, **config):
    variant = parse_variant(str(path), settings)
    server = build_server([ModelServing(variant, batching)], ServeConfig(batching, **config))
    if wrap is not None:
        v2 = server.frontends["v2"]
        card, session = v2._sources[variant.card.name]
        v2._sources[variant.card.name] = (card, wrap(session))
    return server


def test_an_engine_error_fails_only_the_request_it_hit(tmp_path, settings):
    server = serve(lookup_model(tmp_path / "lookup.onnx"), settings, BatcherConfig(max_batch=8, max_delay_s=0.05))
    bodies = [ids_body([0, 1, 2, 3]), ids_body([4, 5, 6, 99]), ids_body([7, 7, 7, 7]), ids_body([1, 1, 1, 1])]
    with running(server) as base, ThreadPoolExecutor(4) as pool:
        url = f"{base}/v2/models/lookup/infer"
        answers = list(pool.map(lambda b: call(url, b, {"X-Request-Id": "req-42"}), bodies))
        after = call(url, ids_body([2, 2, 2, 2]))
        text = call(f"{base}/metrics")[2].decode()
    assert [a[0] for a in answers] == [200, 500, 200, 200] and after[0] == 200
    failed = json.loads(answers[1][2])
    assert failed["request_id"] == "req-42" and "internal error" in failed["error"]
    assert "Gather" not in failed["error"]  # no internals in the answer; the log has them
    assert json.loads(answers[0][2])["outputs"][0]["data"] == [4.5, 5.5, 6.5]
    assert metric(text, 'turboinfer_requests_total{model="lookup",outcome="error"}') == 1
    assert metric(text, 'turboinfer_engine_failures_total{model="lookup"}') == 1
    assert metric(text, 'turboinfer_execution_count_total{model="lookup"}') >= 2  # shared a batch, then isolated


class Faulty:
    """Fault injection over a real session: raises `fault` while it is set (what a lost device looks like)."""

    def __init__(self, session: Session) -> None:
        self.session, self.fault = session, None
        self.backend, self.inputs, self.outputs = session.backend, session.inputs, session.outputs

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.fault is not None:
            raise self.fault
        return self.session.run(feeds)

    def describe(self) -> dict[str, Any]:
        return self.session.describe()


def test_readiness_goes_false_while_the_session_cannot_run_and_comes_back(tiny_model, settings):
    wrapped: list[Faulty] = []

    def wrap(session: Session) -> Faulty:
        wrapped.append(Faulty(session))
        return wrapped[0]

    server = serve(tiny_model, settings, BatcherConfig(max_batch=1, max_delay_s=0.0), wrap, health_interval_s=0.05)
    body = json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]})
    with running(server) as base:
        url = f"{base}/v2/models/tiny/infer"
        wrapped[0].fault = KeyError("a stray KeyError inside inference")
        status, _, raw = call(url, body.encode())
        assert status == 500 and "KeyError" in json.loads(raw)["error"]  # not 404 "unknown model"
        deadline = time.monotonic() + 10
        while call(f"{base}/v2/health/ready")[0] != 503:
            assert time.monotonic() < deadline, "readiness never went false"
            time.sleep(0.02)
        assert call(f"{base}/v2/models/tiny/ready")[0] == 503
        index = json.loads(call(f"{base}/v2/repository/index", b"")[2])
        assert index[0]["state"] == "UNAVAILABLE" and "cannot run" in index[0]["reason"]
        assert call(f"{base}/v2/health/live")[0] == 200  # alive: restarting would not help a lost device
        wrapped[0].fault = None
        while call(f"{base}/v2/health/ready")[0] != 200:
            assert time.monotonic() < deadline + 10, "readiness never came back"
            time.sleep(0.02)
        assert call(url, body.encode())[0] == 200


def test_a_client_that_leaves_before_its_batch_runs_is_skipped(tmp_path, settings):
    server = serve(slow_model(tmp_path / "slow.onnx"), settings, BatcherConfig(max_batch=1, max_delay_s=0.0))
    rows = 256  # ~80 GFLOP: the first request holds the worker for a second or so
    busy = json.dumps({"inputs": [{"name": "x", "shape": [rows, 1024], "datatype": "FP32",
                                   "parameters": {"binary_data_size": rows * 4096}}]}).encode()  # fmt: skip
    one = json.dumps({"inputs": [{"name": "x", "shape": [1, 1024], "datatype": "FP32", "data": [0.5] * 1024}]})
    with running(server) as base, ThreadPoolExecutor(1) as pool:
        url = f"{base}/v2/models/slow/infer"
        first = pool.submit(call, url, busy + np.ones((rows, 1024), np.float32).tobytes(),
                            {"Inference-Header-Content-Length": str(len(busy))})  # fmt: skip
        wait_for(lambda: server.frontends["v2"].models["slow"].batcher.computing == 1)  # the first holds the worker now
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(f"POST /v2/models/slow/infer HTTP/1.1\r\nHost: x\r\nContent-Length: {len(one)}\r\n\r\n"
                         f"{one}".encode())  # fmt: skip
            wait_for(lambda: server.frontends["v2"].models["slow"].batcher.depth == 1)
        assert first.result(60)[0] == 200
        wait_for(lambda: "cancelled" in call(f"{base}/metrics")[2].decode())
        text = call(f"{base}/metrics")[2].decode()
    assert metric(text, 'turboinfer_skipped_requests_total{model="slow",reason="cancelled"}') == 1
    assert metric(text, 'turboinfer_inference_count_total{model="slow"}') == rows  # the leaver was never computed
    assert metric(text, 'turboinfer_requests_total{model="slow",outcome="cancelled"}') == 1


def wait_for(condition, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.01)


def test_tritonclient_lists_the_model_repository(served):
    base, _ = served
    client = triton.InferenceServerClient(base.removeprefix("http://"))
    assert client.get_model_repository_index() == [
        {"name": "efficientnet-lite0", "version": "1", "state": "READY", "reason": ""}
    ]
    assert call(f"{base}/v2/repository/index", b'{"ready": true}')[0] == 200
    status, _, raw = call(f"{base}/v2/repository/index", b'{"ready": "yes"}')
    assert status == 400 and "ready must be a boolean" in json.loads(raw)["error"]
    with pytest.raises(triton.InferenceServerException, match="cannot be loaded or unloaded"):
        client.load_model("efficientnet-lite0")


def test_the_cli_server_logs_one_json_line_per_request_and_errors_with_tracebacks(tmp_path):
    model = lookup_model(tmp_path / "lookup.onnx")
    port = free_port()
    log = tmp_path / "server.log"
    with open(log, "w") as stderr:
        command = [sys.executable, "-m", "turboinfer.cli.main", "serve", str(model), "--port", str(port),
                   "--log-format", "json"]  # fmt: skip
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process)
        assert call(f"{base}/v2/models/lookup/infer", ids_body([1, 2, 3, 4]), {"X-Request-Id": "ok-1"})[0] == 200
        assert call(f"{base}/v2/models/lookup/infer", ids_body([1, 2, 3, 40]), {"X-Request-Id": "bad-1"})[0] == 500
        assert call(f"{base}/v2/models/lookup/infer", b'{"inputs": 3}', {"X-Request-Id": "bad-2"})[0] == 400
    finally:
        process.terminate()
        process.wait(30)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    access = {r["id"]: r for r in records if r["logger"] == "turboinfer.access"}
    assert access["ok-1"]["status"] == 200 and access["ok-1"]["model"] == "lookup"
    assert access["ok-1"]["batch"] == 1 and access["ok-1"]["compute_ms"] >= 0 and access["ok-1"]["total_ms"] > 0
    assert access["bad-1"]["status"] == 500 and access["bad-2"]["status"] == 400
    errors = [r for r in records if r["level"] == "error" and r.get("id") == "bad-1"]
    assert errors and "Gather" in errors[0]["traceback"]
    assert "[1, 2, 3, 40]" not in log.read_text()  # bodies are never logged


@pytest.mark.parametrize("content", [None, b"", b"\x08\x07 not a protobuf model" * 8])
def test_a_missing_empty_or_corrupt_model_is_a_one_line_error_at_start(tmp_path, content):
    path = tmp_path / "model.onnx"
    if content is not None:
        path.write_bytes(content)
    result = subprocess.run([sys.executable, "-m", "turboinfer.cli.main", "serve", str(path), "--port",
                             str(free_port())], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "model.onnx" in result.stderr
