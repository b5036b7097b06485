"""Execute a Plan: build each candidate (cached), check it against the original on real inputs, time it
interleaved with the original, and choose the fastest one inside the budget — explaining every decision."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import TurboinferError
from turboinfer.core.settings import Settings
from turboinfer.core.types import ImagePreprocess
from turboinfer.hardware.probe import probe_cpu
from turboinfer.models.catalog import resolve_model
from turboinfer.models.variant import Variant
from turboinfer.optimize.accuracy import Budget, breach, judged_by, label_accuracy, load_user_metric, warning
from turboinfer.optimize.culprit import CulpritSearch, find_culprits, static_int8_candidates, with_float_nodes
from turboinfer.optimize.data import count, feeds, input_sets, labelled_crops
from turboinfer.optimize.decide import decide
from turboinfer.optimize.evaluate import Reference, Runner, batches, run_all
from turboinfer.optimize.passes import make_pass
from turboinfer.optimize.passes.base import PassContext, apply_pass, model_bytes
from turboinfer.optimize.passes.quantize import rank_nodes
from turboinfer.optimize.plan import Candidate, Outcome, Plan
from turboinfer.optimize.search import RefineSpace, make_strategy, space_for
from turboinfer.runtime.session import Session, SessionOptions

Progress = Callable[[str, int], None]
"""Called with each candidate's label and how many candidates are done."""


@dataclass
class OptimizeResult:
    """Every outcome, the chosen one, and what the run found on the way."""

    plan: Plan
    outcomes: list[Outcome]
    chosen: Outcome
    inputs: dict[str, Any]
    machine: dict[str, Any]
    seconds: float
    culprits: CulpritSearch | None = None
    true_top1: dict[str, float] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)

    @property
    def budget_met(self) -> bool:
        """True when some optimized candidate fit the budget (the chosen one may still be the original)."""
        return any(
            o.status in ("chosen", "not chosen") for o in self.outcomes if o.candidate.steps or o.candidate.model
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the decision log)."""
        culprits = self.culprits.to_dict() if self.culprits else None
        return {
            "plan": self.plan.to_dict(), "chosen": self.chosen.to_dict(),
            "outcomes": [o.to_dict() for o in self.outcomes], "inputs": self.inputs, "machine": self.machine,
            "seconds": self.seconds, "culprits": culprits, "true_top1": self.true_top1, "files": self.files,
            "budget_met": self.budget_met,
        }  # fmt: skip


class Optimizer:
    """One run's state: the original, its reference outputs, the pass context."""

    def __init__(self, plan: Plan, settings: Settings) -> None:
        self.plan, self.settings = plan, settings
        self.card = resolve_model(plan.model, settings, Path(plan.tokenizer) if plan.tokenizer else None)
        self.cpu = probe_cpu()
        self.base = SessionOptions(intra_threads=self.cpu.usable_cpus)
        self.sets = input_sets(
            self.card, settings, Path(plan.inputs) if plan.inputs else None, plan.n_calibration, plan.n_evaluation,
            plan.sequence, Path(plan.label_map) if plan.label_map else None,
        )  # fmt: skip
        self.budget = replace(
            Budget.from_drop(plan.budget, plan.metric_min, plan.budget_points), decisive=plan.decisive
        )
        user = load_user_metric(plan.metric) if plan.metric else None
        original = Variant(self.card, "ort", self.base).open()
        self.reference = Reference(self.card, original, self.sets, user, plan.output, plan.decisive)
        n_tuning = count(self.sets.calibration)
        self.context = PassContext(
            cache_dir=settings.cache_dir / "optimize",
            calibration=lambda card, size: batches(card, self.sets.calibration, size),
            calibration_key=data_key(self.sets.calibration),
            tuning=lambda card: [feeds(card, self.sets.calibration, i, i + 1) for i in range(n_tuning)],
            item_score=self.reference.item_score,
            max_calibration_batch=plan.calibration_batch,
        )
        self.original = Candidate((), "ort", self.base)

    def build(self, candidate: Candidate) -> ModelCard:
        """The candidate's model after its passes (each cached by content)."""
        card = resolve_model(candidate.model, self.settings) if candidate.model else self.card
        for step in candidate.steps:
            card = apply_pass(make_pass(step.name, step.config), card, self.context)
        return card

    def open(self, candidate: Candidate) -> tuple[ModelCard, Session]:
        """Build and open a candidate."""
        card = self.build(candidate)
        return card, Variant(card, candidate.backend, candidate.options).open()

    def measure(self, candidate: Candidate) -> Outcome:
        """Fidelity on the evaluation inputs and interleaved timing against the original."""
        outcome = Outcome(candidate)
        start = time.perf_counter()
        try:
            card, session = self.open(candidate)
            outcome.build_s = time.perf_counter() - start
            outcome.card_path, outcome.size_bytes = str(card.source), model_bytes(card)
            outcome.precision = str(session.describe().get("precision", ""))
            result = self.reference.fidelity(session, card)
        except Exception as err:  # a library failed on this model: the candidate is out, the search goes on
            return outcome.with_status("failed", failure_message(err))
        outcome.fidelity = result.metrics
        outcome.judged, outcome.judged_by = result.judged, judged_by(result, self.budget)
        outcome.warning = warning(result, self.budget)
        batch = candidate.batch or self.plan.batch
        timed = self.reference.compare(
            self.reference.original(self.plan.batch), Runner(session, card, batch), self.plan.seconds_per_candidate
        )
        outcome.median_s, outcome.p99_s = timed.median_s, timed.p99_s
        outcome.ratio, outcome.ratio_ci = timed.ratio.ratio, timed.ratio.ci
        reason = breach(result, self.budget) or self.over_target(timed.p99_s)
        if candidate == self.original:
            return outcome.with_status("original", "the reference every candidate is measured against")
        return (
            outcome.with_status("rejected", f"rejected: {reason}") if reason else outcome.with_status("not chosen", "")
        )

    def over_target(self, p99_s: float) -> str | None:
        """Why a p99 breaks the plan's latency target, or None."""
        target = self.plan.p99_target_ms
        return f"p99 {p99_s * 1e3:.1f} ms > target {target:g} ms" if target and p99_s * 1e3 > target else None

    def tuning_metric(self, candidate: Candidate) -> float:
        """The budget's main metric on the tuning (calibration) split, for the culprit search."""
        card, session = self.open(candidate)
        return self.reference.fidelity(session, card, tuning=True).primary

    def culprits(self, outcomes: list[Outcome]) -> tuple[Outcome | None, CulpritSearch | None]:
        """Run the culprit finder on the fastest ORT static-INT8 candidate that broke the budget."""
        rows = [(o.candidate, o.ratio, o.status != "rejected") for o in outcomes if o.status != "failed"]
        broken = static_int8_candidates(rows)
        if broken is None:
            return None, None
        least = self.budget.top1_agreement if self.reference.task == "classify" else self.budget.cosine_mean
        try:
            float_card = self.build(replace(broken, steps=broken.steps[:-1]))
            probe = list(batches(float_card, self.sets.calibration, 8))[:4]
            ranked = rank_nodes(float_card, self.build(broken), probe)
            search = find_culprits(broken, ranked, self.tuning_metric, least)
        except Exception as err:  # the culprit search is advice: its failure must not end the search
            return None, CulpritSearch(broken.label, error=failure_message(err))
        if not search.nodes:
            return None, search
        outcome = self.measure(with_float_nodes(broken, search.nodes))
        outcome.reason = (outcome.reason + "; " if outcome.reason else "") + (
            f"culprit finder: {len(search.culprits)} of {len(ranked)} quantized nodes kept in float "
            f"({len(search.nodes)} excluded with their producers)"
        )
        return outcome, search

    def true_top1(self, chosen: Outcome) -> dict[str, float]:
        """True top-1 of the original and the chosen variant on the labelled ImageNet photos."""
        spec = self.card.preprocess
        if self.card.task != "classify" or self.card.provenance.timing_only or not isinstance(spec, ImagePreprocess):
            return {}
        crops, labels = labelled_crops(spec)
        scores = {}
        for name, candidate in (("original", self.original), ("chosen", chosen.candidate)):
            card, session = self.open(candidate)
            logits = run_all(session, card, crops)[card.outputs[0].name]
            scores[name] = label_accuracy(logits, labels[: len(logits)])
        return scores


