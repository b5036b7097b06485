"""The optimizer's claims, measured side by side → a markdown section for docs/benchmarks.md.

Run: .venv/bin/python benchmarks/optimize.py [effnet|minilm|resnet152 ...] > out/optimize.md
- effnet: the full default search at batch 1 (timed, then rerun from the cache) and at batch 8 (throughput);
  the chosen variant interleaved with the fastest naive INT8 variant and PyTorch eager FP32.
- minilm: the search at batch 1 and 16 (sequence 128, budget 0.5%) against ORT FP32 and the off-the-shelf
  OpenVINO BF16 / NNCF INT8 variants.
- resnet152 (random weights, timing only): eager → ORT FP32 → ORT INT8 → OpenVINO INT8, interleaved.
- peers: EfficientNet-Lite0, turboinfer's default choice against NNCF's `quantize` called as its documentation
  shows (OpenVINO model, the same 128 calibration crops, default settings, compiled with no hints), same
  evaluation inputs: speed interleaved, decisive and overall top-1 agreement, true top-1 on the labelled photos.
- own: ONNX models that are not in the zoo (torchvision exports and a recurrent text model, random weights)
  through the default search with no card: the chosen variant and its speed-up each.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.settings import Settings
from turboinfer.core.types import ImagePreprocess
from turboinfer.hardware.probe import probe_cpu
from turboinfer.measure.fidelity import classify_metrics
from turboinfer.measure.stats import paired_ratio_ci
from turboinfer.measure.timer import interleave
from turboinfer.models.catalog import build_zoo_model, open_eager, resolve_model
from turboinfer.models.variant import Variant, sample_feeds
from turboinfer.optimize.accuracy import label_accuracy
from turboinfer.optimize.data import feeds, labelled_crops
from turboinfer.optimize.evaluate import run_all
from turboinfer.optimize.passes import make_pass
from turboinfer.optimize.passes.base import PassContext, apply_pass
from turboinfer.optimize.plan import Candidate, Outcome, Plan
from turboinfer.optimize.run import Optimizer, OptimizeResult, run
from turboinfer.runtime.session import Session, SessionOptions


def log(message: str) -> None:
    """Progress on stderr (stdout is the markdown)."""
    print(message, file=sys.stderr, flush=True)


def model_progress(model: str, label: str, done: int) -> None:
    """One optimize candidate of one of several models, logged."""
    log(f"  {model} [{done + 1}] {label}")


def outcome_table(result: OptimizeResult) -> None:
    """Every candidate of a search as a markdown table."""
    judged = next((o.judged_by for o in result.outcomes if o.judged_by), "")
    print(f"Judged by {judged}.\n")
    print("| candidate | status | speed-up vs original (95% CI) | judged metric (overall top-1) | precision | reason |")
    print("| --- | --- | --- | --- | --- | --- |")
    for o in result.outcomes:
        speed = (
            f"{1 / o.ratio:.2f}× ({1 / o.ratio_ci[1]:.2f}–{1 / o.ratio_ci[0]:.2f})" if o.ratio and o.ratio_ci else "—"
        )
        fid = f"{o.fidelity[o.judged]:.4f}" if o.judged in o.fidelity else "—"
        extra = f", min {o.fidelity['cosine_min']:.4f}" if "cosine_min" in o.fidelity else ""
        extra += f" ({o.fidelity['top1_agreement']:.3f})" if "decisive_agreement" in o.fidelity else ""
        print(f"| {o.candidate.label} | {o.status} | {speed} | {fid}{extra} | {o.precision} | {o.reason} |")
    print()


def race(sessions: dict[str, tuple[Session, dict[str, np.ndarray]]], seconds: float, batch: int) -> None:
    """Interleave sessions on their own inputs; print medians and ratios against the first, per item."""
    calls: dict[str, Callable[[], object]] = {name: functools.partial(s.run, f) for name, (s, f) in sessions.items()}
    for call in calls.values():
        for _ in range(3):
            call()
    samples = interleave(calls, rounds=100_000, max_seconds=seconds, min_rounds=15)
    names = list(samples)
    print(f"| variant | median ms (batch {batch}) | items/s | time vs {names[0]} (95% CI) |")
    print("| --- | --- | --- | --- |")
    for name in names:
        ratio = paired_ratio_ci(samples[names[0]], samples[name])
        median = float(np.median(samples[name]))
        print(f"| {name} | {median * 1e3:.2f} | {batch / median:.1f} | "
              f"{ratio.ratio:.2f} ({ratio.ci[0]:.2f}–{ratio.ci[1]:.2f}) |")  # fmt: skip
    print(f"\n{len(samples[names[0]])} interleaved rounds.\n")


def opened(optimizer: Optimizer, candidate: Candidate, batch: int) -> tuple[Session, dict[str, np.ndarray]]:
    """A session of a candidate with a real input batch."""
    card, session = optimizer.open(candidate)
    return session, feeds(card, optimizer.sets.evaluation, 0, batch)


def fastest(result: OptimizeResult, step_names: tuple[str, ...]) -> Outcome | None:
    """The fastest measured candidate whose last step is one of step_names (naive variants, budget ignored)."""
    rows = [o for o in result.outcomes if o.ratio and o.candidate.steps and o.candidate.steps[-1].name in step_names]
    rows = [o for o in rows if not o.candidate.steps[-1].config.get("exclude_nodes")]
    return min(rows, key=lambda o: o.ratio or 1.0) if rows else None


def search(settings: Settings, plan: Plan, eager: bool) -> None:
    """One search, its table, and the chosen variant raced against the fastest naive variant and eager."""
    start = time.perf_counter()
    result = run(plan, settings, progress=lambda label, done: log(f"  [{done + 1}] {label}"))
    first = time.perf_counter() - start
    print(f"Search: {len(result.outcomes)} candidates in {first:.0f} s", end="")
    start = time.perf_counter()
    run(replace(plan, culprits=False), settings)
    print(f"; rerun from the cache (without the culprit search) {time.perf_counter() - start:.0f} s.\n")
    print(f"Inputs: {result.inputs}\n")
    outcome_table(result)
    if result.culprits:
        trials = ", ".join(f"{t.float_nodes} ({t.excluded} excluded) → {t.metric:.3f}"
                           for t in result.culprits.trials)  # fmt: skip
        print(f"Culprit finder on {result.culprits.candidate}: culprits kept in float → tuning metric: {trials}.\n")
    if result.true_top1:
        print(f"True top-1 on foolbox's 20 labelled ImageNet photos: original {result.true_top1['original']:.2f}, "
              f"chosen {result.true_top1['chosen']:.2f}.\n")  # fmt: skip
    print(f"Chosen: **{result.chosen.candidate.label}** — {result.chosen.reason}\n")
    optimizer = Optimizer(replace(plan, n_evaluation=max(plan.batch, 16), n_calibration=16), settings)
    batch = plan.batch
    contestants = {"ORT FP32 (original)": opened(optimizer, optimizer.original, batch)}
    contestants[f"chosen: {result.chosen.candidate.label}"] = opened(optimizer, result.chosen.candidate, batch)
    for names in (("ort-int8-static", "ort-int8-dynamic"), ("nncf-int8",)):
        naive = fastest(result, names)
        if naive is not None:
            contestants[f"naive: {naive.candidate.label} (fidelity {naive.fidelity})"] = opened(
                optimizer, naive.candidate, batch
            )
    bf16 = [o for o in result.outcomes if o.precision == "bf16" and not o.candidate.steps]
    if bf16:
        contestants[f"off the shelf: {bf16[0].candidate.label}"] = opened(optimizer, bf16[0].candidate, batch)
    if eager:
        card = optimizer.card
        contestants["PyTorch eager FP32"] = (open_eager(card, SessionOptions(intra_threads=2)),
                                             feeds(card, optimizer.sets.evaluation, 0, batch))  # fmt: skip
    race(contestants, 20.0, batch)


def resnet_chain(settings: Settings) -> None:
    """Eager → ORT FP32 → ORT INT8 → OpenVINO INT8 on ResNet-152 (random weights), batch 1, interleaved."""
    card = build_zoo_model("resnet152", settings)
    calibration = [sample_feeds(card, 1)["image"] + np.float32(i) / 8 for i in range(8)]  # timing only
    stacked = np.concatenate(calibration)
    context = PassContext(
        settings.cache_dir / "optimize",
        lambda c, size: ({"image": stacked[i : i + size]} for i in range(0, len(stacked), size)),
        calibration_key="resnet152-timing",
    )
    two = SessionOptions(intra_threads=2)
    feed = sample_feeds(card, 1)
    ort_int8 = apply_pass(make_pass("ort-int8-static"), card, context)
    ov_int8 = apply_pass(make_pass("nncf-int8", {"subset_size": 8}), card, context)
    race({
        "PyTorch eager FP32": (open_eager(card, two), feed),
        "ORT FP32": (Variant(card, "ort", two).open(), feed),
        "ORT INT8 (static QDQ)": (Variant(ort_int8, "ort", two).open(), feed),
        "OpenVINO INT8 (NNCF)": (Variant(ov_int8, "openvino", two).open(), feed),
    }, 30.0, 1)  # fmt: skip


class NncfDefault:
    """NNCF's post-training quantization as a user calls it: nncf.quantize(model, nncf.Dataset(inputs)), compiled
    on the CPU without precision hints (a Session for the race)."""

    backend = "openvino"

    def __init__(self, card: ModelCard, calibration: list[dict[str, np.ndarray]]) -> None:
        import nncf
        import openvino as ov

        self.inputs, self.outputs = card.inputs, card.outputs
        model = ov.Core().read_model(str(card.onnx_path))
        name = model.inputs[0].get_any_name()
        quantized = nncf.quantize(model, nncf.Dataset(calibration, lambda feeds: feeds[name]))
        self._compiled = ov.compile_model(quantized, "CPU")
        self.precision = str(self._compiled.get_property("INFERENCE_PRECISION_HINT"))
        self._outputs = [o.get_any_name() for o in self._compiled.outputs]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        result = self._compiled(list(feeds.values()))
        return {name: result[i] for i, name in enumerate(self._outputs)}

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "precision": self.precision}


def peers(settings: Settings) -> None:
    """turboinfer's default choice on EfficientNet-Lite0 against NNCF's default quantize, side by side."""
    result = run(Plan("efficientnet-lite0"), settings, progress=lambda label, done: log(f"  [{done + 1}] {label}"))
    optimizer = Optimizer(Plan("efficientnet-lite0"), settings)
    card = optimizer.card
    calibration = [feeds(card, optimizer.sets.calibration, i, i + 1) for i in range(len(optimizer.sets.calibration))]
    peer = NncfDefault(card, calibration)
    chosen_card, chosen = optimizer.open(result.chosen.candidate)
    rows: dict[str, tuple[Session, ModelCard]] = {
        "turboinfer: " + result.chosen.candidate.label: (chosen, chosen_card),
        "NNCF quantize, defaults": (peer, card),
    }
    assert isinstance(card.preprocess, ImagePreprocess)
    crops, labels = labelled_crops(card.preprocess)
    print(
        "| variant | decisive top-1 agreement (p ≥ 0.5) | top-1 agreement, all | true top-1, 20 labelled | precision |"
    )
    print("| --- | --- | --- | --- | --- |")
    reference = optimizer.reference.evaluation[optimizer.reference.output]
    for label, (session, session_card) in rows.items():
        answers = run_all(session, session_card, optimizer.sets.evaluation)[session_card.outputs[0].name]
        m = classify_metrics(reference, answers)
        truth = label_accuracy(run_all(session, session_card, crops)[session_card.outputs[0].name], labels)
        precision = getattr(session, "precision", result.chosen.precision)
        print(f"| {label} | {m['decisive_agreement']:.3f} ({m['decisive_n']:.0f} inputs) | {m['top1_agreement']:.3f} "
              f"| {truth:.2f} | {precision} |")  # fmt: skip
    print()
    contestants = {"ORT FP32 (original)": opened(optimizer, optimizer.original, 1)}
    contestants.update(
        {label: (session, feeds(c, optimizer.sets.evaluation, 0, 1)) for label, (session, c) in rows.items()}
    )
    race(contestants, 20.0, 1)


def own_models(settings: Settings) -> None:
    """Models a user brings (exported here from torchvision and a small GRU, random weights), no card, defaults."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the exporters live beside the tests
    from tests.support.user_models import recurrent_classifier, torchvision_classifier

    folder = Path(tempfile.mkdtemp(prefix="own-models-"))
    models: dict[str, tuple[Path, str | None]] = {
        name: (torchvision_classifier(name, folder / f"{name}.onnx"), None)
        for name in ("mobilenet_v3_small", "resnet18", "efficientnet_b0")
    }
    tokenizer = str(build_zoo_model("minilm-l6", settings).folder / "tokenizer.json")
    models["gru text classifier"] = (recurrent_classifier(folder / "gru_text.onnx", width=64), tokenizer)
    print("| model (no card) | inferred | chosen | speed-up vs ORT FP32 (95% CI) | judged by |\n" + "| --- " * 5 + "|")
    for name, (path, text_tokenizer) in models.items():
        result = run(
            Plan(str(path), tokenizer=text_tokenizer),
            settings,
            progress=functools.partial(model_progress, name),
        )
        chosen = result.chosen
        speed = (
            f"{1 / chosen.ratio:.2f}× ({1 / chosen.ratio_ci[1]:.2f}–{1 / chosen.ratio_ci[0]:.2f})"
            if chosen.ratio and chosen.ratio_ci
            else "—"
        )
        inferred = resolve_model(str(path), settings).extra["inferred"][0]
        print(f"| {name} | {inferred} | {chosen.candidate.label} | {speed} | {chosen.judged_by} |")
        sys.stdout.flush()
    print()


