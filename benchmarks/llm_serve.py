"""Serving an LLM over the OpenAI API, turboinfer against llama.cpp's own server, measured by the same load
generator (`turboinfer bench --openai`'s) in one run → markdown for docs/benchmarks.md.

Run: .venv/bin/pip install xllamacpp && .venv/bin/python benchmarks/llm_serve.py [streams|goodput|overload|soak ...]
     [rate=R]  (the goodput rate overload and soak start from when goodput is not run first)
- streams: closed loop at 1 and 16 concurrent streams (~200-token unique prompts, 128 new tokens, streamed),
  every server with 16 streams/slots: llama.cpp's, turboinfer on OpenVINO GenAI (the default, Q8_0), turboinfer
  on ONNX Runtime GenAI int8 (optimize's latency choice; streams interleaved, not batched); OpenVINO GenAI's raw
  offline throughput at 16 streams (server overhead).
- goodput: the highest open-loop rate at which ≥ 99% of requests meet TTFT ≤ 1 s and TPOT ≤ 100 ms, per server.
- overload: turboinfer with a queue of 2, then 0, beyond its streams, then 0 with a TTFT target (admission that
  refuses what it predicts would miss it), at 3× its goodput rate: refusal latency, admitted TTFT p99 against the
  unloaded one (half the goodput rate), nothing lost.
- soak: 10 minutes at 70% of the goodput rate; the server's RSS at the start and the end.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from serve import free_port, launch, stop, wait_ready  # benchmarks/serve.py, beside this script
from turboinfer.bench.openai_load import LoadRun, OpenAiLoad, closed_loop, open_loop, prompts
from turboinfer.core.settings import Settings
from turboinfer.llm.engines import ServeShape
from turboinfer.llm.variant import GeneratorVariant, open_generator
from turboinfer.runtime.llm.generate import GenerationRequest

STREAMS, THREADS, MAX_TOKENS, PROMPT_TOKENS = 16, 2, 128, 200
LLAMACPP = Path(__file__).with_name("llamacpp_app.py")
HEADER = ("| server | load | done | failed | output tok/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | TPOT p99 ms "
          "| ITL p99 ms | decode tok/s (1000 / TPOT p50) |\n" + "| --- " * 11 + "|")  # fmt: skip


def start_turboinfer(*options: str, model: str = "smollm2-135m") -> tuple[Any, str]:
    port = free_port()
    command = [sys.executable, "-m", "turboinfer.cli.main", "serve", model, "--port", str(port),
               "--threads", str(THREADS), "--streams", str(STREAMS), "--log-level", "warning", *options]  # fmt: skip
    return wait_ready(f"http://127.0.0.1:{port}/health", launch(command)), f"http://127.0.0.1:{port}"


def start_llamacpp(model: str = "smollm2-135m") -> tuple[Any, str]:
    port = free_port()
    command = [sys.executable, str(LLAMACPP), str(port), str(STREAMS), str(THREADS), model]
    return wait_ready(f"http://127.0.0.1:{port}/health", launch(command)), f"http://127.0.0.1:{port}"


def load(url: str, **extra: Any) -> OpenAiLoad:
    return OpenAiLoad(url, prompt_tokens=PROMPT_TOKENS, max_tokens=MAX_TOKENS, **extra)


def row(server: str, label: str, run: LoadRun) -> str:
    s = run.summary()
    decode = 1000 / s.tpot_ms.median if s.tpot_ms.median == s.tpot_ms.median else float("nan")
    return (f"| {server} | {label} | {s.completed} | {s.failed} | {s.output_throughput:.1f} | "
            f"{s.ttft_ms.median:.0f} | {s.ttft_ms.p99:.0f} | {s.tpot_ms.median:.1f} | "
            f"{s.tpot_ms.p99:.1f} | {s.itl_ms.p99:.1f} | {decode:.0f} |")  # fmt: skip


def raw_throughput(settings: Settings, streams: int, requests: int) -> float:
    """Output tok/s of the same engine and settings offline: `requests` prompts through generate_many, `streams` at
    a time, the same prompts' shape as the load generator's."""
    engine = open_generator(GeneratorVariant("smollm2-135m", threads=THREADS), settings,
                            ServeShape(streams, 2**30 // (2 * 30 * 3 * 64)))  # fmt: skip  # 1 GiB of u8 KV
    chat = [engine.chat([{"role": "user", "content": p}]) for p in prompts(load(""), requests, seed=12345)]
    batch = [GenerationRequest(p, MAX_TOKENS, ignore_eos=True) for p in chat]
    engine.generate_many(batch[:2])  # warm-up
    begin = time.perf_counter()
    tokens = sum(r.completion_tokens for i in range(0, requests, streams) for r in
                 engine.generate_many(batch[i : i + streams]))  # fmt: skip
    return tokens / (time.perf_counter() - begin)


def streams(settings: Settings) -> None:
    print(f"#### Streams: closed loop, ~{PROMPT_TOKENS}-token unique prompts, {MAX_TOKENS} new tokens, streamed\n")
    print(HEADER)
    servers = {
        "llama.cpp server (xllamacpp)": start_llamacpp(),
        "turboinfer (OpenVINO GenAI)": start_turboinfer(),
        "turboinfer (ORT GenAI int8, interleaved)": start_turboinfer(model="smollm2-135m@ort-genai"),
    }
    try:
        for concurrency, requests in ((1, 12), (STREAMS, 64)):
            for i, (name, (_, url)) in enumerate(servers.items()):
                run = asyncio.run(closed_loop(load(url), concurrency, requests, step=concurrency * 10 + i))
                print(row(name, f"{concurrency} streams", run), flush=True)
    finally:
        for process, _ in servers.values():
            stop(process)
    raw = raw_throughput(settings, STREAMS, 64)
    print(f"\nThe same engine offline (generate_many, {STREAMS} at a time, 64 requests): {raw:.1f} output tok/s.\n")


def goodput_rate(url: str, rates: tuple[float, ...], requests: int = 24) -> tuple[float, list[str]]:
    """Highest rate whose requests ≥ 99% meet both targets (rates tried in order until one fails)."""
    best, rows = 0.0, []
    for i, rate in enumerate(rates):
        run = asyncio.run(open_loop(load(url), rate, requests, step=100 + i))
        s = run.summary()
        rows.append(f"| {rate:g} | {s.good_share:.3f} | {s.goodput:.2f} | {s.ttft_ms.p99:.0f} | "
                    f"{s.tpot_ms.p99:.1f} | {s.failed} |")  # fmt: skip
        if s.good_share < 0.99:
            break
        best = rate
    return best, rows


RATES = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)


def goodput(settings: Settings) -> dict[str, float]:
    print("#### Goodput: open loop (Poisson), 24 requests per rate, targets TTFT ≤ 1 s and TPOT ≤ 100 ms\n")
    found = {}
    for name, starter in (("llama.cpp server (xllamacpp)", start_llamacpp), ("turboinfer", start_turboinfer)):
        process, url = starter()
        try:
            found[name], rows = goodput_rate(url, RATES)
        finally:
            stop(process)
        print(f"{name}: highest rate with ≥ 99% good requests: {found[name]:g} req/s\n")
        print("| rate req/s | share good | goodput req/s | TTFT p99 ms | TPOT p99 ms | failed |\n" + "| --- " * 6 + "|")
        print("\n".join(rows) + "\n", flush=True)
    return found


TTFT_TARGET_MS = 300
"""The target of the third overload setup: about 1.5× the unloaded TTFT p99 these machines showed (183–232 ms)."""
OVERLOAD_SETUPS = (
    ("queue 2 beyond 16 streams", ("--queue", "2")),
    ("queue 0 beyond 16 streams", ("--queue", "0")),
    (f"queue 0, --ttft-target-ms {TTFT_TARGET_MS}", ("--queue", "0", "--ttft-target-ms", str(TTFT_TARGET_MS))),
)


def overload(settings: Settings, rate: float) -> None:
    for label, options in OVERLOAD_SETUPS:
        overload_one(rate, label, options)


def overload_one(rate: float, label: str, options: tuple[str, ...]) -> None:
    process, url = start_turboinfer(*options)
    try:
        unloaded = asyncio.run(open_loop(load(url), rate * 0.5, 24, step=200)).summary()
        loaded = asyncio.run(open_loop(load(url), rate * 3, 96, step=201)).summary()
    finally:
        stop(process)
    print(f"#### Overload: turboinfer, {label}, 3 × {rate:g} req/s\n")
    lost = loaded.failed - sum(v for k, v in loaded.errors.items() if k in ("429", "503"))
    print(f"- unloaded ({rate * 0.5:g} req/s): {unloaded.completed} answered, refused {unloaded.errors}; "
          f"TTFT p99 {unloaded.ttft_ms.p99:.0f} ms")  # fmt: skip
    print(f"- 3× ({rate * 3:g} req/s): {loaded.completed} answered, refused {loaded.errors}, refusal median "
          f"{loaded.refusal_ms.median:.1f} ms / p99 {loaded.refusal_ms.p99:.1f} ms; admitted TTFT p99 "
          f"{loaded.ttft_ms.p99:.0f} ms ({loaded.ttft_ms.p99 / unloaded.ttft_ms.p99:.2f}× "
          f"unloaded); lost (neither answered nor refused): {lost}\n")  # fmt: skip


def rss_mib(pid: int) -> float:
    """Resident memory of a server: its process and every process it started (the engine's), MiB."""
    server = psutil.Process(pid)
    return sum(p.memory_info().rss for p in (server, *server.children(recursive=True))) / 2**20


def soak(settings: Settings, rate: float, minutes: float = 10.0) -> None:
    """`minutes` at `rate`; the server's RSS (its process and the engine's) every minute. OpenVINO GenAI allocates
    its KV cache pool as blocks are first used (up to --kv-cache-gb) and keeps freed blocks for prefix reuse, so
    RSS climbs until the pool is full; growth is judged after that."""
    process, url = start_turboinfer()
    samples: list[float] = []
    stop_sampling = threading.Event()

    def sample() -> None:
        while not stop_sampling.wait(60):
            samples.append(rss_mib(process.pid))

    try:
        asyncio.run(open_loop(load(url), rate, 16, step=300))  # settle
        samples.append(rss_mib(process.pid))
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        run = asyncio.run(open_loop(load(url), rate, int(rate * minutes * 60), step=301))
        stop_sampling.set()
        samples.append(rss_mib(process.pid))
    finally:
        stop(process)
    print(f"#### Soak: {minutes:.0f} minutes at {rate:g} req/s (70% of the goodput rate)\n")
    print(HEADER)
    print(row("turboinfer", "soak", run))
    trace = " → ".join(f"{v:.0f}" for v in samples)
    half = samples[len(samples) // 2]
    print(
        f"\nServer RSS (its process and the engine's), MiB, at the start, every minute and at the end: {trace}; "
        f"second half {half:.0f} → {samples[-1]:.0f} ({(samples[-1] - half) / half:+.1%}).\n"
    )


def main() -> None:
    settings = Settings.from_env(os.environ)
    parts = [a for a in sys.argv[1:] if "=" not in a] or ["streams", "goodput", "overload", "soak"]
    given = [float(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("rate=")]
    rate = given[0] if given else 1.0  # the goodput rate, when goodput is not run first
    if "streams" in parts:
        streams(settings)
    if "goodput" in parts:
        rate = goodput(settings)["turboinfer"] or rate
    if "overload" in parts:
        overload(settings, rate)
    if "soak" in parts:
        soak(settings, round(rate * 0.7, 2))


if __name__ == "__main__":
    main()