def failure_message(err: Exception) -> str:
    """One line for a failed candidate: our own message, or the library's first line with its type."""
    if isinstance(err, TurboinferError):
        return str(err)
    first = (str(err).splitlines() or [""])[0]
    return f"{type(err).__name__}: {first[:300]}"


def data_key(items: Any) -> str:
    """A short hash of the calibration data (part of the cache key of calibrating passes)."""
    digest = hashlib.sha256()
    for array in items.values() if isinstance(items, dict) else [items]:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]


def run(plan: Plan, settings: Settings, progress: Progress | None = None) -> OptimizeResult:
    """Search the plan's space and return every outcome with the chosen one (see decide for the rule)."""
    start = time.perf_counter()
    plan = plan.checked()
    optimizer = Optimizer(plan, settings)
    candidates, skipped = space_for(optimizer.card, optimizer.cpu, plan)
    batches_to_try = (max(1, plan.batch // 2), plan.batch * 2) if plan.objective == "throughput" else ()
    image = isinstance(optimizer.card.preprocess, ImagePreprocess)
    strategy = make_strategy(plan, candidates, RefineSpace(optimizer.cpu, image, batches_to_try))
    outcomes = [Outcome(s.candidate, "skipped", s.reason) for s in skipped]
    while (candidate := strategy.ask()) is not None:
        if progress:
            progress(candidate.label, len(outcomes))
        outcome = optimizer.measure(candidate)
        strategy.tell(outcome)
        outcomes.append(outcome)
    culprit_report = None
    if plan.culprits:
        if progress:
            progress("culprit finder", len(outcomes))
        found, culprit_report = optimizer.culprits(outcomes)
        outcomes += [found] if found else []
    chosen = decide(outcomes, plan.threshold, lambda a, b: head_to_head(optimizer, a, b))
    return OptimizeResult(
        plan=plan, outcomes=outcomes, chosen=chosen, inputs=optimizer.sets.to_dict(),
        machine={"cpu": optimizer.cpu.model, "isa": list(optimizer.cpu.isa), "usable_cpus": optimizer.cpu.usable_cpus},
        seconds=time.perf_counter() - start, culprits=culprit_report, true_top1=optimizer.true_top1(chosen),
    )  # fmt: skip


def head_to_head(optimizer: Optimizer, first: Outcome, second: Outcome) -> tuple[float, tuple[float, float]]:
    """Time per item of second over first, interleaved (both reopened from the cache)."""
    runners = []
    for outcome in (first, second):
        card, session = optimizer.open(outcome.candidate)
        runners.append(Runner(session, card, outcome.candidate.batch or optimizer.plan.batch))
    timed = optimizer.reference.compare(runners[0], runners[1], optimizer.plan.seconds_per_candidate)
    return timed.ratio.ratio, timed.ratio.ci
