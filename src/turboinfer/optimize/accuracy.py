"""The accuracy oracle: the budget a candidate must keep, which metric judges it and why, on the measures of
measure.fidelity (decisive top-1 agreement, true accuracy with labels, cosine) plus an optional user metric.

Used by the optimizer's budget gate and by the tests alike.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidInput
from turboinfer.measure.fidelity import (
    DECISIVE_P,
    classify_metrics,
    embed_metrics,
    label_metrics,
)

Outputs = Mapping[str, np.ndarray]
UserMetric = Callable[[Outputs, Outputs], float]
"""A user's fidelity metric: (reference outputs, candidate outputs) → a number, higher is better."""


MIN_DECISIVE = 30
"""Fewest decisive inputs for decisive agreement to judge; with fewer, overall agreement judges (with a warning)."""


@dataclass(frozen=True)
class Budget:
    """The least fidelity a candidate may keep, from an allowed drop (0.01 = 1%)."""

    drop: float = 0.01
    points: bool = False
    """Labelled inputs: the drop is in accuracy points (1pt) rather than relative to the original's accuracy (1%)."""
    user_min: float | None = None
    """Least value of the user metric, when one is given."""
    decisive: float = DECISIVE_P

    @classmethod
    def from_drop(cls, drop: float, user_min: float | None = None, points: bool = False) -> Budget:
        """A budget allowing `drop`: agreement and mean cosine ≥ 1 − drop, min cosine ≥ 1 − 2·drop, labelled
        accuracy ≥ (1 − drop) × the original's (or ≥ the original's − drop, in points)."""
        if not 0 <= drop < 1:
            raise InvalidInput(f"the budget is an allowed drop between 0% and 100%, got {drop:.4g}")
        return cls(drop, points, user_min)

    @property
    def top1_agreement(self) -> float:
        """Least (decisive) top-1 agreement."""
        return 1 - self.drop

    @property
    def cosine_mean(self) -> float:
        """Least mean cosine."""
        return 1 - self.drop

    @property
    def cosine_min(self) -> float:
        """Least min cosine."""
        return 1 - 2 * self.drop

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**self.__dict__, "top1_agreement": self.top1_agreement, "cosine_mean": self.cosine_mean,
                "cosine_min": self.cosine_min}  # fmt: skip


@dataclass(frozen=True)
class Fidelity:
    """A candidate's fidelity to the original on n evaluation inputs, and which metric judges it."""

    task: str
    n: int
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def judged(self) -> str:
        """The metric the budget is about: labelled accuracy, decisive or overall top-1 agreement, mean cosine."""
        m = self.metrics
        if "accuracy" in m:
            return "accuracy"
        if self.task == "classify":
            return "decisive_agreement" if m.get("decisive_n", 0) >= MIN_DECISIVE else "top1_agreement"
        return "cosine_mean"

    @property
    def primary(self) -> float:
        """The value of the judged metric."""
        return self.metrics[self.judged]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"task": self.task, "n": self.n, **self.metrics, "judged": self.judged}


def judged(card: ModelCard, output: str | None) -> tuple[str, str]:
    """(task, output) the budget judges: the first output as the card's task by default; any other output
    (a classifier's "features") as an embedding."""
    names = [spec.name for spec in card.outputs]
    if output is None or output == names[0]:
        return card.task, names[0]
    if output not in names:
        raise InvalidInput(f"{card.name} has no output {output!r}; its outputs: {', '.join(names)}")
    return "embed", output


def fidelity(
    task: str, reference: Outputs, candidate: Outputs, output: str, user_metric: UserMetric | None = None,
    labels: np.ndarray | None = None, decisive: float = DECISIVE_P,
) -> Fidelity:  # fmt: skip
    """Compare the named output of reference and candidate (same inputs, same order) for the task; with labels
    (a classifier's), true accuracy too."""
    ref, cand = reference[output], candidate[output]
    if ref.shape != cand.shape:
        raise InvalidInput(f"output {output!r} changed shape: {list(ref.shape)} → {list(cand.shape)}")
    metrics = classify_metrics(ref, cand, decisive) if task == "classify" else embed_metrics(ref, cand)
    if task == "classify" and labels is not None:
        metrics.update(label_metrics(ref, cand, labels[: len(ref)]))
    if user_metric is not None:
        metrics["user"] = float(user_metric(reference, candidate))
    return Fidelity(task, len(ref), metrics)


