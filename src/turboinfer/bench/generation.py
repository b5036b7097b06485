"""Two generators interleaved round by round on llama-bench's figures (llm.speed: pp and tg), with
paired ratios and a verdict, and a history row per run."""

from __future__ import annotations

from typing import Any

import numpy as np

from turboinfer.llm.prose import Prose
from turboinfer.llm.speed import GenBench, GenBenchConfig, one_round
from turboinfer.measure.stats import PairedRatio, paired_ratio_ci
from turboinfer.runtime.llm.generate import Generator


def ab_generators(
    a: tuple[str, Generator], b: tuple[str, Generator], config: GenBenchConfig
) -> tuple[GenBench, GenBench, dict[str, PairedRatio]]:
    """A and B interleaved round by round (alternating which goes first); paired ratios of B's tokens/s over A's
    for pp and each tg depth."""
    benches = [GenBench(a[0], describe=a[1].describe()), GenBench(b[0], describe=b[1].describe())]
    proses = [Prose(a[1]), Prose(b[1])]
    warm = GenBenchConfig(64, 4, (min(config.depths),), 1)
    for i, (_, generator) in enumerate((a, b)):
        one_round(generator, proses[i], warm, GenBench("warm-up"))
    for round_ in range(config.repeats):
        order = (0, 1) if round_ % 2 == 0 else (1, 0)
        for i in order:
            one_round((a, b)[i][1], proses[i], config, benches[i])
    ratios = {"pp": paired_ratio_ci(np.array(benches[0].pp), np.array(benches[1].pp))}
    for depth in config.depths:
        ratios[f"tg@{depth}"] = paired_ratio_ci(np.array(benches[0].tg[depth]), np.array(benches[1].tg[depth]))
    return benches[0], benches[1], ratios


def verdict(ratio: PairedRatio, threshold: float = 0.02) -> str:
    """ "B faster", "B slower" or "no difference" for a tokens/s ratio B/A."""
    if ratio.ci[0] > 1 + threshold or (ratio.ci[0] > 1 and ratio.ratio > 1 + threshold):
        return "B faster"
    if ratio.ci[1] < 1 - threshold or (ratio.ci[1] < 1 and ratio.ratio < 1 - threshold):
        return "B slower"
    return "no difference"


def history_row(bench: GenBench, model: str, config: GenBenchConfig) -> dict[str, Any]:
    """A bench result in the form bench.history.record stores: per-token decode time at the first depth as the
    latency, decode tokens/s as the throughput."""
    tg = bench.tg[config.depths[0]]
    per_token = [1 / v for v in tg]
    return {"variant": {"model_name": model, "label": bench.label, **bench.describe,
                        "backend": bench.describe.get("engine", "?"), "bench": f"tg{config.generate}"},
            "batch": 1, "latency": {"median": float(np.median(per_token)), "p99": float(np.percentile(per_token, 99))},
            "throughput": float(np.median(tg)), "samples_s": per_token}  # fmt: skip
