"""`turboinfer optimize` for a decoder LLM: candidates are engine × weight precision × KV cache precision ×
threads; each is checked against the transformers oracle on held-out real prose and timed (pp and tg, the
llama-bench figures; with the throughput objective also the output tokens/s of many concurrent streams); the
fastest inside the budget is chosen — one stream's decoder (latency) or many streams' (throughput) — every
decision with its reason.

Fidelity: where an engine exposes its logits (ONNX Runtime GenAI), teacher-forced next-token agreement and the
perplexity ratio on the prose; where it does not (OpenVINO GenAI), the share of its greedy tokens the oracle
would have chosen given the same prefix, on continuations of prose prompts."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.errors import InvalidInput
from turboinfer.core.settings import Settings
from turboinfer.hardware.probe import probe_cpu
from turboinfer.llm.card import LlmCard, build_llm
from turboinfer.llm.engines import ENGINES, ORACLE, Search, engine_entry
from turboinfer.llm.prose import Prose
from turboinfer.llm.speed import (
    GROUNDED,
    OPEN,
    GenBenchConfig,
    GenSpeed,
    StreamsSpeed,
    TaskSpeed,
    bench_generator,
    concurrent_run,
    task_prompt,
    task_speed,
)
from turboinfer.llm.variant import GeneratorVariant, open_generator
from turboinfer.measure.fidelity import common_prefix, next_token_metrics, path_agreement
from turboinfer.runtime.llm.generate import GenerationRequest

Progress = Callable[[str], None]
OBJECTIVES = ("latency", "throughput", "grounded")


@dataclass(frozen=True)
class GenBudget:
    """The least fidelity a generator may keep against the oracle (defaults: docs/llm.md, "fidelity")."""

    agreement: float = 0.90
    """Teacher-forced next-token agreement (or, for engines without logits, agreement on their greedy path)."""
    perplexity_ratio: float = 1.05
    """Largest perplexity on the held-out prose over the oracle's, where the engine's logits are readable."""


@dataclass(frozen=True)
class GenPlan:
    """One LLM optimization run."""

    model: str = "smollm2-135m"
    budget: GenBudget = field(default_factory=GenBudget)
    quick: bool = False
    text_tokens: int = 256
    """Held-out prose tokens for teacher forcing."""
    prompts: int = 4
    """Prose prompts whose greedy continuations are compared (engines without logits)."""
    repeats: int = 3
    objective: str = "latency"
    """latency: the fastest decode of one stream (tg); throughput: the most output tokens/s of `streams` at once;
    grounded: the fastest one-stream decode on input-grounded tasks (copy or edit a given text), where prompt
    lookup drafts tokens from the prompt."""
    streams: int = 16
    lookup: tuple[int, ...] = (3, 4)
    """Prompt-lookup draft lengths searched (OpenVINO GenAI; each checked to leave greedy output unchanged)."""

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise InvalidInput(f"objective is one of {', '.join(OBJECTIVES)}, got {self.objective!r}")


@dataclass
class GenOutcome:
    """One candidate: its fidelity, its speed, and the decision with its reason."""

    variant: GeneratorVariant
    status: str = "measured"
    reason: str = ""
    fidelity: dict[str, float] = field(default_factory=dict)
    speed: GenSpeed | None = None
    streams: StreamsSpeed | None = None
    """Measured for the throughput objective."""
    tasks: dict[str, TaskSpeed] = field(default_factory=dict)
    """Measured for the grounded objective: "grounded" and "open"."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (speed: llama-bench's figures, with streams and each task's beside them)."""
        speed = {**self.speed.to_dict(), **({"streams": asdict(self.streams)} if self.streams else {}),
                 **{task: s.to_dict() for task, s in self.tasks.items()}} if self.speed else {}  # fmt: skip
        return {"variant": self.variant.to_dict(), "label": self.variant.label, "status": self.status,
                "reason": self.reason, "fidelity": self.fidelity, "speed": speed}  # fmt: skip


def candidates(plan: GenPlan, card: LlmCard, threads: int) -> tuple[list[GeneratorVariant], list[GenOutcome]]:
    """The search space, every engine's options (llm.engines) but the oracle's, and the engines skipped for this
    model with their reason."""
    out, skipped = [], []
    search = Search(plan.quick, plan.objective == "grounded", plan.lookup, threads)
    for entry in ENGINES:
        if entry.name == ORACLE:
            continue
        refusal = entry.refusal(card)
        if refusal is not None:
            skipped.append(GenOutcome(GeneratorVariant(plan.model, entry.name), "skipped", f"skipped: {refusal}"))
            continue
        out += [GeneratorVariant(plan.model, entry.name, **{"kv_cache": entry.kv_caches[0], **options})
                for options in entry.search(card, search)]  # fmt: skip
    return out, skipped


