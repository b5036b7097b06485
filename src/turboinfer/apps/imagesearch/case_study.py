"""The flagship case study: the same image search served three ways, measured end to end over HTTP.

seed-style baseline (ResNet-152, PyTorch eager FP32, Pillow full decode, batch 1) · same-model baseline
(EfficientNet-Lite0 the same way) · optimized (the variant `turboinfer optimize` chose, the fast data path,
dynamic batching). Each runs in its own server process; the load generator drives POST /v1/search.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.apps.imagesearch.index import GalleryIndex, IndexConfig, IndexReport, build_index, gallery_files
from turboinfer.apps.imagesearch.recall import RecallReport, evaluate_recall
from turboinfer.bench.loadgen import LoadResult, open_loop, rate_sweep
from turboinfer.bench.requests import Request
from turboinfer.core.errors import InvalidInput
from turboinfer.core.settings import Settings
from turboinfer.models.augment import augmented_set
from turboinfer.models.variant import Variant, parse_variant, save_variant

STAGES = ("decode", "embed", "search", "http")


@dataclass(frozen=True)
class Contender:
    """One way of serving the search: what embeds (served and indexed), how photos are decoded, batching."""

    label: str
    description: str
    serve_model: str
    index_model: str
    preprocess: str
    max_batch: int
    max_delay_ms: float

    @property
    def slug(self) -> str:
        """The label as a file-name part."""
        return self.label.replace(" ", "-")


@dataclass(frozen=True)
class CaseStudyConfig:
    """Load and quality settings; quick shortens every step (tests)."""

    p99_target_s: float = 1.0
    quick: bool = False
    pca: int = 256
    baseline_model: str = "resnet152"
    model: str = "efficientnet-lite0"

    @property
    def step_seconds(self) -> float:
        """Length of one load step of the rate sweep."""
        return 1.0 if self.quick else 8.0

    @property
    def min_requests(self) -> int:
        """Fewest requests one load step sends (slow contenders get longer steps)."""
        return 6 if self.quick else 30

    @property
    def samples(self) -> int:
        """Sequential queries for the stage breakdown; recall queries are 8× this."""
        return 4 if self.quick else 25


def contenders(optimized_variant_path: Path, config: CaseStudyConfig) -> list[Contender]:
    """The three ways, slowest first (the first one's sustainable rate is the reference load)."""
    return [
        Contender("seed baseline", f"{config.baseline_model} PyTorch eager FP32, Pillow full decode, batch 1",
                  f"{config.baseline_model}@torch", config.baseline_model, "baseline", 1, 0.0),
        Contender("same-model baseline", f"{config.model} PyTorch eager FP32, Pillow full decode, batch 1",
                  f"{config.model}@torch", config.model, "baseline", 1, 0.0),
        Contender("optimized", "optimize's chosen variant, fast data path, dynamic batching (max 8, 2 ms)",
                  str(optimized_variant_path), str(optimized_variant_path), "fast", 8, 2.0),
    ]  # fmt: skip


@dataclass
class ContenderResult:
    """Everything measured for one contender."""

    contender: Contender
    index: IndexReport
    recall: RecallReport
    stages_ms: dict[str, float]
    """Median milliseconds per stage (STAGES), one query at a time."""
    sustainable_qps: float | None = None
    sweep: list[LoadResult] = field(default_factory=list)
    at_reference_rate: LoadResult | None = None

    def reference_p99_s(self) -> float | None:
        """p99 latency at the reference rate, when it was measured."""
        return self.at_reference_rate.percentile(99) if self.at_reference_rate else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"contender": asdict(self.contender), "index": self.index.to_dict(), "recall": self.recall.to_dict(),
                "stages_ms": self.stages_ms, "sustainable_qps": self.sustainable_qps,
                "sweep": [r.to_dict() for r in self.sweep],
                "at_reference_rate": self.at_reference_rate.to_dict() if self.at_reference_rate else {}}  # fmt: skip