def main() -> None:
    """Run the chosen parts (default: all) and print markdown."""
    parts = sys.argv[1:] or ["effnet", "minilm", "resnet152", "peers", "own"]
    settings = Settings.from_env(os.environ)
    cpu = probe_cpu()
    print(f"Command: `{' '.join(['benchmarks/optimize.py', *sys.argv[1:]])}`\n")
    print(f"Machine: {cpu.model}, {cpu.usable_cpus} usable CPUs, ISA: {', '.join(cpu.isa)}.\n")
    if "effnet" in parts:
        print("### EfficientNet-Lite0, batch 1, default budget (1%) on 500 augmented real photos\n")
        search(settings, Plan("efficientnet-lite0"), eager=True)
        print("### EfficientNet-Lite0, batch 8, objective throughput\n")
        search(settings, Plan("efficientnet-lite0", objective="throughput", batch=8, culprits=False), eager=True)
    if "minilm" in parts:
        for batch in (1, 16):
            print(f"### all-MiniLM-L6-v2, batch {batch}, sequence 128, budget 0.5% (mean cosine ≥ 0.995, min ≥ 0.99)\n")
            plan = Plan("minilm-l6", budget=0.005, batch=batch, n_evaluation=256, n_calibration=128,
                        objective="throughput" if batch > 1 else "latency")  # fmt: skip
            search(settings, plan, eager=True)
    if "resnet152" in parts:
        print("### ResNet-152 (random weights: timing only), batch 1\n")
        resnet_chain(settings)
    if "peers" in parts:
        print("### Against a peer: NNCF's default quantize on EfficientNet-Lite0, batch 1\n")
        peers(settings)
    if "own" in parts:
        print("### Models a user brings: bare ONNX files, default search, no card\n")
        own_models(settings)


if __name__ == "__main__":
    main()
