"""What the engine's own process costs a served LLM: the same engine (the server's spec: SmolLM2-135M on its
default engine, one stream) stepped in this process and through serve/openai/engine_process.py's pipe, in
interleaved rounds of 128 greedy tokens each; and one bare call's round-trip (a ping) → markdown for
docs/benchmarks.md.

Run: .venv/bin/python benchmarks/engine_process.py [MODEL] [rounds=N]
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from turboinfer.core.settings import Settings
from turboinfer.runtime.llm.generate import GenerationRequest
from turboinfer.serve.openai.engine_process import ProcessEngine, build_engine
from turboinfer.serve.openai.scheduler import SchedulerConfig
from turboinfer.serve.run import llm_serving

TOKENS = 128
PROMPT = "The history of the city begins with a small settlement by the river, where"


def step_ms(engine) -> float:
    """Median milliseconds of one engine step over a 128-token greedy generation (prefill step excluded)."""
    key = engine.add(GenerationRequest(PROMPT, max_tokens=TOKENS, ignore_eos=True), lambda piece: None)
    times, done = [], False
    while not done:
        start = time.perf_counter()
        done = key in engine.step()
        engine.cache_usage()  # the scheduler reads it after every step
        times.append(time.perf_counter() - start)
    engine.result(key)
    return statistics.median(times[1:]) * 1e3


def ping_us(engine: ProcessEngine, calls: int = 2000) -> float:
    """Median microseconds of one call to the child that does nothing."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        engine.ping()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    args = [a for a in sys.argv[1:] if "=" not in a]
    options = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    model, rounds = (args[0] if args else "smollm2-135m"), int(options.get("rounds", 5))
    serving = llm_serving(model, Settings.from_env(os.environ), SchedulerConfig(max_running=1))
    remote = serving.engine
    assert isinstance(remote, ProcessEngine)
    local = build_engine(remote.spec)
    step_ms(local), step_ms(remote)  # warm-up
    inside, across = [], []
    for _ in range(rounds):
        inside.append(step_ms(local))
        across.append(step_ms(remote))
    ping = ping_us(remote)
    remote.close()
    a, b = statistics.median(inside), statistics.median(across)
    print(f"| {serving.name} ({remote.engine}) | {a:.2f} | {b:.2f} | {b / a:.3f} | {ping:.0f} |")


if __name__ == "__main__":
    main()
