"""Dynamic batching's gain, measured end to end over HTTP: the same server and model with --max-batch 1 and 8,
highest open-loop rate whose p99 stays under a target, plus a closed-loop run at 16 clients.

Run: .venv/bin/python benchmarks/serve.py > out/serve.md   (real photos, the image route, EfficientNet-Lite0)
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.request

from turboinfer.bench.loadgen import closed_loop, rate_sweep
from turboinfer.bench.requests import image_requests
from turboinfer.core.settings import Settings
from turboinfer.models.photos import all_photos

P99_TARGET_S = 0.3
MODEL = "efficientnet-lite0"


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(max_batch: int, port: int) -> subprocess.Popen:
    """`turboinfer serve` in its own process, returned once ready."""
    process = subprocess.Popen(
        [sys.executable, "-m", "turboinfer.cli.main", "serve", MODEL, "--port", str(port), "--max-batch",
         str(max_batch), "--max-delay-ms", "5"], stdout=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=2) as response:
                if response.status == 200:
                    return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("server did not become ready")


def main() -> None:
    """Print one row per batching setting."""
    photos = [p for p in all_photos(Settings.from_env(os.environ)) if p.suffix.lower() in (".jpg", ".jpeg")][:24]
    bodies = image_requests(photos)
    print(f"Command: `{' '.join(sys.argv)}`\n")
    print(f"{len(bodies)} real JPEGs to `/v1/models/{MODEL}/image`; p99 target {P99_TARGET_S * 1e3:.0f} ms.\n")
    print(
        "| --max-batch | best open-loop rate, p99 ≤ target, req/s | closed loop, 16 clients: req/s | p50 ms | p99 ms |"
    )
    print("| --- | --- | --- | --- | --- |")
    for max_batch in (1, 8):
        port = free_port()
        server = start(max_batch, port)
        url = f"http://127.0.0.1:{port}/v1/models/{MODEL}/image"
        try:
            best, _ = asyncio.run(rate_sweep(url, bodies, P99_TARGET_S, start_rate=5, step_seconds=5, refine_steps=2))
            closed = asyncio.run(closed_loop(url, bodies, 16, 10.0))
        finally:
            server.terminate()
            server.wait(40)
        print(f"| {max_batch} | {best or 0:.0f} | {closed.achieved_rate:.0f} | {closed.percentile(50) * 1e3:.0f} "
              f"| {closed.percentile(99) * 1e3:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