def judged_by(result: Fidelity, budget: Budget) -> str:
    """The judged metric and its threshold in words, e.g. "decisive top-1 agreement ≥ 0.99 (p ≥ 0.5: 143 of 390)"."""
    m, least = result.metrics, 1 - budget.drop
    if result.judged == "accuracy":
        rule = (f"≥ the original's {m['accuracy_reference']:.3f} − {budget.drop:g}" if budget.points
                else f"≥ {least:g} × the original's {m['accuracy_reference']:.3f}")  # fmt: skip
        return f"true top-1 accuracy {rule} on {m['labelled_n']:.0f} labelled inputs"
    if result.judged == "decisive_agreement":
        return (f"decisive top-1 agreement ≥ {least:g} (original's top-1 p ≥ {m['decisive_threshold']:g}: "
                f"{m['decisive_n']:.0f} of {result.n} inputs)")  # fmt: skip
    if result.judged == "top1_agreement":
        return f"top-1 agreement ≥ {least:g} on all {result.n} inputs"
    return f"mean cosine ≥ {budget.cosine_mean:g}, min cosine ≥ {budget.cosine_min:g} on {result.n} inputs"


def warning(result: Fidelity, budget: Budget) -> str:
    """Why the judgement is weak ("" when it is not): too few labels to resolve the budget, or too few decisive
    inputs for decisive agreement."""
    m = result.metrics
    if result.judged == "accuracy":
        low, high, least = (
            (-m["accuracy_drop_high"], -m["accuracy_drop_low"], -budget.drop) if budget.points
            else (m["accuracy_ratio_low"], m["accuracy_ratio_high"], 1 - budget.drop)
        )  # fmt: skip
        if low < least <= high:
            what = "drop" if budget.points else "ratio"
            return (f"{m['labelled_n']:.0f} labelled inputs cannot resolve a {budget.drop:.1%} budget: the accuracy "
                    f"{what} 95% CI {low:.3f}–{high:.3f} spans the threshold {least:.3f}")  # fmt: skip
    if result.task == "classify" and result.judged == "top1_agreement":
        return (f"only {m.get('decisive_n', 0):.0f} inputs are decisive (p ≥ {budget.decisive:g}; "
                f"{MIN_DECISIVE} needed): judged on overall agreement, which near-ties make strict")  # fmt: skip
    return ""


def breach(result: Fidelity, budget: Budget) -> str | None:
    """Why result breaks the budget ("decisive top-1 agreement 0.94 < 0.99"), or None when it fits."""
    m = result.metrics
    checks: list[tuple[str, float | None, float]] = []
    if result.judged == "accuracy":
        checks = ([("accuracy drop (points, negated)", -m["accuracy_drop"], -budget.drop)] if budget.points
                  else [("accuracy ratio", m["accuracy_ratio"], 1 - budget.drop)])  # fmt: skip
    elif result.judged in ("decisive_agreement", "top1_agreement"):
        name = "decisive top-1 agreement" if result.judged == "decisive_agreement" else "top-1 agreement"
        checks = [(name, m[result.judged], budget.top1_agreement)]
    else:
        checks = [("mean cosine", m.get("cosine_mean"), budget.cosine_mean),
                  ("min cosine", m.get("cosine_min"), budget.cosine_min)]  # fmt: skip
    if budget.user_min is not None:
        checks.append(("user metric", m.get("user"), budget.user_min))
    for name, value, least in checks:
        if value is not None and not value >= least:
            return f"{name} {value:.4f} < {least:.4f}"
    return None


def label_accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """True top-1 accuracy of [N, classes] logits against [N] class labels."""
    return float(np.mean(logits.argmax(1) == labels))


def load_user_metric(ref: str) -> UserMetric:
    """The callable named "package.module:function" (it gets reference and candidate outputs, returns a float)."""
    module_name, _, function = ref.partition(":")
    if not module_name or not function:
        raise InvalidInput(f"a metric is named module:function, got {ref!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise InvalidInput(f"cannot import metric module {module_name!r}: {err}") from None
    metric = getattr(module, function, None)
    if not callable(metric):
        raise InvalidInput(f"{module_name} has no callable {function!r}")
    return metric
