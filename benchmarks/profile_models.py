"""`turboinfer profile` on the three reference models: the tool's own wall time, its stage/roofline summary, and
the ONNX Runtime profiler's overhead on model latency (interleaved, with and without profiling).

Run: .venv/bin/python benchmarks/profile_models.py > out/profile.md
(Not "profile.py": a script folder comes first on sys.path, and that name would shadow the standard library's
`profile` module, which torch imports through cProfile.)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from turboinfer.core.settings import Settings
from turboinfer.measure.stats import paired_ratio_ci
from turboinfer.measure.timer import interleave
from turboinfer.models.catalog import resolve_model
from turboinfer.models.variant import sample_feeds
from turboinfer.profile.run import ProfileRequest, profile_model

MODELS = ("efficientnet-lite0", "minilm-l6", "resnet152")


def profiler_overhead(path: Path, feeds: dict[str, np.ndarray], seconds: float = 30.0) -> str:
    """Median latency ratio profiled / plain, same process, alternating which runs first each round (an idle
    session's spinning threads slow whichever runs right after it)."""
    plain = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(tmp) / "p")
        profiled = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        start = time.perf_counter()
        for session in (plain, profiled):
            session.run(None, feeds)
        rounds = max(40, min(300, int(seconds / max(time.perf_counter() - start, 1e-4))))
        samples = interleave(
            {"plain": lambda: plain.run(None, feeds), "profiled": lambda: profiled.run(None, feeds)}, rounds
        )
        profiled.end_profiling()
    ratio = paired_ratio_ci(samples["plain"], samples["profiled"])
    return f"{ratio.ratio:.3f} ({ratio.ci[0]:.3f}–{ratio.ci[1]:.3f})"


def main() -> None:
    """Profile each model with the default sweeps and print one summary row each."""
    settings = Settings.from_env(os.environ)
    print(f"Command: `{' '.join(sys.argv)}`\n")
    print(
        "| model | profile wall time, s | model p50 ms | end-to-end p50 ms | top stage | GFLOP | FLOP/byte "
        "| bound | attained / ceiling GFLOP/s | top recommendation | profiler overhead (profiled/plain, 95% CI) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in MODELS:
        card = resolve_model(name, settings)
        request = ProfileRequest(pipeline="none") if name == "resnet152" else ProfileRequest()
        start = time.perf_counter()
        report = profile_model(card, request, settings)
        wall = time.perf_counter() - start
        pipeline = report.pipeline
        top = max(pipeline.stages, key=lambda s: s.share) if pipeline else None
        whole = report.whole_model
        rec = report.recommendations[0].action if report.recommendations else "—"
        print(
            f"| {name} | {wall:.0f} | {report.model_latency.median * 1e3:.1f} "
            f"| {pipeline.end_to_end.median * 1e3:.1f} | {top.name} {top.share:.0%} |" if pipeline and top else
            f"| {name} | {wall:.0f} | {report.model_latency.median * 1e3:.1f} | — | — |",
            end="",
        )  # fmt: skip
        roof = (f" {whole.flops / 1e9:.2f} | {whole.flops / whole.bytes:.1f} | {whole.bound} "
                f"| {whole.attained_gflops or 0:.0f} / {whole.ceiling_gflops:.0f} |"
                if whole else " — | — | — | — |")  # fmt: skip
        print(f"{roof} {rec} | {profiler_overhead(card.onnx_path, sample_feeds(card))} |")


if __name__ == "__main__":
    main()