def fidelity_of(generator: Any, oracle: Any, text: list[int], prompts: list[tuple[int, ...]]) -> dict[str, float]:
    """The generator against the oracle: teacher-forced metrics when it exposes logits, path agreement and greedy
    exact-match length on prose prompts either way."""
    out: dict[str, float] = {}
    if hasattr(generator, "teacher_forced"):
        out.update(next_token_metrics(oracle.teacher_forced(text), generator.teacher_forced(text), np.array(text)))
    agreements, matches = [], []
    for prompt in prompts:
        request = GenerationRequest(prompt, max_tokens=32, ignore_eos=True)
        result = generator.generate(request)
        path = list(prompt) + result.tokens
        agreements.append(path_agreement(oracle.teacher_forced(path), len(prompt), result.tokens))
        matches.append(common_prefix(result.tokens, oracle.generate(request).tokens))
    out["path_agreement"] = float(np.mean(agreements))
    out["greedy_exact_match_tokens"] = float(np.mean(matches))
    return out


def breach(fidelity: dict[str, float], budget: GenBudget) -> str | None:
    """Why a candidate breaks the budget, or None."""
    agreement = fidelity.get("next_token_agreement", fidelity.get("path_agreement", 0.0))
    if not agreement >= budget.agreement:
        which = "teacher-forced agreement" if "next_token_agreement" in fidelity else "greedy-path agreement"
        return f"{which} {agreement:.3f} < {budget.agreement:.3f}"
    ratio = fidelity.get("perplexity_ratio")
    if ratio is not None and ratio > budget.perplexity_ratio:
        return f"perplexity ratio {ratio:.3f} > {budget.perplexity_ratio:.3f}"
    return None


