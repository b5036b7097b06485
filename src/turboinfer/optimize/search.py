"""Ask/tell search over candidates, and the default search space for a model on this machine.

A strategy only proposes (ask) and listens (tell); the runner measures. The budget is a hard constraint: a
strategy refines only candidates that were told to fit it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidInput
from turboinfer.core.settings import Settings
from turboinfer.hardware.probe import CpuInfo, probe_cpu
from turboinfer.models.catalog import resolve_model
from turboinfer.models.inputs import input_kind
from turboinfer.optimize.passes.session import SessionTuningConfig, tuned_options
from turboinfer.optimize.plan import Candidate, Outcome, Plan, Step
from turboinfer.runtime.onnxruntime import has_cuda
from turboinfer.runtime.session import SessionOptions

INT8_ISA = ("avx512_vnni", "avx_vnni", "amx_int8")
BF16_ISA = ("avx512_bf16", "amx_bf16")


@dataclass(frozen=True)
class Skipped:
    """A candidate left out before measuring, and why."""

    candidate: Candidate
    reason: str


class Strategy(Protocol):
    """Proposes candidates one at a time and learns from their outcomes."""

    def ask(self) -> Candidate | None:
        """The next candidate to measure, or None when done."""
        ...

    def tell(self, outcome: Outcome) -> None:
        """The measured outcome of a candidate this strategy proposed."""
        ...


class Exhaustive:
    """Every candidate of a fixed list, in order."""

    def __init__(self, candidates: Iterable[Candidate]) -> None:
        self._queue = list(candidates)

    def ask(self) -> Candidate | None:
        """The next candidate of the list."""
        return self._queue.pop(0) if self._queue else None

    def tell(self, outcome: Outcome) -> None:
        """Exhaustive search ignores outcomes."""


class RandomSearch(Exhaustive):
    """`trials` candidates drawn without replacement (seeded); the first candidate (the original) always runs."""

    def __init__(self, candidates: Iterable[Candidate], trials: int, seed: int = 0) -> None:
        pool = list(candidates)
        rng = np.random.default_rng(seed)
        drawn = rng.permutation(max(0, len(pool) - 1))[: max(0, trials - 1)] + 1
        super().__init__([pool[0], *(pool[int(i)] for i in drawn)] if pool else [])


class Staged(Exhaustive):
    """Stage 1: the given candidates. Stage 2: the fastest one inside the budget, refined — normalization
    folded in (image models), thread counts within the CPU quota, and batch sizes for throughput."""

    def __init__(self, candidates: Iterable[Candidate], refine: RefineSpace) -> None:
        super().__init__(candidates)
        self._refine = refine
        self._best: Outcome | None = None
        self._refined = False

    def ask(self) -> Candidate | None:
        """Stage-1 candidates, then the refinements of the best."""
        if not self._queue and not self._refined and self._best is not None:
            self._refined = True
            self._queue = self._refine.around(self._best.candidate)
        return super().ask()

    def tell(self, outcome: Outcome) -> None:
        """Keep the fastest candidate that fits the budget."""
        if outcome.status in ("rejected", "failed", "skipped") or outcome.ratio is None:
            return
        if self._best is None or self._best.ratio is None or outcome.ratio < self._best.ratio:
            self._best = outcome


@dataclass(frozen=True)
class RefineSpace:
    """How stage 2 varies a good candidate."""

    cpu: CpuInfo
    fold: bool
    batches: tuple[int, ...] = ()

    def around(self, best: Candidate) -> list[Candidate]:
        """Variants of best: folded normalization (after quantization), other thread counts, other batch sizes."""
        out = [replace(best, steps=steps) for steps in with_fold(best.steps)] if self.fold else []
        out += [replace(best, options=o) for o in tuned_options(best.options, self.cpu, SessionTuningConfig())]
        out += [replace(best, batch=b) for b in self.batches if b != best.batch]
        return out


QUANTIZING = ("ort-int8-static", "ort-int8-dynamic", "nncf-int8")
WRITES_IR = ("nncf-int8", "openvino-ir")
"""Passes whose output is an OpenVINO IR, which the ONNX passes after them cannot edit."""


def with_fold(steps: tuple[Step, ...]) -> list[tuple[Step, ...]]:
    """steps with normalization folded in last, after any quantization (folded first, its prologue gets QDQ
    nodes of its own and the model runs slower: docs/benchmarks.md), with uint8 input in either layout (NHWC
    saves the data path a transpose, NCHW saves the model one); none when already folded or when the steps end
    in an OpenVINO IR."""
    if any(s.name == "fold-normalize" for s in steps) or (steps and steps[-1].name in WRITES_IR):
        return []
    return [(*steps, Step("fold-normalize")), (*steps, Step("fold-normalize", {"layout": "NCHW"}))]


def in_pass_order(candidate: Candidate) -> Candidate:
    """The candidate with fold-normalize moved after its quantization steps (the pass-order rule); InvalidInput
    when that would put it after an OpenVINO IR."""
    names = [s.name for s in candidate.steps]
    if "fold-normalize" not in names:
        return candidate
    fold = candidate.steps[names.index("fold-normalize")]
    others = tuple(s for s in candidate.steps if s.name != "fold-normalize")
    quantized = [i for i, s in enumerate(others) if s.name in QUANTIZING]
    place = max(names.index("fold-normalize"), quantized[-1] + 1 if quantized else 0)
    steps = (*others[:place], fold, *others[place:])
    if place and steps[place - 1].name in WRITES_IR:
        raise InvalidInput(f"{candidate.label}: fold-normalize cannot follow {steps[place - 1].name} (an OpenVINO IR); "
                           "fold with ORT quantization, or leave normalization to the data path")  # fmt: skip
    return replace(candidate, steps=steps)


def default_space(card: ModelCard, cpu: CpuInfo, plan: Plan, cuda: bool) -> tuple[list[Candidate], list[Skipped]]:
    """Stage-1 candidates for card on this machine, and those skipped up front with the reason."""
    base = SessionOptions(intra_threads=cpu.usable_cpus)
    ov, budget = replace(base, precision="fp32"), plan.budget
    candidates = [
        Candidate((), "ort", base),
        Candidate((Step("onnxslim"),), "ort", base),
        Candidate((), "openvino", ov),
    ]
    bf16 = [Candidate((), "openvino", replace(ov, precision="bf16"))]
    nncf = [
        Candidate((Step("nncf-int8"),), "openvino", ov),
        Candidate((Step("nncf-int8", {"preset": "mixed"}),), "openvino", ov),
        Candidate((Step("nncf-int8", {"accuracy_control": True, "max_drop": budget}),), "openvino", ov),
    ]
    if plan.quick:  # leave out the slow ones: accuracy control re-evaluates many times
        nncf = nncf[:1]
    kind = input_kind(card)
    static = Candidate((Step("ort-int8-static"),), "ort", base)
    if kind == "tokens":
        int8 = [
            Candidate((Step("ort-int8-dynamic"),), "ort", base),
            Candidate((Step("ort-fusion"), Step("ort-int8-dynamic")), "ort", base),
            *nncf,
            Candidate((Step("nncf-int8"),), "openvino", replace(ov, precision="bf16")),
        ]
        candidates.append(Candidate((Step("ort-fusion"),), "ort", base))
    elif kind == "image":
        percentile = Candidate((Step("ort-int8-static", {"calibration": "percentile"}),), "ort", base)
        int8 = [static, *nncf, *([] if plan.quick else [percentile])]
    else:
        int8 = [static, Candidate((Step("ort-int8-dynamic"),), "ort", base), *nncf]
    skipped: list[Skipped] = []
    if any(flag in cpu.isa for flag in INT8_ISA):
        candidates += int8
    else:
        reason = "INT8 cannot pay on this CPU: no VNNI or AMX (u8×s8 without VNNI saturates and is slow)"
        skipped += [Skipped(c, reason) for c in int8]
    if any(flag in cpu.isa for flag in BF16_ISA):
        candidates += bf16
    else:
        skipped += [Skipped(c, "no BF16 units (AMX or AVX512-BF16): OpenVINO would silently run f32") for c in bf16]
    fp16 = Candidate((Step("fp16"),), "ort", replace(base, provider="cuda"))
    if cuda:
        candidates.append(fp16)
    else:
        skipped.append(Skipped(fp16, "FP16 needs a GPU (no CUDA provider here); CPUs emulate it slowly"))
    for model in plan.swap:
        candidates += [Candidate((), "ort", base, model=model), Candidate((), "openvino", ov, model=model)]
    return candidates, skipped


def space_for(card: ModelCard, cpu: CpuInfo, plan: Plan) -> tuple[list[Candidate], list[Skipped]]:
    """The plan's own space (in pass order), or the default one; the original always first."""
    if plan.space:
        candidates, skipped = [in_pass_order(c) for c in plan.space], list[Skipped]()
    else:
        candidates, skipped = default_space(card, cpu, plan, has_cuda())
    original = Candidate((), "ort", SessionOptions(intra_threads=cpu.usable_cpus))
    return [original, *(c for c in candidates if c != original)], skipped


def expand(plan: Plan, settings: Settings) -> Plan:
    """The plan with its candidate space written out (what --dry-run prints and run would try in stage 1)."""
    candidates, _ = space_for(resolve_model(plan.model, settings), probe_cpu(), plan)
    return replace(plan, space=tuple(candidates))


def make_strategy(plan: Plan, candidates: list[Candidate], refine: RefineSpace) -> Strategy:
    """The plan's strategy over candidates (the original first)."""
    if plan.strategy == "random":
        return RandomSearch(candidates, plan.trials, plan.seed)
    if plan.strategy == "exhaustive":
        return Exhaustive(candidates)
    return Staged(candidates, refine)
