"""A real server on a real socket: uvicorn in a thread, serving EfficientNet-Lite0; ready before tests run."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvicorn

from turboinfer.models.variant import parse_variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.run import build_server
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import ModelServing

TEST_LIMIT = 6 * 2**20  # 6 MiB body limit (a JSON 1x3x224x224 tensor is ~3 MB), to test 413 at the boundary


def metric(text: str, prefix: str) -> float:
    """Sum of the samples of the Prometheus text lines starting with prefix."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


@contextmanager
def running(server, app=None) -> Iterator[str]:
    """Run a Server (or an app built on it) under uvicorn on a free loopback port; yield its base URL once ready."""
    config = uvicorn.Config(app or server.app(), host="127.0.0.1", port=0, log_level="warning")
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not (runner.started and server.loaded):
        assert time.monotonic() < deadline, "server did not become ready"
        assert thread.is_alive(), "server thread died"
        time.sleep(0.02)
    port = runner.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        runner.should_exit = True
        thread.join(30)


@pytest.fixture(scope="module")
def served(effnet, settings) -> Iterator[tuple[str, object]]:
    """(base URL, Server) of a running server."""
    batching = BatcherConfig(max_batch=4, max_delay_s=0.005)
    server = build_server(
        [ModelServing(parse_variant("efficientnet-lite0", settings), batching)],
        ServeConfig(batching, max_body_bytes=TEST_LIMIT, body_timeout_s=1.0),
    )
    with running(server) as base:
        yield base, server
