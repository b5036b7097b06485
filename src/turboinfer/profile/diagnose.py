"""Pure diagnosis: measurements in, ranked recommendations out. Each rule states its evidence and expected gain."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

VNNI_FLAGS = {"avx512_vnni", "avx_vnni", "amx_int8"}


@dataclass(frozen=True)
class Evidence:
    """What the profiler measured, reduced to the figures the rules read (None = not measured)."""

    stage_shares: dict[str, float] = field(default_factory=dict)
    """Share of the mean end-to-end request time per pipeline stage."""
    model_cv: float | None = None
    first_call_penalty: float | None = None
    precision: str = "fp32"
    isa: tuple[str, ...] = ()
    int8_over_fp32: float | None = None
    """Measured INT8 GEMM throughput / FP32 GEMM throughput on this machine (probe)."""
    usable_cpus: int = 1
    threads: int = 0
    """Intra-op threads the model ran with (0 = runtime default)."""
    batch_gain: float | None = None
    batch_knee: int | None = None
    thread_efficiency: float | None = None
    """Efficiency at the largest thread count swept."""
    attention_share_longest: float | None = None
    longest_sequence: int | None = None
    memory_bound_share: float | None = None


@dataclass(frozen=True)
class Recommendation:
    """One fix, why (evidence), what it should bring, and a score for ranking (the share of time at stake)."""

    rule: str
    action: str
    evidence: str
    expected_gain: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


Rule = Callable[[Evidence], Recommendation | None]


def slow_decode(e: Evidence) -> Recommendation | None:
    """JPEG decode dominates → DCT-downscaled decode."""
    share = e.stage_shares.get("decode", 0.0)
    if share < 0.25:
        return None
    return Recommendation(
        "slow-decode", "use DCT-downscaled JPEG decode (turboinfer's fast data path: ImagePipeline / DecodePool)",
        f"decode is {share:.0%} of the mean request",
        "decode 1.4–4.7× faster on 0.3–12.5 MP photos with identical top-1 (docs/benchmarks.md)", share,
    )  # fmt: skip


def slow_preprocess(e: Evidence) -> Recommendation | None:
    """Resize + normalize are a large share → fuse them or fold normalization into the model."""
    share = e.stage_shares.get("resize+crop", 0.0) + e.stage_shares.get("normalize", 0.0)
    if share < 0.15:
        return None
    return Recommendation(
        "slow-preprocess", "resize only the crop and normalize with a lookup table, or fold mean/std into the model "
        "and feed uint8", f"resize+normalize is {share:.0%} of the mean request",
        f"up to {share:.0%} of request time", share * 0.7,
    )  # fmt: skip


def quantize(e: Evidence) -> Recommendation | None:
    """FP32 on a CPU with INT8 dot-product instructions → INT8; without them, say it will pay less."""
    if e.precision not in ("fp32", "as stored in the graph", "f32"):
        return None
    vnni = sorted(VNNI_FLAGS & set(e.isa))
    if vnni:
        return Recommendation(
            "int8", "quantize to INT8 (static QDQ with calibration, accuracy-checked)",
            f"FP32 model on a CPU with {', '.join(vnni)}", "1.5–3× model latency (INT8 dot products)", 0.5,
        )  # fmt: skip
    ratio = f"measured INT8 GEMM is {e.int8_over_fp32:.1f}× FP32 here" if e.int8_over_fp32 else "no INT8 GEMM figure"
    return Recommendation(
        "int8-limited",
        "INT8 will pay less here: no VNNI/AMX; try it, but measure (dynamic INT8 for MatMul-heavy models)",
        f"FP32 model; CPU lacks VNNI/AMX ({ratio})",
        f"at most ~{e.int8_over_fp32 or 1.5:.1f}× on GEMM-bound layers, less end to end", 0.2,
    )  # fmt: skip


def batching(e: Evidence) -> Recommendation | None:
    """Throughput rises with batch → dynamic batching at the knee."""
    if e.batch_gain is None or e.batch_gain < 1.3:
        return None
    return Recommendation(
        "dynamic-batching", f"serve with dynamic batching (max batch {e.batch_knee})",
        f"throughput rises {e.batch_gain:.1f}× from batch 1; 90% of the best is reached at batch {e.batch_knee}",
        f"{e.batch_gain:.1f}× throughput under load", min(0.9, 1 - 1 / e.batch_gain),
    )  # fmt: skip


def oversubscription(e: Evidence) -> Recommendation | None:
    """More threads than the cgroup quota allows → contention."""
    if e.threads <= e.usable_cpus:
        return None
    return Recommendation(
        "oversubscribed", f"set intra-op threads to {e.usable_cpus} (the CPU quota)",
        f"{e.threads} threads on {e.usable_cpus} usable CPUs", "less jitter, often lower latency", 0.3,
    )  # fmt: skip


def jitter(e: Evidence) -> Recommendation | None:
    """High CV → allocation/arena or scheduling jitter."""
    if e.model_cv is None or e.model_cv < 0.3:
        return None
    return Recommendation(
        "jitter", "reduce jitter: keep the memory arena and pattern planner on, fix input shapes or bucket them, "
        "pin threads, avoid sharing cores",
        f"model latency CV {e.model_cv:.2f} (≥ 0.30)", "tighter p99 (closer to the median)", min(0.5, e.model_cv / 2),
    )  # fmt: skip


def warm_up(e: Evidence) -> Recommendation | None:
    """First call much slower than steady state → warm up before serving."""
    if e.first_call_penalty is None or e.first_call_penalty < 3:
        return None
    return Recommendation(
        "warm-up", "run warm-up inferences at every served shape before reporting ready",
        f"first call {e.first_call_penalty:.1f}× the median", "no slow first requests", 0.1,
    )  # fmt: skip


def thread_scaling(e: Evidence) -> Recommendation | None:
    """Poor thread efficiency → more instances with fewer threads each."""
    if e.thread_efficiency is None or e.thread_efficiency >= 0.6:
        return None
    return Recommendation(
        "thread-scaling", "run more model instances with fewer threads each (throughput) instead of more threads",
        f"thread efficiency {e.thread_efficiency:.0%} at the largest thread count",
        "higher throughput at the same CPU", 0.25,
    )  # fmt: skip


def attention(e: Evidence) -> Recommendation | None:
    """Attention dominates at long sequences → bucket / trim padding."""
    if e.attention_share_longest is None or e.attention_share_longest < 0.5:
        return None
    return Recommendation(
        "attention", "bucket sequences by length and trim padding (attention grows quadratically)",
        f"attention is {e.attention_share_longest:.0%} of model time at sequence {e.longest_sequence}",
        "large gains for short inputs padded to long lengths", e.attention_share_longest * 0.5,
    )  # fmt: skip


def memory_bound(e: Evidence) -> Recommendation | None:
    """Most time in memory-bound nodes → fewer bytes: fusion, lower precision."""
    if e.memory_bound_share is None or e.memory_bound_share < 0.5:
        return None
    return Recommendation(
        "memory-bound", "cut bytes moved: full graph optimization (fusion), lower precision (INT8/BF16 halves or "
        "quarters traffic), larger batches to reuse weights",
        f"{e.memory_bound_share:.0%} of node time is in memory-bound nodes (below the ridge point)",
        "up to the bandwidth ratio of the precision change", e.memory_bound_share * 0.4,
    )  # fmt: skip


RULES: tuple[Rule, ...] = (
    slow_decode, slow_preprocess, quantize, batching, oversubscription, jitter, warm_up, thread_scaling, attention,
    memory_bound,
)  # fmt: skip


def diagnose(evidence: Evidence) -> list[Recommendation]:
    """Every rule that fires, highest score first."""
    fired = [r for rule in RULES if (r := rule(evidence)) is not None]
    return sorted(fired, key=lambda r: r.score, reverse=True)
