"""Scaling sweeps: batch size (throughput and its knee), intra-op threads (speedup, efficiency), sequence length."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from turboinfer.measure.timer import TimingPolicy, time_call
from turboinfer.runtime.session import Session

Feeds = Mapping[str, np.ndarray]
SWEEP_POLICY = TimingPolicy(warmup=2, min_runs=5, max_runs=200, max_seconds=1.5, target_rel_ci=0.03)


@dataclass(frozen=True)
class ScalingPoint:
    """Latency of one setting, and the throughput it implies (items per second)."""

    value: int
    median_s: float
    p90_s: float
    items_per_s: float
    extra: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"value": self.value, "median_s": self.median_s, "p90_s": self.p90_s, "items_per_s": self.items_per_s,
                **self.extra}  # fmt: skip


@dataclass(frozen=True)
class Sweep:
    """One parameter swept over values; `stopped` says why the sweep ended early (e.g. out of memory)."""

    parameter: str
    points: tuple[ScalingPoint, ...]
    stopped: str | None = None

    def gain(self) -> float:
        """Best throughput divided by the first point's (1.0 when flat)."""
        if not self.points:
            return 1.0
        return max(p.items_per_s for p in self.points) / self.points[0].items_per_s

    def knee(self, fraction: float = 0.9) -> int | None:
        """Smallest value reaching `fraction` of the best throughput."""
        if not self.points:
            return None
        best = max(p.items_per_s for p in self.points)
        return next(p.value for p in self.points if p.items_per_s >= fraction * best)

    def quadratic_share(self) -> float | None:
        """Fit latency = a + b·x + c·x² (least squares) and return c·x²'s share of the fit at the largest x.

        For a sequence sweep this is the quadratic (attention score) term the cost model predicts.
        """
        if len(self.points) < 3:
            return None
        x = np.array([p.value for p in self.points], dtype=float)
        y = np.array([p.median_s for p in self.points])
        a, b, c = np.linalg.lstsq(np.stack([np.ones_like(x), x, x**2], axis=1), y, rcond=None)[0]
        top = x[-1]
        fitted = a + b * top + c * top**2
        return float(max(c, 0.0) * top**2 / fitted) if fitted > 0 else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"parameter": self.parameter, "points": [p.to_dict() for p in self.points], "stopped": self.stopped,
                "gain": self.gain(), "knee": self.knee(), "quadratic_share": self.quadratic_share()}  # fmt: skip


def timed_point(
    session: Session, feeds: Feeds, value: int, items: int, extra: dict[str, float] | None = None
) -> ScalingPoint:
    """Time session.run(feeds) and turn it into a point (items = batch size processed per call)."""
    timing = time_call(lambda: session.run(feeds), SWEEP_POLICY)
    median = float(np.median(timing.samples_s))
    extra = {"first_call_penalty": timing.first_call_s / median, **(extra or {})}
    return ScalingPoint(value, median, float(np.percentile(timing.samples_s, 90)), items / median, extra)


def out_of_memory(err: Exception) -> bool:
    """True for allocation failures (numpy MemoryError, runtime allocator errors)."""
    return isinstance(err, MemoryError) or "alloc" in str(err).lower()


def sweep(parameter: str, values: list[int], measure: Callable[[int], ScalingPoint]) -> Sweep:
    """Measure each value in turn; stop at the first allocation failure and say where."""
    points: list[ScalingPoint] = []
    for value in values:
        try:
            points.append(measure(value))
        except Exception as err:
            if not out_of_memory(err):
                raise
            return Sweep(parameter, tuple(points), f"stopped at {parameter} {value}: out of memory ({err})")
    return Sweep(parameter, tuple(points))


def batch_sweep(session: Session, feeds_for: Callable[[int], Feeds], batches: list[int]) -> Sweep:
    """Latency and throughput by batch size on one session."""
    return sweep("batch", batches, lambda b: timed_point(session, feeds_for(b), b, b))


def thread_sweep(open_with: Callable[[int], Session], feeds: Feeds, threads: list[int]) -> Sweep:
    """Latency by intra-op thread count (a fresh session each), with speedup and efficiency vs the first."""
    raw = sweep("threads", threads, lambda t: timed_point(open_with(t), feeds, t, 1))
    if not raw.points:
        return raw
    base = raw.points[0].median_s * raw.points[0].value
    points = tuple(
        ScalingPoint(p.value, p.median_s, p.p90_s, p.items_per_s,
                     {"speedup": base / p.median_s / raw.points[0].value, "efficiency": base / p.median_s / p.value})
        for p in raw.points
    )  # fmt: skip
    return Sweep(raw.parameter, points, raw.stopped)


def sequence_sweep(
    session: Session, feeds_for: Callable[[int], Feeds], lengths: list[int], attention_share: Callable[[Feeds], float]
) -> Sweep:
    """Latency by sequence length (batch 1) with the share of time in attention nodes at each length."""

    def measure(length: int) -> ScalingPoint:
        feeds = feeds_for(length)
        return timed_point(session, feeds, length, 1, {"attention_share": attention_share(feeds)})

    return sweep("sequence", lengths, measure)
