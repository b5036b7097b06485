"""The bad-input corpus against a running server: counts by status, dropped connections, live at the end.

Run: .venv/bin/python benchmarks/fuzz.py [--count 2400] [--seed 0] [--server-src OLD_CHECKOUT/src]
It starts `turboinfer serve efficientnet-lite0 minilm-l6` in its own process (from --server-src when given, so an
older checkout's server meets the same corpus), sends the corpus of turboinfer.bench.corpus (deterministic for
the seed) with 8 clients, and prints a markdown table by mutation family and status.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import aiohttp

from serve import free_port, start, stop  # benchmarks/serve.py, beside this script
from turboinfer.bench.corpus import Probe, corpus
from turboinfer.core.settings import Settings
from turboinfer.models.catalog import build_zoo_model
from turboinfer.models.photos import all_photos

MODELS = ("efficientnet-lite0", "minilm-l6")


async def send(base: str, probes: list[Probe], clients: int = 8) -> list[tuple[str, str]]:
    """(mutation family, status or error name) per probe."""
    queue: asyncio.Queue[Probe] = asyncio.Queue()
    for probe in probes:
        queue.put_nowait(probe)
    results: list[tuple[str, str]] = []
    timeout = aiohttp.ClientTimeout(total=60)

    async def client(session: aiohttp.ClientSession) -> None:
        while not queue.empty():
            probe = queue.get_nowait()
            route = "v2/models/{}/infer" if probe.route == "infer" else "v1/models/{}/image"
            family = re.sub(r"\.\d+", "", probe.kind)  # "field inputs.2.shape" → "field inputs.shape"
            try:
                async with session.post(f"{base}/{route.format(probe.model)}", data=probe.body,
                                        headers=probe.headers) as response:  # fmt: skip
                    await response.read()
                    results.append((family, str(response.status)))
            except aiohttp.ClientError as err:  # a dropped connection: what the goal counts as zero
                results.append((family, type(err).__name__))

    async with aiohttp.ClientSession(timeout=timeout) as session:
        await asyncio.gather(*(client(session) for _ in range(clients)))
        async with session.get(f"{base}/v2/health/live") as response:
            results.append(("live at the end", str(response.status)))
    return results


def main() -> None:
    """Build the corpus, run it, print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=2400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--server-src", help="Run the server from this source folder (e.g. an older checkout's src).")
    args = parser.parse_args()
    settings = Settings.from_env(os.environ)
    cards = [build_zoo_model(name, settings) for name in MODELS]
    jpegs = [p.read_bytes() for p in all_photos(settings) if p.suffix.lower() in (".jpg", ".jpeg")][:12]
    probes = corpus(cards, {MODELS[0]: jpegs}, args.count, args.seed)
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        with open(log, "w") as stderr:
            env = {**os.environ, "PYTHONPATH": args.server_src} if args.server_src else None
            server = start(MODELS[0], port, MODELS[1], stderr=stderr, env=env)
        try:
            results = asyncio.run(send(f"http://127.0.0.1:{port}", probes))
        finally:
            stop(server)
        errors = [line for line in log.read_text().splitlines() if "Traceback" in line]
    print(f"Command: `{' '.join(sys.argv)}`\n")
    counts = Counter(results)
    statuses = sorted({status for _, status in results})
    print("| mutation | " + " | ".join(statuses) + " |\n" + "| --- " * (len(statuses) + 1) + "|")
    for family in sorted({f for f, _ in results}):
        print(f"| {family} | " + " | ".join(str(counts[(family, s)] or "") for s in statuses) + " |")
    total = Counter(status for _, status in results[:-1])
    print(f"\n{len(probes)} requests: " + ", ".join(f"{n} × {s}" for s, n in sorted(total.items())))
    print(f"5xx: {sum(n for s, n in total.items() if s.startswith('5'))}; dropped connections: "
          f"{sum(n for s, n in total.items() if not s.isdigit())}; live at the end: {results[-1][1]}")  # fmt: skip
    print(f"tracebacks in the server log: {len(errors)}")


if __name__ == "__main__":
    main()
