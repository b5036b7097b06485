"""The culprit finder for ONNX Runtime QDQ models: which nodes' quantization breaks the budget, and the fewest
nodes to keep in float that restore it.

1. Rank (passes.quantize.rank_nodes): run the float and the QDQ model on calibration inputs and compare
   every intermediate tensor (ORT's qdq_loss_debug); a node's score is how much signal-to-quantization-noise
   (dB) it loses between its inputs and its output in the quantized model.
2. Search: keep the top 1, 2, 4, … ranked nodes in float until the task metric fits, then bisect down to the
   fewest. Every step re-quantizes (cached) and is measured on the tuning split, never the evaluation split.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from turboinfer.optimize.passes.quantize import NodeLoss
from turboinfer.optimize.plan import Candidate, Step


@dataclass(frozen=True)
class Trial:
    """One step of the search: the top-ranked nodes kept in float, the nodes that excluded (with their producers)
    and the tuning metric it reached."""

    float_nodes: int
    excluded: int
    metric: float


@dataclass
class CulpritSearch:
    """The nodes kept in float and every trial on the way, on one broken candidate."""

    candidate: str
    """The static-INT8 candidate that broke the budget (its label)."""
    ranked: list[NodeLoss] = field(default_factory=list)
    trials: list[Trial] = field(default_factory=list)
    culprits: tuple[str, ...] = ()
    """The fewest top-ranked nodes whose float restores the budget; empty when none did."""
    nodes: tuple[str, ...] = ()
    """What is excluded from quantization for that: the culprits and the compute nodes feeding them."""
    error: str = ""
    """Why the search stopped early, when it did (it is advice: the optimize run goes on)."""

    @property
    def restored(self) -> bool:
        """True when some set of nodes in float brought the candidate back inside the budget."""
        return bool(self.nodes)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {"candidate": self.candidate, "ranked": [[r.name, round(r.loss_db, 2)] for r in self.ranked[:20]],
                "trials": [t.__dict__ for t in self.trials], "culprits": list(self.culprits),
                "nodes": list(self.nodes), "restored": self.restored, "error": self.error}  # fmt: skip


def with_float_nodes(candidate: Candidate, nodes: tuple[str, ...]) -> Candidate:
    """The candidate with its static-quantization step keeping nodes in float."""
    steps = tuple(
        Step(s.name, {**s.config, "exclude_nodes": list(nodes)}) if s.name == "ort-int8-static" else s
        for s in candidate.steps
    )
    return replace(candidate, steps=steps)


def counts(total: int) -> Iterator[int]:
    """1, 2, 4, … and finally total."""
    k = 1
    while k < total:
        yield k
        k *= 2
    yield total


def excluded(ranked: list[NodeLoss], k: int) -> tuple[str, ...]:
    """The nodes to exclude to keep the top k ranked nodes in float (their groups, in rank order)."""
    return tuple(dict.fromkeys(name for loss in ranked[:k] for name in loss.group))


def find_culprits(
    candidate: Candidate,
    ranked: list[NodeLoss],
    metric: Callable[[Candidate], float],
    least: float,
    max_trials: int = 16,
) -> CulpritSearch:
    """Keep the fewest top-ranked nodes in float so that metric(candidate) ≥ least (doubling, then bisection)."""
    search = CulpritSearch(candidate.label, ranked)

    def fits(k: int) -> bool:
        nodes = excluded(ranked, k)
        value = metric(with_float_nodes(candidate, nodes))
        search.trials.append(Trial(k, len(nodes), value))
        return value >= least

    low, high = 0, None  # low: most nodes known not to fit; high: fewest known to fit
    for k in counts(len(ranked)):
        if len(search.trials) >= max_trials:
            break
        if fits(k):
            high = k
            break
        low = k
    while high is not None and high - low > 1 and len(search.trials) < max_trials:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    if high is not None:
        search.culprits = tuple(r.name for r in ranked[:high])
        search.nodes = excluded(ranked, high)
    return search


def static_int8_candidates(outcomes: list[tuple[Candidate, float | None, bool]]) -> Candidate | None:
    """Among (candidate, ratio, fits) rows, the fastest ORT static-INT8 candidate that broke the budget."""
    broken = [(r if r is not None else np.inf, c) for c, r, ok in outcomes
              if not ok and c.steps and c.steps[-1].name == "ort-int8-static"]  # fmt: skip
    return min(broken, key=lambda item: item[0])[1] if broken else None
