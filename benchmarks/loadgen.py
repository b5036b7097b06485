"""The load generator's own ceiling on loopback: a trivial aiohttp endpoint in another process, closed loop at
several concurrencies and open loop at rising rates.

Run: .venv/bin/python benchmarks/loadgen.py > out/loadgen.md
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time

from turboinfer.bench.loadgen import check_reachable, closed_loop, open_loop
from turboinfer.bench.requests import Request

SERVER = """
import sys
from aiohttp import web
async def ok(request):
    await request.read()
    return web.Response(text="ok")
app = web.Application()
app.router.add_route("*", "/ok", ok)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
"""


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_ready(url: str, seconds: float = 10.0) -> None:
    """Poll until the server answers."""
    deadline = time.perf_counter() + seconds
    while True:
        try:
            await check_reachable(url, timeout_s=0.5)
            return
        except Exception:
            if time.perf_counter() > deadline:
                raise
            await asyncio.sleep(0.05)


async def measure(url: str) -> None:
    """Print the closed- and open-loop tables."""
    await wait_ready(url)
    body = [Request(b"x" * 64)]
    print("| mode | load | achieved req/s | p50 ms | p99 ms | errors |\n| --- | --- | --- | --- | --- | --- |")
    for concurrency in (1, 16, 64):
        r = await closed_loop(url, body, concurrency, 5.0)
        print(f"| closed | {concurrency} clients | {r.achieved_rate:.0f} | {r.percentile(50) * 1e3:.2f} "
              f"| {r.percentile(99) * 1e3:.2f} | {r.sent - r.ok} |")  # fmt: skip
    for rate in (1000, 2000, 3000, 4000):
        r = await open_loop(url, body, rate, 5.0, process="poisson")
        print(f"| open (Poisson) | {rate}/s offered | {r.achieved_rate:.0f} | {r.percentile(50) * 1e3:.2f} "
              f"| {r.percentile(99) * 1e3:.2f} | {r.sent - r.ok} |")  # fmt: skip


def main() -> None:
    """Start the trivial server, measure, stop it."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    try:
        print(f"Command: `{' '.join(sys.argv)}`\n")
        asyncio.run(measure(f"http://127.0.0.1:{port}/ok"))
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
