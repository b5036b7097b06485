"""Time a callable: first call apart, warm-up, then adaptive repeats until the median is pinned down."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from turboinfer.measure.stats import median_ci


@dataclass(frozen=True)
class TimingPolicy:
    """When to stop timing: the median's 95% CI is tight enough, or a run/time cap is hit."""

    warmup: int = 3
    """Untimed calls after the first (the first is timed on its own as the first-call penalty)."""
    min_runs: int = 10
    max_runs: int = 2000
    max_seconds: float = 5.0
    """Wall-clock cap on the timed runs, seconds."""
    target_rel_ci: float = 0.02
    """Stop once the 95% CI half-width of the median is under this fraction of the median."""


@dataclass(frozen=True)
class Timing:
    """Raw result of timing one callable."""

    samples_s: np.ndarray
    """Per-call wall-clock durations of the timed runs, seconds."""
    first_call_s: float
    """Duration of the very first call (includes lazy initialisation), seconds."""
    stop_reason: str
    """"converged", "time cap" or "run cap"."""


def relative_ci_half_width(samples: np.ndarray) -> float:
    """Half-width of the median's 95% CI divided by the median (inf when too few samples)."""
    low, high = median_ci(samples)
    median = float(np.median(samples))
    return (high - low) / 2 / median if median > 0 else float("inf")


def time_call(fn: Callable[[], object], policy: TimingPolicy | None = None) -> Timing:
    """Time fn() under the policy and return the raw samples."""
    policy = policy or TimingPolicy()
    clock = time.perf_counter
    start = clock()
    fn()
    first_call = clock() - start
    for _ in range(policy.warmup):
        fn()
    samples: list[float] = []
    deadline = clock() + policy.max_seconds
    reason = "run cap"
    while len(samples) < policy.max_runs:
        start = clock()
        fn()
        end = clock()
        samples.append(end - start)
        if end > deadline:
            reason = "time cap"
            break
        n = len(samples)
        check_now = n >= policy.min_runs and n % max(1, policy.min_runs // 2) == 0
        if check_now and relative_ci_half_width(np.asarray(samples)) <= policy.target_rel_ci:
            reason = "converged"
            break
    return Timing(np.asarray(samples), first_call, reason)


def interleave(
    fns: dict[str, Callable[[], object]], rounds: int, max_seconds: float = float("inf"), min_rounds: int = 1
) -> dict[str, np.ndarray]:
    """Per-callable durations (s) over rounds in which every callable runs once, the order rotating each round
    (two callables: AB, BA, AB, …) so drift and turbo hit all of them alike; sample i of each comes from round i.

    Stops after `rounds`, or once at least `min_rounds` ran and `max_seconds` passed. No warm-up: callers do it.
    """
    names = list(fns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    deadline = time.perf_counter() + max_seconds
    clock = time.perf_counter
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            start = clock()
            fns[name]()
            samples[name].append(clock() - start)
        if r + 1 >= min_rounds and clock() > deadline:
            break
    return {name: np.asarray(values) for name, values in samples.items()}