@dataclass
class GenResult:
    """Every outcome and the chosen one."""

    plan: GenPlan
    outcomes: list[GenOutcome]
    chosen: GenOutcome
    machine: dict[str, Any]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the decision log)."""
        return {"plan": asdict(self.plan), "chosen": self.chosen.to_dict(), "outcomes": [o.to_dict() for o in
                self.outcomes], "machine": self.machine, "seconds": self.seconds}  # fmt: skip


def optimize_generator(plan: GenPlan, settings: Settings, progress: Progress | None = None) -> GenResult:
    """Measure every candidate against the oracle and choose the fastest decoder inside the budget."""
    say = progress or (lambda label: None)
    start = time.perf_counter()
    cpu = probe_cpu()
    card = build_llm(plan.model, settings)
    say("loading the oracle (transformers FP32)")
    oracle = open_generator(GeneratorVariant(plan.model, ORACLE, "fp32", threads=cpu.usable_cpus), settings)
    prose = Prose(oracle)
    prose.window(4096)  # the held-out text comes after the first 4096 tokens, which benchmarks use as prompts
    text = list(prose.window(plan.text_tokens))
    prompts = [prose.window(48) for _ in range(2 if plan.quick else plan.prompts)]
    config = GenBenchConfig(prompt=128 if plan.quick else 512, generate=32 if plan.quick else 128, depths=(16,),
                            repeats=2 if plan.quick else plan.repeats)  # fmt: skip
    variants, outcomes = candidates(plan, card, cpu.usable_cpus)
    plain: dict[tuple[str, str], list[list[int]]] = {}
    for variant in variants:
        say(variant.label)
        outcome = GenOutcome(variant)
        try:
            generator = open_generator(variant, settings)
            outcome.fidelity = fidelity_of(generator, oracle, text, prompts)
            outcome.speed = bench_generator(variant.label, generator, config).summary()
            why = breach(outcome.fidelity, plan.budget)
            if why is None and engine_entry(variant.engine).drafts and variant.kv_cache == "f32":
                why = lookup_breach(generator, variant, plain, outcome, Prose(generator))  # lookup runs only at f32
            if plan.objective == "throughput" and why is None:
                outcome.streams = streams_rate(generator, plan, config)
            if plan.objective == "grounded" and why is None:
                prose = Prose(generator)
                outcome.tasks = {
                    task: task_speed(generator, prose, words, config.generate, 2, variant.prompt_lookup)
                    for task, words in (("grounded", GROUNDED), ("open", OPEN))
                }
            del generator
        except InvalidInput:
            raise
        except Exception as err:  # an engine failed on this candidate: it is out, the search goes on
            outcome.status, outcome.reason = "failed", f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        else:
            outcome.status, outcome.reason = ("rejected", f"rejected: {why}") if why else ("fits", "")
        outcomes.append(outcome)
    chosen = decide(outcomes, plan.objective)
    machine = {"cpu": cpu.model, "usable_cpus": cpu.usable_cpus, "isa": list(cpu.isa)}
    return GenResult(plan, outcomes, chosen, machine, time.perf_counter() - start)


def lookup_breach(
    generator: Any,
    variant: GeneratorVariant,
    plain: dict[tuple[str, str], list[list[int]]],
    outcome: GenOutcome,
    prose: Prose,
) -> str | None:
    """For OpenVINO GenAI at f32 numerics: record the greedy tokens of two input-grounded prompts without prompt
    lookup, and refuse a lookup variant whose tokens differ from its plain twin's (the draft must never change greedy
    output)."""
    key = (variant.weights, variant.kv_cache)
    tokens = [generator.generate(GenerationRequest(task_prompt(generator, GROUNDED, generator.detokenize(
        prose.window(160))), max_tokens=32, ignore_eos=True)).tokens for _ in range(2)]  # fmt: skip
    if not variant.prompt_lookup:
        plain.setdefault(key, tokens)
        return None
    twin = plain.get(key)
    if twin is None:
        return "its plain twin (no lookup) did not keep the budget: nothing to check its output against"
    same = float(np.mean([a == b for a, b in zip(tokens, twin, strict=True)]))
    outcome.fidelity["lookup_identical_greedy"] = same
    return None if same == 1.0 else f"prompt lookup changed the greedy output ({same:.0%} of prompts identical)"


def streams_rate(generator: Any, plan: GenPlan, config: GenBenchConfig) -> StreamsSpeed:
    """Output tokens/s of `plan.streams` prose prompts at once (after a two-stream warm-up)."""
    prose = Prose(generator)
    concurrent_run(generator, prose, 2, 16, 4)
    results, seconds = concurrent_run(generator, prose, plan.streams, config.prompt // 4, config.generate)
    return StreamsSpeed(plan.streams, sum(r.completion_tokens for r in results) / seconds)


def speed_of(outcome: GenOutcome, objective: str) -> tuple[float, str]:
    """What the objective ranks by, and how to say it (a candidate that fits was measured for its objective)."""
    if objective == "throughput" and outcome.streams:
        return outcome.streams.output_tokens_per_s, f"output tok/s at {outcome.streams.streams} streams"
    if objective == "grounded" and "grounded" in outcome.tasks:
        return outcome.tasks["grounded"].tokens_per_s, "tok/s decoding one stream on input-grounded tasks"
    if objective == "latency" and outcome.speed:
        return outcome.speed.decode.median, "tok/s decoding one stream"
    raise ValueError(f"{outcome.variant.label} was not measured for the {objective} objective")


def decide(outcomes: list[GenOutcome], objective: str = "latency") -> GenOutcome:
    """The fastest candidate for the objective among those inside the budget; reasons for all."""
    fits = sorted((o for o in outcomes if o.status == "fits"), key=lambda o: -speed_of(o, objective)[0])
    if not fits:
        reasons = "; ".join(f"{o.variant.label}: {o.reason}" for o in outcomes)
        raise InvalidInput(f"no candidate kept the budget: {reasons}")
    best = fits[0]
    top, unit = speed_of(best, objective)
    for o in fits[1:]:
        o.status = "not chosen"
        o.reason = f"not chosen: {speed_of(o, objective)[0]:.0f} {unit} against the chosen's {top:.0f}"
    best.status = "chosen"
    best.reason = f"chosen: the fastest inside the budget, {top:.0f} {unit}"
    return best


def save(result: GenResult, out_dir: Path) -> dict[str, Path]:
    """chosen.generator.json (for serve and bench) and decision-log.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = out_dir / "chosen.generator.json"
    chosen.write_text(json.dumps(result.chosen.variant.to_dict(), indent=2))
    log = out_dir / "decision-log.json"
    log.write_text(json.dumps(result.to_dict(), indent=2, default=str))
    return {"variant": chosen, "decision_log": log}


def quick(plan: GenPlan) -> GenPlan:
    """The plan cut to a short run."""
    return replace(plan, quick=True, text_tokens=96, prompts=2, repeats=2, lookup=plan.lookup[:1])
