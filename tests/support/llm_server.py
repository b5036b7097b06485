"""Talking to an LLM server in tests: the model and limits it is served with, JSON calls, chats, SSE streams,
waits."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from turboinfer.serve.config import ServeConfig
from turboinfer.serve.openai.scheduler import SchedulerConfig

MODEL = "smollm2-135m"


LIMITS = SchedulerConfig(max_running=4, queue_size=4, max_new_tokens=1024)


CONFIG = ServeConfig(max_body_bytes=64 * 1024, body_timeout_s=1.0)


def call(url: str, body: bytes | dict | None = None, headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    """(status, headers, parsed JSON body) of one request."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, err.headers, json.loads(err.read())


def chat(content: str = "Name a colour.", **fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": content}], "temperature": 0, **fields}


@contextmanager
def sse(base: str, path: str, body: dict[str, Any]) -> Iterator[Iterator[str]]:
    """The data lines of a streamed answer, read as they arrive; leaving the block closes the connection."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("content-type").startswith("text/event-stream")

    def lines() -> Iterator[str]:
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line:
                assert line.startswith("data: ")
                yield line.removeprefix("data: ")

    try:
        yield lines()
    finally:
        connection.sock.close() if connection.sock else None
        connection.close()


def wait_for(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.01)


def wait_healthy(base: str) -> None:
    wait_for(lambda: call(f"{base}/health")[0] == 200, 60)
