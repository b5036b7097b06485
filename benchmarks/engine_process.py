"""What the engine core's process costs a served LLM: the server's own engine spec (SmolLM2-135M on its default
engine) generating 128 greedy tokens a request, (1) stepped directly in this process — the floor — and through
the scheduler (serve/openai/scheduler.py) with the engine core (2) in a thread of this process or (3) in the
engine's own process, as `turboinfer serve` runs it; in interleaved rounds, at one stream and at 16. Per stream:
the median gap between consecutive text pieces as the request's event loop receives them; in all: output tokens
a second → markdown for docs/benchmarks.md.

Run: .venv/bin/python benchmarks/engine_process.py [MODEL] [rounds=N]
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import sys
import time

from prometheus_client import CollectorRegistry

from turboinfer.core.settings import Settings
from turboinfer.runtime.llm.generate import GenerationRequest, OnText
from turboinfer.serve.openai.engine_core import Engine
from turboinfer.serve.openai.engine_process import CoreClient, LocalEngine, ProcessEngine, build_engine
from turboinfer.serve.openai.metrics import GenerationMetrics
from turboinfer.serve.openai.scheduler import GenerationScheduler, SchedulerConfig
from turboinfer.serve.openai.ticket import Ticket
from turboinfer.serve.run import llm_serving

TOKENS = 128
PROMPT = "The history of the city begins with a small settlement by the river, where"


def request(stream: int) -> GenerationRequest:
    return GenerationRequest(f"{PROMPT} ({stream})", max_tokens=TOKENS, ignore_eos=True)


def direct(engine: Engine, streams: int) -> tuple[float, float]:
    """(median ms between pieces of one stream, output tok/s) of the engine stepped in this process."""
    arrivals: dict[int, list[float]] = {i: [] for i in range(streams)}
    start = time.perf_counter()
    keys = [engine.add(request(i), stamp(arrivals[i])) for i in range(streams)]
    pending = set(keys)
    while pending:
        pending -= set(engine.step())
    wall = time.perf_counter() - start
    for key in keys:
        engine.result(key)
    return gap_ms(arrivals), streams * TOKENS / wall


def stamp(times: list[float]) -> OnText:
    """A streaming callback that notes when each piece arrives."""
    return lambda piece: times.append(time.perf_counter())


def scheduler_over(client: CoreClient, streams: int) -> GenerationScheduler:
    """A started scheduler over a core, ready."""
    metrics = GenerationMetrics(CollectorRegistry())
    scheduler = GenerationScheduler("bench", client, SchedulerConfig(max_running=streams), metrics)
    scheduler.start()
    while scheduler.state != "ready":
        time.sleep(0.01)
    return scheduler


def scheduled(scheduler: GenerationScheduler, streams: int) -> tuple[float, float]:
    """The same through a scheduler over a core."""

    async def run() -> tuple[dict[int, list[float]], float]:
        loop = asyncio.get_running_loop()
        arrivals: dict[int, list[float]] = {i: [] for i in range(streams)}
        start = time.perf_counter()
        tickets = [scheduler.submit(Ticket(request(i), loop)) for i in range(streams)]

        async def drain(i: int, ticket: Ticket) -> None:
            while (kind := (await ticket.next())[0]) != "done":
                if kind == "text":
                    arrivals[i].append(time.perf_counter())

        await asyncio.gather(*(drain(i, t) for i, t in enumerate(tickets)))
        return arrivals, time.perf_counter() - start

    arrivals, wall = asyncio.run(run())
    return gap_ms(arrivals), streams * TOKENS / wall


def gap_ms(arrivals: dict[int, list[float]]) -> float:
    """Median gap between consecutive pieces over every stream, the first piece (prefill) excluded."""
    gaps = [b - a for times in arrivals.values() for a, b in itertools.pairwise(times[1:])]
    return statistics.median(gaps) * 1e3


def main() -> None:
    args = [a for a in sys.argv[1:] if "=" not in a]
    options = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    model, rounds = (args[0] if args else "smollm2-135m"), int(options.get("rounds", 3))
    serving = llm_serving(model, Settings.from_env(os.environ), SchedulerConfig(max_running=16))
    child = serving.engine
    assert isinstance(child, ProcessEngine)
    engine = build_engine(child.spec)
    thread, process = scheduler_over(LocalEngine(engine), 16), scheduler_over(child, 16)
    runs = {"direct": lambda s: direct(engine, s), "thread": lambda s: scheduled(thread, s),
            "process": lambda s: scheduled(process, s)}  # fmt: skip
    for run in runs.values():
        run(2)  # warm-up
    for streams in (1, 16):
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for _ in range(rounds):
            for name, run in runs.items():
                figures[name].append(run(streams))
        gap = {n: statistics.median(f[0] for f in fs) for n, fs in figures.items()}
        rate = {n: statistics.median(f[1] for f in fs) for n, fs in figures.items()}
        print(f"| {serving.name} ({child.engine}) | {streams} | {gap['direct']:.2f} / {rate['direct']:.1f} | "
              f"{gap['thread']:.2f} / {rate['thread']:.1f} | {gap['process']:.2f} / {rate['process']:.1f} | "
              f"{rate['process'] / rate['direct']:.3f} |")  # fmt: skip
    thread.stop()
    process.stop()


if __name__ == "__main__":
    main()