@dataclass
class CaseStudyResult:
    """The three contenders, the reference load and the goals' ratios."""

    config: CaseStudyConfig
    results: list[ContenderResult]
    reference_rate: float | None = None

    def ratios(self) -> dict[str, float | None]:
        """The issue's goals: QPS and p99 ratios of optimized vs each baseline; recall@10 gap in points."""
        seed, same, best = self.results

        def ratio(a: float | None, b: float | None) -> float | None:
            return a / b if a and b else None

        return {
            "qps_vs_seed": ratio(best.sustainable_qps, seed.sustainable_qps),
            "qps_vs_same_model": ratio(best.sustainable_qps, same.sustainable_qps),
            "p99_seed_over_optimized": ratio(seed.reference_p99_s(), best.reference_p99_s()),
            "recall10_gap_points": 100 * (same.recall.with_pca.at_10 - best.recall.with_pca.at_10),
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"config": asdict(self.config), "reference_rate": self.reference_rate, "ratios": self.ratios(),
                "results": [r.to_dict() for r in self.results]}  # fmt: skip


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def search_process(index: Path, contender: Contender, log: Path, timeout_s: float = 180.0) -> Iterator[str]:
    """`turboinfer search serve` for one contender in its own process (its stderr into log); yields its URL once
    ready; SIGTERM after."""
    port = free_port()
    command = [sys.executable, "-m", "turboinfer.cli.main", "search", "serve", str(index), "--port", str(port),
               "--model", contender.serve_model, "--preprocess", contender.preprocess,
               "--max-batch", str(contender.max_batch), "--max-delay-ms", str(contender.max_delay_ms)]  # fmt: skip
    with log.open("wb") as errors:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while not ready(url):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace").strip()[-500:]
                raise InvalidInput(f"search server for {contender.label} did not start: {tail}")
            time.sleep(0.2)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def ready(url: str) -> bool:
    """Whether the server answers its readiness probe with 200."""
    try:
        with urllib.request.urlopen(f"{url}/v2/health/ready", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def stage_breakdown(url: str, queries: list[Request]) -> dict[str, float]:
    """Median ms per stage over sequential queries: the server's own timings plus HTTP/framework overhead."""
    rows = []
    for query in queries:
        begin = time.perf_counter()
        request = urllib.request.Request(f"{url}/v1/search", query.body, query.headers, method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:
            timings = json.loads(response.read())["timings_ms"]
        round_trip = (time.perf_counter() - begin) * 1000
        rows.append([timings["decode"], timings["embed"], timings["search"], round_trip - timings["total"]])
    return dict(zip(STAGES, np.median(np.asarray(rows), axis=0).round(3).tolist(), strict=True))


def query_requests(gallery: Path, count: int, seed: int = 7) -> list[Request]:
    """Augmented copies of gallery photos (crop, flip, jitter, re-compression) as search requests."""
    photos, _ = gallery_files(gallery)
    picks = np.random.default_rng(seed).choice(len(photos), size=min(count, len(photos)), replace=False)
    return [Request(a.jpeg, {"Content-Type": "image/jpeg"})
            for a in augmented_set([photos[i] for i in picks], len(picks), seed=seed)]  # fmt: skip


def run_case_study(
    gallery: Path, optimized: Variant, out: Path, config: CaseStudyConfig, settings: Settings,
    step: Callable[[str], None] = lambda _: None,
) -> CaseStudyResult:  # fmt: skip
    """Index, check recall, then load each contender's server; the seed baseline's capacity is the reference."""
    out.mkdir(parents=True, exist_ok=True)
    ways = contenders(save_variant(optimized, out / "optimized.variant.json"), config)
    queries = query_requests(gallery, 32)
    study = CaseStudyResult(config, [])
    for way in ways:
        folder = out / f"index-{way.slug}"
        shutil.rmtree(folder, ignore_errors=True)  # index from scratch: indexing throughput is measured too
        step(f"{way.label}: indexing the gallery")
        index_variant = parse_variant(way.index_model, settings)
        report = build_index(gallery, folder, index_variant, IndexConfig(pca=config.pca))
        step(f"{way.label}: retrieval recall")
        gallery_index = GalleryIndex(folder)
        recall = evaluate_recall(gallery_index, index_variant, queries=8 * config.samples)
        gallery_index.close()
        with search_process(folder, way, out / f"server-{way.slug}.log") as url:
            step(f"{way.label}: stage breakdown")
            result = ContenderResult(way, report, recall, stage_breakdown(url, queries[: config.samples]))
            step(f"{way.label}: finding the sustainable rate")
            start = max(0.5, 500 / sum(result.stages_ms.values()))  # half the one-at-a-time capacity
            result.sustainable_qps, result.sweep = asyncio.run(sweep(f"{url}/v1/search?k=10", queries, config, start))
            if way is ways[0]:
                study.reference_rate = result.sustainable_qps
            if study.reference_rate:
                step(f"{way.label}: latency at the reference rate")
                duration = max(config.step_seconds, config.min_requests / study.reference_rate)
                reference = open_loop(f"{url}/v1/search?k=10", queries, study.reference_rate, duration)
                result.at_reference_rate = asyncio.run(reference)
        study.results.append(result)
    return study


async def sweep(
    url: str, queries: list[Request], config: CaseStudyConfig, start: float
) -> tuple[float | None, list[LoadResult]]:
    """The highest open-loop rate whose p99 meets the target (doubling from start, then bisection)."""
    return await rate_sweep(url, queries, config.p99_target_s, start_rate=start, step_seconds=config.step_seconds,
                            refine_steps=1 if config.quick else 3, min_requests=config.min_requests)  # fmt: skip
