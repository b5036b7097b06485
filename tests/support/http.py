"""A server on a real loopback socket for tests: run it, call it, read its metrics."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

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


def call(url: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    """One HTTP request with the standard library; returns (status, headers, body)."""
    request = urllib.request.Request(
        url, data=body, headers=headers or {}, method="POST" if body is not None else "GET"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(base: str, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else "server exited"
        try:
            with urllib.request.urlopen(f"{base}/v2/health/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.1)
    raise AssertionError("server never became ready")
