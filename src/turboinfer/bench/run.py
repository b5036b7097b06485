"""`turboinfer bench`: one variant, an interleaved A/B, or HTTP load; results stored in history and gated."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from turboinfer.bench import history
from turboinfer.bench.ab import ABResult, BenchConfig, BenchResult, bench_ab, bench_single
from turboinfer.bench.loadgen import LoadResult, check_reachable, closed_loop, open_loop, rate_sweep
from turboinfer.bench.requests import Request, image_requests, v2_binary_request, v2_json_request
from turboinfer.core.errors import InvalidInput
from turboinfer.core.settings import Settings
from turboinfer.hardware.capsule import environment_capsule
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import Variant, sample_feeds


@dataclass(frozen=True)
class BenchOutcome:
    """A single or A/B bench, the history ids it was stored under, and the gate's decision if asked."""

    single: BenchResult | None
    ab: ABResult | None
    run_ids: tuple[int, ...]
    gate: history.GateResult | None
    environment: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the schema shared with profile: seconds, environment capsule)."""
        return {
            "kind": "ab" if self.ab else "single",
            "result": self.ab.to_dict() if self.ab else self.single.to_dict() if self.single else None,
            "history_run_ids": list(self.run_ids),
            "gate": None if self.gate is None else {
                "baseline": self.gate.baseline, "ratio": self.gate.ratio.ratio, "ci95": list(self.gate.ratio.ci),
                "threshold": self.gate.threshold, "failed": self.gate.failed, "message": self.gate.message},
            "environment": self.environment,
        }  # fmt: skip


def run_bench(
    a: Variant, b: Variant | None, config: BenchConfig, history_path: Path | None,
    baseline: int | None = None, fail_if_slower: float = 0.05,
) -> BenchOutcome:  # fmt: skip
    """Measure, store every result in history (when a path is given), then apply the regression gate.

    The baseline is looked up before anything is measured or stored, so a wrong id costs nothing.
    """
    if baseline is not None and history_path is None:
        raise InvalidInput("--baseline needs a history file")
    baseline_run = history.get_run(history_path, baseline) if baseline is not None and history_path else None
    environment = environment_capsule(settings={"batch": config.batch, "duration": config.duration})
    ab, single = (bench_ab(a, b, config), None) if b is not None else (None, bench_single(a, config))
    results = [ab.a, ab.b] if ab else [single] if single else []
    measured = results[-1]  # B in an A/B: the candidate the gate judges
    ids = tuple(history.record(history_path, r.to_dict(), environment) for r in results) if history_path else ()
    gate = None
    if baseline_run is not None:
        gate = history.regression_gate(baseline_run, np.asarray(measured.samples_s), fail_if_slower)
    return BenchOutcome(single, ab, ids, gate, environment)


BodyKind = Literal["image", "v2-json", "v2-binary"]


@dataclass(frozen=True)
class LoadRequest:
    """An HTTP load run: open loop at `rate`, closed loop with `concurrency`, or a sweep to a p99 target."""

    url: str
    body: BodyKind = "image"
    rate: float | None = None
    concurrency: int | None = None
    p99_target_s: float | None = None
    duration: float = 10.0
    variant: Variant | None = None
    """Model whose input shapes the V2 bodies follow."""
    photos: tuple[Path, ...] = field(default_factory=tuple)


def request_bodies(request: LoadRequest, settings: Settings) -> list[Request]:
    """Bodies from real inputs: photos for image endpoints, real-shaped tensors for V2 endpoints."""
    if request.body == "image":
        return image_requests(list(request.photos) or all_photos(settings)[:32])
    if request.variant is None:
        raise InvalidInput("V2 bodies need --model to know the input tensors")
    feeds = sample_feeds(request.variant.card)
    return [v2_json_request(feeds) if request.body == "v2-json" else v2_binary_request(feeds)]


async def run_load_async(request: LoadRequest, bodies: list[Request]) -> tuple[list[LoadResult], float | None]:
    """Reachability first, then the run(s)."""
    await check_reachable(request.url)
    if request.p99_target_s is not None:
        best, tried = await rate_sweep(request.url, bodies, request.p99_target_s, step_seconds=request.duration)
        return tried, best
    if request.concurrency is not None:
        return [await closed_loop(request.url, bodies, request.concurrency, request.duration)], None
    if request.rate is not None:
        return [await open_loop(request.url, bodies, request.rate, request.duration)], None
    raise InvalidInput("give --rate (open loop), --concurrency (closed loop) or --p99-target (rate sweep)")


def run_load(request: LoadRequest, settings: Settings) -> tuple[list[LoadResult], float | None]:
    """Run the load and return every step's result and, for a sweep, the best passing rate."""
    return asyncio.run(run_load_async(request, request_bodies(request, settings)))
