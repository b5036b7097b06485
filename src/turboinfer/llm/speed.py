"""A generator's speed the way llama-bench reports it — pp N (prefill tokens/s of an N-token prompt) and tg M
(decode tokens/s over M generated tokens after a prompt of `depth` tokens), repeated, with CIs — on distinct
windows of real prose, so no engine answers from a cached prefix. The one measurement bench, profile and
optimize share."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from turboinfer.core.errors import InvalidInput
from turboinfer.llm.prose import Prose
from turboinfer.measure.stats import bootstrap_ci
from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult, Generator


@dataclass(frozen=True)
class GenBenchConfig:
    """What to measure."""

    prompt: int = 512
    """pp: prompt tokens."""
    generate: int = 128
    """tg: generated tokens."""
    depths: tuple[int, ...] = (16,)
    """Prompt tokens before tg's generation (the context depth decode runs at)."""
    repeats: int = 5


@dataclass
class GenBench:
    """One variant's pp and tg figures: tokens/s per repeat, with median and 95% CI."""

    label: str
    pp: list[float] = field(default_factory=list)
    tg: dict[int, list[float]] = field(default_factory=dict)
    ttft_s: list[float] = field(default_factory=list)
    describe: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> GenSpeed:
        """Medians and CIs of pp and each tg depth (tokens/s) and of TTFT (seconds)."""
        tg = {depth: rate(values) for depth, values in self.tg.items()}
        return GenSpeed(self.label, self.describe, rate(self.pp), tg, rate(self.ttft_s))


@dataclass(frozen=True)
class Rate:
    """Median, 95% CI and the raw values of repeated measurements."""

    median: float
    ci95: tuple[float, float]
    values: tuple[float, ...]

    def text(self) -> str:
        """ "72.1 (70.3–74.0)": the median and its CI."""
        return f"{self.median:.1f} ({self.ci95[0]:.1f}–{self.ci95[1]:.1f})"


def rate(values: list[float]) -> Rate:
    """The Rate of a list of measurements."""
    array = np.asarray(values, dtype=float)
    ci = bootstrap_ci(array) if len(array) > 1 else (float(array[0]), float(array[0]))
    return Rate(float(np.median(array)), (float(ci[0]), float(ci[1])), tuple(array.tolist()))


@dataclass(frozen=True)
class GenSpeed:
    """One variant's speed as llama-bench reports it: pp and tg at each depth (tokens/s), TTFT (seconds)."""

    label: str
    engine: dict[str, Any]
    """What the engine says it ran (its describe())."""
    pp: Rate
    tg: dict[int, Rate]
    ttft_s: Rate

    @property
    def decode(self) -> Rate:
        """tg at the first depth measured."""
        return next(iter(self.tg.values()))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the keys bench --json writes)."""
        return asdict(self)


@dataclass(frozen=True)
class StreamsSpeed:
    """Aggregate output tokens/s of many prompts decoded at once."""

    streams: int
    output_tokens_per_s: float


@dataclass(frozen=True)
class TaskSpeed:
    """One-stream greedy decode on a task: tokens/s, tokens per decode step and, with drafts, the share accepted."""

    tokens_per_s: float
    tokens_per_step: float
    acceptance: float | None = None

    def to_dict(self) -> dict[str, float]:
        """JSON-ready form (acceptance only where tokens were drafted)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def one_round(generator: Generator, prose: Prose, config: GenBenchConfig, into: GenBench) -> None:
    """One repeat of pp and every tg depth."""
    first = generator.generate(GenerationRequest(prose.window(config.prompt), max_tokens=1, ignore_eos=True))
    into.pp.append(config.prompt / first.ttft_s)
    into.ttft_s.append(first.ttft_s)
    for depth in config.depths:
        result = generator.generate(GenerationRequest(prose.window(depth), max_tokens=config.generate, ignore_eos=True))
        into.tg.setdefault(depth, []).append(result.decode_rate)


def bench_generator(label: str, generator: Generator, config: GenBenchConfig) -> GenBench:
    """pp and tg of one generator, after one warm-up round."""
    prose = Prose(generator)
    one_round(generator, prose, GenBenchConfig(min(config.prompt, 64), 4, (min(config.depths),), 1), GenBench(label))
    out = GenBench(label, describe=generator.describe())
    for _ in range(config.repeats):
        one_round(generator, prose, config, out)
    return out


def concurrent_run(
    generator: Generator, prose: Prose, streams: int, prompt: int, generate: int
) -> tuple[list[GenerationResult], float]:
    """`streams` requests of distinct prose prompts at once (engines that batch streams: `generate_many`; the others
    one after another); their results and the seconds they took together."""
    requests = [GenerationRequest(prose.window(prompt), max_tokens=generate, ignore_eos=True) for _ in range(streams)]
    many = getattr(generator, "generate_many", None)
    start = time.perf_counter()
    results = many(requests) if many else [generator.generate(r) for r in requests]
    return results, time.perf_counter() - start


GROUNDED = "Copy the following text exactly, word for word.\n\n{passage}"
OPEN = "Write a few paragraphs about this: {passage}"
"""Prompt-lookup workloads: an input-grounded task (the answer repeats the prompt's text, as summaries and edits
largely do) and an open one (the answer is new text)."""


def task_prompt(generator: Generator, task: str, passage: str) -> str:
    """The task as the model's chat template renders it, or as plain text for a model without one."""
    ask = task.format(passage=passage)
    try:
        return str(generator.chat([{"role": "user", "content": ask}]))  # type: ignore[attr-defined]
    except (AttributeError, InvalidInput):
        return f"{ask}\n\n"


def task_speed(generator: Generator, prose: Prose, task: str, generate: int = 64, prompts: int = 2,
               drafted: int = 0, outputs: list[list[int]] | None = None) -> TaskSpeed:  # fmt: skip
    """One-stream greedy decode on a task (GROUNDED or OPEN) over passages of real prose: tokens/s (median of the
    prompts), tokens per decode step and, when `drafted` tokens are proposed per step, the share accepted; each
    prompt's tokens appended to `outputs` when given."""
    rates, tokens, steps = [], 0, 0
    for _ in range(prompts):
        passage = generator.detokenize(prose.window(160))
        request = GenerationRequest(task_prompt(generator, task, passage), max_tokens=generate, ignore_eos=True)
        result = generator.generate(request)
        rates.append(result.decode_rate)
        if outputs is not None:
            outputs.append(result.tokens)
        tokens, steps = tokens + result.completion_tokens, steps + (result.steps or result.completion_tokens)
    per_step = tokens / max(steps, 1)
    return TaskSpeed(float(np.median(rates)), per_step, (per_step - 1) / drafted if drafted else None)
