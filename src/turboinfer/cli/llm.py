"""The decoder-LLM side of `profile`, `bench` and `optimize` (the verbs hand over when MODEL is a zoo LLM,
MODEL@ENGINE or a .generator.json): parse, call one library function, render."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from turboinfer.bench import history, openai_load
from turboinfer.bench.generation import ab_generators, history_row, verdict
from turboinfer.cli import render, render_llm
from turboinfer.cli.options import settings
from turboinfer.hardware.capsule import environment_capsule
from turboinfer.llm.card import build_llm
from turboinfer.llm.speed import GenBenchConfig, bench_generator
from turboinfer.llm.variant import open_generator, parse_generator
from turboinfer.optimize.generation import GenBudget, GenPlan, optimize_generator, quick, save
from turboinfer.profile.generation import GenProfileRequest, profile_generator
from turboinfer.report.html import generation_html, openai_load_html


def profile_llm(model: str, threads: int, quick_run: bool, json_path: Path | None, html_path: Path | None) -> None:
    """`turboinfer profile LLM`."""
    variant = parse_generator(model, settings(), threads)
    render.llm_facts(build_llm(variant.model, settings()))
    request = GenProfileRequest.quick() if quick_run else GenProfileRequest()
    with render_llm.progress() as step:
        report = profile_generator(variant, request, settings(), step)
    render_llm.generation_profile(report)
    if json_path:
        render_llm.write_json(json_path, report.to_dict())
    if html_path:
        render_llm.write_text(html_path, generation_html(report))


def bench_llm(model: str, vs: str | None, threads: int, runs: int | None, store: Path | None,
              json_path: Path | None) -> None:  # fmt: skip
    """`turboinfer bench LLM [--vs LLM]`: pp512 / tg128 with CIs, or an interleaved A/B with a verdict."""
    env = settings()
    config = GenBenchConfig(repeats=runs or 5)
    a = parse_generator(model, env, threads)
    render.llm_facts(build_llm(a.model, env))
    if vs is None:
        result = bench_generator(a.label, open_generator(a, env), config)
        render_llm.generation_bench([result.summary()], {}, config)
        data: dict[str, Any] = {"results": [result.summary().to_dict()]}
        if store is not None:
            history.record(store, history_row(result, a.name, config), environment_capsule())
    else:
        b = parse_generator(vs, env, threads)
        first, second, ratios = ab_generators((a.label, open_generator(a, env)), (b.label, open_generator(b, env)),
                                              config)  # fmt: skip
        verdicts = {k: verdict(r) for k, r in ratios.items()}
        render_llm.generation_bench([first.summary(), second.summary()], {k: (r, verdicts[k]) for k, r in
                                    ratios.items()}, config)  # fmt: skip
        data = {
            "results": [first.summary().to_dict(), second.summary().to_dict()],
            "ratios": {k: {"ratio": r.ratio, "ci95": list(r.ci), "verdict": verdicts[k]} for k, r in ratios.items()},
        }
        if store is not None:
            for bench in (first, second):
                history.record(store, history_row(bench, a.name, config), environment_capsule())
    if json_path:
        render_llm.write_json(json_path, data)


def optimize_llm(model: str, quick_run: bool, out: Path, budget: GenBudget, objective: str, streams: int) -> None:
    """`turboinfer optimize LLM`."""
    plan = GenPlan(model.rpartition("@")[0] if "@" in model else model, budget, objective=objective, streams=streams)
    render.llm_facts(build_llm(plan.model, settings()))
    plan = quick(plan) if quick_run else plan
    with render_llm.progress() as step:
        result = optimize_generator(plan, settings(), step)
    files = save(result, out)
    render_llm.generation_optimize(result)
    for path in files.values():
        render_llm.console.print(f"wrote {path}")


def bench_openai(load: openai_load.OpenAiLoad, levels: list[tuple[str, float]], requests: int, store: Path | None,
                 json_path: Path | None, html_path: Path | None) -> None:  # fmt: skip
    """`turboinfer bench --openai URL`: each concurrency (closed loop) and rate (open loop) in turn."""
    steps = []
    for i, (mode, level) in enumerate(levels):
        step = openai_load.closed_loop(load, int(level), requests, i) if mode == "closed" else \
            openai_load.open_loop(load, level, requests, i)  # fmt: skip
        run = asyncio.run(step)
        steps.append(run.summary())
        render_llm.openai_step(steps[-1])
        if store is not None:
            row = openai_load.history_row(run, load.model or "served", load.url)
            history.record(store, row, environment_capsule())
    if json_path:
        data = {"url": load.url, "load": load.__dict__, "steps": [s.to_dict() for s in steps]}
        render_llm.write_json(json_path, data)
    if html_path:
        render_llm.write_text(html_path, openai_load_html(load.url, load.__dict__, steps))
