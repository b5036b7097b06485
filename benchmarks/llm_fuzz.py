"""The LLM server against wrong and odd OpenAI requests, then its engine killed under load → markdown for
docs/benchmarks.md.

Run: .venv/bin/python benchmarks/llm_fuzz.py [--kills 3] [--seed 0]
It starts `turboinfer serve smollm2-135m --streams 16` in its own process and
1. sends the corpus of turboinfer.bench.openai_corpus (the named cases, then every field × every odd value) with
   8 clients: answers by status class and by case family, dropped connections, a normal chat at the end;
2. runs 16 streams in a closed loop (64 new tokens each) and SIGKILLs the engine's process --kills times, a few
   seconds apart: per kill, the time until /health is 200 again and the requests the server failed as in-flight
   (turboinfer_llm_requests_total{outcome="engine_failed"}); the load generator's failures must equal their sum.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

import aiohttp
import psutil

from serve import free_port, launch, stop, wait_ready  # benchmarks/serve.py, beside this script
from turboinfer.bench.openai_corpus import OpenAiProbe, chat_body, mutations, named_cases
from turboinfer.bench.openai_load import OpenAiLoad, closed_loop

MODEL, VOCAB, STREAMS = "smollm2-135m", 49152, 16
ROUTES = {"chat": "chat/completions", "completions": "completions"}


async def send_corpus(base: str, probes: list[OpenAiProbe], clients: int = 8) -> list[tuple[OpenAiProbe, str]]:
    """(probe, status or the error that dropped it) per probe."""
    queue: asyncio.Queue[OpenAiProbe] = asyncio.Queue()
    for probe in probes:
        queue.put_nowait(probe)
    results: list[tuple[OpenAiProbe, str]] = []

    async def client(http: aiohttp.ClientSession) -> None:
        while not queue.empty():
            probe = queue.get_nowait()
            try:
                async with http.post(f"{base}/v1/{ROUTES[probe.route]}", data=probe.body,
                                     headers={"Content-Type": "application/json"}) as response:  # fmt: skip
                    await response.read()
                    results.append((probe, str(response.status)))
            except (aiohttp.ClientError, TimeoutError) as err:
                results.append((probe, type(err).__name__))

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        await asyncio.gather(*(client(http) for _ in range(clients)))
    return results


def metric(base: str, name: str) -> float:
    """Sum of one metric's samples on the server's /metrics."""
    text = urllib.request.urlopen(f"{base}/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def healthy(base: str) -> bool:
    """/health answers 200."""
    try:
        return urllib.request.urlopen(f"{base}/health", timeout=5).status == 200
    except OSError:
        return False


def engine_pid(server: psutil.Process) -> int:
    """The engine's process: the server's multiprocessing child (not its resource tracker)."""
    for child in server.children(recursive=True):
        line = " ".join(child.cmdline())
        if "spawn_main" in line:
            return child.pid
    raise RuntimeError("the server has no engine process")


def killer(base: str, server: psutil.Process, kills: int, out: list[tuple[float, float]]) -> None:
    """SIGKILL the engine `kills` times under the load; per kill (seconds to ready, requests failed in flight)."""
    for _ in range(kills):
        time.sleep(6)
        failed = metric(base, 'turboinfer_llm_requests_total{model="smollm2-135m",outcome="engine_failed"}')
        os.kill(engine_pid(server), signal.SIGKILL)
        start = time.perf_counter()
        while healthy(base):  # the loss is noticed within a step
            time.sleep(0.01)
        while not healthy(base):
            time.sleep(0.05)
        ready = time.perf_counter() - start
        lost = metric(base, 'turboinfer_llm_requests_total{model="smollm2-135m",outcome="engine_failed"}') - failed
        out.append((ready, lost))


def main() -> None:
    """Start the server, run both phases, print the tables."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "turboinfer.cli.main", "serve", MODEL, "--port", str(port), "--threads", "2",
               "--streams", str(STREAMS), "--log-level", "warning"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        with open(log, "w") as stderr:
            process = wait_ready(f"{base}/health", launch(command, stderr=stderr))
        try:
            probes = named_cases(MODEL, VOCAB) + mutations(MODEL, seed=args.seed)
            results = asyncio.run(send_corpus(base, probes))
            wrong = [p.kind for p, s in results if p.status is not None and s != str(p.status)]
            normal = urllib.request.Request(f"{base}/v1/chat/completions", json.dumps(chat_body(MODEL)).encode(),
                                            {"Content-Type": "application/json"})  # fmt: skip
            after = urllib.request.urlopen(normal, timeout=60).status
            kills: list[tuple[float, float]] = []
            thread = threading.Thread(target=killer, args=(base, psutil.Process(process.pid), args.kills, kills))
            load = OpenAiLoad(base, MODEL, prompt_tokens=100, max_tokens=64, seed=args.seed)
            thread.start()
            run = asyncio.run(closed_loop(load, STREAMS, 16 * (6 + 2 * args.kills)))
            thread.join()
            restarts = metric(base, "turboinfer_llm_engine_restarts_total")
        finally:
            stop(process)
        tracebacks = sum("Traceback" in line for line in log.read_text().splitlines())
    print(f"Command: `{' '.join(sys.argv)}`\n")
    classes = Counter(s if not s.isdigit() else f"{s[0]}xx" for _, s in results)
    print(f"Corpus: {len(results)} requests ({len(named_cases(MODEL, VOCAB))} named cases, the rest every field × "
          f"every odd value): " + ", ".join(f"{n} × {c}" for c, n in sorted(classes.items())))  # fmt: skip
    print(f"named cases answered otherwise than they must: {wrong or 'none'}; a normal chat afterwards: {after}\n")
    families = Counter((p.kind, s) for p, s in results if p.status is None)
    statuses = sorted({s for _, s in families})
    print("| mutated field | " + " | ".join(statuses) + " |\n" + "| --- " * (len(statuses) + 1) + "|")
    for family in sorted({f for f, _ in families}):
        print(f"| {family} | " + " | ".join(str(families[(family, s)] or "") for s in statuses) + " |")
    summary = run.summary()
    print(f"\nUnder load ({STREAMS} streams, {len(run.records)} requests of 64 tokens): {summary.completed} "
          f"completed, {summary.failed} failed {summary.errors}; engine restarts {restarts:.0f}")  # fmt: skip
    print("\n| kill | time to ready s | in-flight requests failed |\n| --- | --- | --- |")
    for i, (ready, lost) in enumerate(kills, 1):
        print(f"| {i} | {ready:.1f} | {lost:.0f} |")
    in_flight = sum(lost for _, lost in kills)
    print(f"\nfailed by the load generator {summary.failed} = failed in flight {in_flight:.0f}; "
          f"tracebacks in the server log: {tracebacks}")  # fmt: skip


if __name__ == "__main__":
    main()
