"""The real CLI server in its own process: ready only after warm-up; SIGTERM drains accepted requests, exits 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import skimage.data
from PIL import Image

from tests.support.http import free_port, metric, wait_ready
from tests.support.images import encode


def post(url: str, body: bytes) -> str:
    """'200', another status, or the connection error's name (a request that was never accepted)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=60) as response:
            response.read()
            return str(response.status)
    except urllib.error.HTTPError as err:
        return str(err.code)
    except (urllib.error.URLError, ConnectionError) as err:
        return type(getattr(err, "reason", err)).__name__


def wait_until_arrived(base: str, count: int, seconds: float = 30) -> None:
    """Until the server has taken in `count` image requests (in flight or answered)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:
            text = response.read().decode()
        arrived = metric(text, "turboinfer_inflight_requests{") + metric(text, "turboinfer_requests_total{")
        if arrived >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"{count} requests never reached the server")


def test_sigterm_drains_accepted_requests_and_exits_zero(effnet):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "turboinfer.cli.main", "serve", "efficientnet-lite0", "--port", str(port),
         "--max-batch", "4", "--max-delay-ms", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy(),
    )  # fmt: skip
    try:
        wait_ready(base, process)
        photo = encode(Image.fromarray(skimage.data.chelsea()), quality=90)
        url = f"{base}/v1/models/efficientnet-lite0/image"
        with ThreadPoolExecutor(max_workers=16) as pool:
            accepted = [pool.submit(post, url, photo) for _ in range(16)]
            wait_until_arrived(base, 16)
            process.send_signal(signal.SIGTERM)
            late = [pool.submit(post, url, photo) for _ in range(8)]
            first, after = [f.result() for f in accepted], [f.result() for f in late]
        assert first == ["200"] * 16  # nothing accepted before SIGTERM is lost
        never_accepted = ("ConnectionRefusedError", "RemoteDisconnected", "ConnectionResetError", "BrokenPipeError")
        assert all(status in ("200", "503", *never_accepted) for status in after), after
        assert process.wait(timeout=40) == 0
    finally:
        if process.poll() is None:
            process.kill()
