"""Rigorous latency: one variant alone, or two interleaved (ABBA rounds) with a paired ratio and a verdict."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import psutil

from turboinfer.measure.stats import PairedRatio, Summary, bootstrap_ci, paired_ratio_ci, summarize
from turboinfer.measure.timer import interleave
from turboinfer.models.variant import Variant, sample_feeds
from turboinfer.runtime.session import Session


@dataclass(frozen=True)
class BenchConfig:
    """How long and on what to measure."""

    batch: int = 1
    sequence: int = 128
    """Token length for text models."""
    duration: float = 10.0
    """Wall-clock cap for the timed runs, seconds."""
    runs: int | None = None
    """Exact number of timed runs (rounds, for A/B); overrides duration."""
    warmup: int = 5
    threshold: float = 0.02
    """Practical-difference threshold: a ratio CI inside 1 ± threshold is called no practical difference."""


@dataclass(frozen=True)
class Loaded:
    """An opened variant with what opening it cost."""

    variant: Variant
    session: Session
    feeds: dict[str, np.ndarray]
    rss_delta_mib: float
    first_call_s: float


@dataclass(frozen=True)
class BenchResult:
    """One variant's latency distribution and throughput, with 95% CIs (seconds; items/s)."""

    variant: dict[str, Any]
    batch: int
    summary: Summary
    samples_s: tuple[float, ...]
    p90_ci: tuple[float, float]
    p99_ci: tuple[float, float]
    throughput: float
    throughput_ci: tuple[float, float]
    rss_delta_mib: float
    """Resident memory added by loading the model and its first call."""
    peak_rss_mib: float
    """Peak resident memory of the whole benchmarking process."""
    precision: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form shared with profile and optimize results."""
        return {
            "variant": self.variant, "batch": self.batch, "latency": self.summary.to_dict(),
            "p90_ci": list(self.p90_ci), "p99_ci": list(self.p99_ci), "throughput": self.throughput,
            "throughput_ci": list(self.throughput_ci), "rss_delta_mib": self.rss_delta_mib,
            "peak_rss_mib": self.peak_rss_mib, "precision": self.precision, "samples_s": list(self.samples_s),
        }  # fmt: skip


@dataclass(frozen=True)
class ABResult:
    """A against B, interleaved: ratio = median(B) / median(A) latency, paired, with its CI and a verdict."""

    a: BenchResult
    b: BenchResult
    ratio: PairedRatio
    verdict: str
    threshold: float

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"a": self.a.to_dict(), "b": self.b.to_dict(), "ratio_b_over_a": self.ratio.ratio,
                "ratio_ci": list(self.ratio.ci), "verdict": self.verdict, "threshold": self.threshold}  # fmt: skip


def load(variant: Variant, config: BenchConfig) -> Loaded:
    """Open a variant, time its first call, and note the memory it took."""
    before = psutil.Process().memory_info().rss
    session = variant.open()
    feeds = sample_feeds(variant.card, config.batch, config.sequence)
    start = time.perf_counter()
    session.run(feeds)
    first = time.perf_counter() - start
    for _ in range(config.warmup):
        session.run(feeds)
    delta = (psutil.Process().memory_info().rss - before) / 2**20
    return Loaded(variant, session, feeds, delta, first)


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def result(loaded: Loaded, samples: np.ndarray, batch: int) -> BenchResult:
    """Summaries and CIs of one variant's samples."""
    summary = summarize(samples, loaded.first_call_s)
    low, high = summary.median_ci
    return BenchResult(
        variant=loaded.variant.to_dict(),
        batch=batch,
        summary=summary,
        samples_s=tuple(float(x) for x in samples),
        p90_ci=bootstrap_ci(samples, 90),
        p99_ci=bootstrap_ci(samples, 99),
        throughput=batch / summary.median,
        throughput_ci=(batch / high, batch / low),
        rss_delta_mib=loaded.rss_delta_mib,
        peak_rss_mib=peak_rss_mib(),
        precision=str(loaded.session.describe().get("precision", "")),
    )


def schedule(config: BenchConfig) -> tuple[int, float, int]:
    """interleave()'s (rounds, max_seconds, min_rounds): exactly `runs` rounds, or at least 10 and then until
    `duration` has passed."""
    if config.runs is not None:
        return config.runs, float("inf"), 1
    return 10**9, config.duration, 10


def run_once(loaded: Loaded) -> Callable[[], object]:
    """One inference of a loaded variant on its inputs."""
    return lambda: loaded.session.run(loaded.feeds)


def bench_single(variant: Variant, config: BenchConfig) -> BenchResult:
    """Latency distribution, throughput and memory of one variant."""
    loaded = load(variant, config)
    samples = interleave({"a": run_once(loaded)}, *schedule(config))["a"]
    return result(loaded, samples, config.batch)


def verdict(ratio: PairedRatio, threshold: float, a: str, b: str) -> str:
    """Words for a B/A latency ratio: no difference unless the CI excludes 1 and the practical threshold."""
    low, high = ratio.ci
    if ratio.contains(1.0):
        return f"no difference: the 95% CI of B/A ({low:.3f}–{high:.3f}) contains 1"
    if 1 - threshold <= low and high <= 1 + threshold:
        return f"no practical difference: B/A {ratio.ratio:.3f} is within ±{threshold:.0%}"
    if ratio.ratio < 1:
        return f"{b} is {1 / ratio.ratio:.2f}× faster than {a} (95% CI {1 / high:.2f}–{1 / low:.2f}×)"
    return f"{b} is {ratio.ratio:.2f}× slower than {a} (95% CI {low:.2f}–{high:.2f}×)"


def bench_ab(a: Variant, b: Variant, config: BenchConfig) -> ABResult:
    """A and B interleaved in ABBA order (drift and turbo hit both alike), paired per round.

    When B is A (an A/A run), both arms share one session: the ratio then measures the noise floor alone.
    """
    loaded_a = load(a, config)
    loaded_b = loaded_a if b == a else load(b, config)
    samples = interleave({"a": run_once(loaded_a), "b": run_once(loaded_b)}, *schedule(config))
    samples_a, samples_b = samples["a"], samples["b"]
    ratio = paired_ratio_ci(samples_a, samples_b)
    return ABResult(
        result(loaded_a, samples_a, config.batch),
        result(loaded_b, samples_b, config.batch),
        ratio,
        verdict(ratio, config.threshold, f"A ({a.label})", f"B ({b.label})"),
        config.threshold,
    )
