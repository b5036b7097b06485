"""The accuracy oracle: how far a candidate's outputs are from the original's on the same real inputs.

Used by the optimizer's budget gate and by the tests alike: classify → top-1 agreement and top-5 overlap;
embed → mean/min cosine and the overlap of each input's 10 nearest neighbours; plus an optional user metric.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidInput

Outputs = Mapping[str, np.ndarray]
UserMetric = Callable[[Outputs, Outputs], float]
"""A user's fidelity metric: (reference outputs, candidate outputs) → a number, higher is better."""


@dataclass(frozen=True)
class Budget:
    """The least fidelity a candidate may keep. Built from an allowed drop by Budget.from_drop."""

    top1_agreement: float = 0.99
    cosine_mean: float = 0.99
    cosine_min: float = 0.98
    user_min: float | None = None
    """Least value of the user metric, when one is given."""

    @classmethod
    def from_drop(cls, drop: float, user_min: float | None = None) -> Budget:
        """A budget allowing `drop` (0.01 = 1%): top-1 agreement and mean cosine ≥ 1 − drop, min cosine ≥ 1 − 2·drop."""
        if not 0 <= drop < 1:
            raise InvalidInput(f"the budget is an allowed drop between 0% and 100%, got {drop:.4g}")
        return cls(1 - drop, 1 - drop, 1 - 2 * drop, user_min)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class Fidelity:
    """A candidate's fidelity to the original on n evaluation inputs."""

    task: str
    n: int
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def primary(self) -> float:
        """The number the budget is mostly about: top-1 agreement (classify) or mean cosine (embed)."""
        return self.metrics["top1_agreement" if self.task == "classify" else "cosine_mean"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"task": self.task, "n": self.n, **self.metrics}


def classify_metrics(reference: np.ndarray, candidate: np.ndarray) -> dict[str, float]:
    """Top-1 agreement and mean top-5 overlap of two [N, classes] logit arrays."""
    top1 = float(np.mean(reference.argmax(1) == candidate.argmax(1)))
    ref5 = np.argsort(-reference, axis=1)[:, :5]
    cand5 = np.argsort(-candidate, axis=1)[:, :5]
    overlap = np.mean([len(set(r) & set(c)) / 5 for r, c in zip(ref5, cand5, strict=True)])
    return {"top1_agreement": top1, "top5_overlap": float(overlap)}


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (float64)."""
    v = vectors.astype(np.float64).reshape(len(vectors), -1)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def neighbours(unit: np.ndarray, k: int) -> np.ndarray:
    """Indices [N, k] of each row's k nearest other rows by cosine."""
    similarity = unit @ unit.T  # [N, N]
    np.fill_diagonal(similarity, -np.inf)
    return np.argsort(-similarity, axis=1)[:, :k]


def embed_metrics(reference: np.ndarray, candidate: np.ndarray, k: int = 10) -> dict[str, float]:
    """Mean and min cosine of paired embeddings, and the mean overlap of each row's k nearest neighbours."""
    ref, cand = unit_rows(reference), unit_rows(candidate)
    cosine = np.sum(ref * cand, axis=1)  # [N]
    k = min(k, len(ref) - 1)
    if k < 1:
        return {"cosine_mean": float(cosine.mean()), "cosine_min": float(cosine.min())}
    ref_nn, cand_nn = neighbours(ref, k), neighbours(cand, k)
    overlap = np.mean([len(set(a) & set(b)) / k for a, b in zip(ref_nn, cand_nn, strict=True)])
    return {
        "cosine_mean": float(cosine.mean()),
        "cosine_min": float(cosine.min()),
        f"recall{k}_overlap": float(overlap),
    }


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
    task: str, reference: Outputs, candidate: Outputs, output: str, user_metric: UserMetric | None = None
) -> Fidelity:
    """Compare the named output of reference and candidate (same inputs, same order) for the task."""
    ref, cand = reference[output], candidate[output]
    if ref.shape != cand.shape:
        raise InvalidInput(f"output {output!r} changed shape: {list(ref.shape)} → {list(cand.shape)}")
    metrics = classify_metrics(ref, cand) if task == "classify" else embed_metrics(ref, cand)
    if user_metric is not None:
        metrics["user"] = float(user_metric(reference, candidate))
    return Fidelity(task, len(ref), metrics)


def breach(result: Fidelity, budget: Budget) -> str | None:
    """Why result breaks the budget ("top-1 agreement 0.94 < 0.99"), or None when it fits."""
    m = result.metrics
    checks = (
        [("top-1 agreement", m.get("top1_agreement"), budget.top1_agreement)]
        if result.task == "classify"
        else [
            ("mean cosine", m.get("cosine_mean"), budget.cosine_mean),
            ("min cosine", m.get("cosine_min"), budget.cosine_min),
        ]
    )
    if budget.user_min is not None:
        checks.append(("user metric", m.get("user"), budget.user_min))
    for name, value, least in checks:
        if value is not None and value < least:
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
