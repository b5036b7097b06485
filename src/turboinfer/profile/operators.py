"""Operator profile: where the model's time goes by executed node and by op type, each node on the roofline."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from turboinfer.profile.roofline import Ceilings, RooflinePoint, op_flops, place
from turboinfer.runtime.profiling import NodeRun


@dataclass(frozen=True)
class OpTypeShare:
    """Total time of one op type per inference and its share of all node time."""

    op_type: str
    seconds: float
    share: float
    nodes: int


@dataclass(frozen=True)
class OperatorProfile:
    """Per-node and per-op-type times of one inference, with roofline points where FLOPs are known."""

    nodes: tuple[NodeRun, ...]
    """Sorted slowest first."""
    by_type: tuple[OpTypeShare, ...]
    points: tuple[RooflinePoint, ...]
    unknown_flops: tuple[str, ...]
    """Op types whose FLOPs are not modelled: their time is reported, their intensity is not guessed."""

    @property
    def total_seconds(self) -> float:
        """Sum of node times, one inference."""
        return sum(n.seconds for n in self.nodes)

    def memory_bound_share(self) -> float:
        """Share of node time spent in memory-bound nodes (of the nodes placed on the roofline)."""
        placed = sum(p.seconds or 0 for p in self.points)
        memory = sum(p.seconds or 0 for p in self.points if p.bound == "memory")
        return memory / placed if placed else 0.0

    def share_matching(self, words: tuple[str, ...]) -> float:
        """Share of node time in nodes whose name or op type contains any of words (e.g. "attention")."""
        hit = sum(n.seconds for n in self.nodes if any(w in n.name.lower() or w in n.op_type.lower() for w in words))
        return hit / self.total_seconds if self.total_seconds else 0.0

    def to_dict(self, top: int = 15) -> dict[str, Any]:
        """JSON-ready form: the top nodes, all op types, roofline points (seconds, FLOPs, bytes)."""
        return {
            "total_seconds": self.total_seconds,
            "top_nodes": [n.__dict__ for n in self.nodes[:top]],
            "by_type": [t.__dict__ for t in self.by_type],
            "roofline": [p.to_dict() for p in self.points],
            "unknown_flops": list(self.unknown_flops),
            "memory_bound_share": self.memory_bound_share(),
        }


def operator_profile(runs: list[NodeRun], ceilings: Ceilings | None) -> OperatorProfile:
    """Aggregate node runs by op type and place each node whose FLOPs are known on the roofline."""
    nodes = tuple(sorted(runs, key=lambda n: n.seconds, reverse=True))
    total = sum(n.seconds for n in nodes) or 1.0
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for node in nodes:
        seconds[node.op_type] += node.seconds
        counts[node.op_type] += 1
    by_type = tuple(
        OpTypeShare(op, t, t / total, counts[op]) for op, t in sorted(seconds.items(), key=lambda kv: -kv[1])
    )
    points, unknown = [], set()
    for node in nodes:
        flops = op_flops(node.op_type, node.input_shapes, node.output_shapes) if node.output_shapes else None
        if flops is None or not node.bytes:
            unknown.add(node.op_type)
            continue
        if ceilings is not None and flops > 0:
            points.append(place(node.name, node.op_type, flops, node.bytes, node.seconds, ceilings))
    return OperatorProfile(nodes, by_type, tuple(points), tuple(sorted(unknown)))
