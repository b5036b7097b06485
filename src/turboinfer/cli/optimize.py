"""`turboinfer optimize`: search passes, backends and options of a model (tensor or LLM) inside an accuracy
budget; its options grouped by concern."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, cast

import typer

from turboinfer.cli import render
from turboinfer.cli.groups import grouped, option_group
from turboinfer.cli.llm import optimize_llm
from turboinfer.cli.options import TokenizerOption, budget_drop, percent, settings
from turboinfer.core.errors import BudgetExceeded
from turboinfer.llm.variant import is_llm
from turboinfer.measure.fidelity import DECISIVE_P
from turboinfer.models.catalog import resolve_model
from turboinfer.optimize import artifacts
from turboinfer.optimize.generation import GenBudget
from turboinfer.optimize.plan import Objective, Plan, Strategy, load_plan, quick_plan
from turboinfer.optimize.run import run as run_optimize
from turboinfer.optimize.search import expand
from turboinfer.report.html import optimize_html


@option_group("Accuracy budget")
class Budget:
    """What a candidate must keep of the original's outputs."""

    budget: Annotated[
        str | None,
        typer.Option(
            help="Allowed drop (default 1%): labelled, of the original's accuracy (or 1pt: points); else decisive "
            "top-1 agreement / cosine. LLMs: next-token agreement ≥ 1 − P, perplexity ratio ≤ 1 + P/2 (default: "
            "0.90 and 1.05)."
        ),
    ] = None
    label_map: Annotated[Path | None, typer.Option(help="ImageFolder class names → indices (lines: name index).")] = (
        None
    )
    decisive: Annotated[
        float, typer.Option(min=0.01, max=0.99, help="Inputs whose top-1 probability is ≥ this judge agreement.")
    ] = DECISIVE_P
    output: Annotated[
        str | None, typer.Option(help="The output the budget judges; a classifier's features: as embeddings.")
    ] = None
    metric: Annotated[str | None, typer.Option(help="Your metric, module:function(reference, candidate).")] = None
    metric_min: Annotated[float | None, typer.Option(help="Least value of --metric.")] = None

    def generation(self) -> GenBudget:
        """An LLM's budget: next-token agreement ≥ 1 − P and perplexity ratio ≤ 1 + P/2."""
        allowed = percent(self.budget, "--budget") if self.budget else None
        return GenBudget(0.90, 1.05) if allowed is None else GenBudget(1 - allowed, 1 + allowed / 2)


@option_group("Search")
class Search:
    """What is searched for, and how."""

    objective: Annotated[
        str,
        typer.Option(
            help="latency (at --batch) or throughput (items/s). LLMs: latency = one stream's decode tok/s, "
            "throughput = output tok/s of --batch concurrent streams (16 when --batch is 1), grounded = one "
            "stream's decode on input-grounded tasks (prompt lookup searched)."
        ),
    ] = "latency"
    batch: Annotated[int, typer.Option(min=1)] = 1
    p99_target_ms: Annotated[
        float | None, typer.Option(help="Reject candidates whose p99 per call exceeds this (with throughput).")
    ] = None
    swap: Annotated[list[str] | None, typer.Option(help="A lighter model to try instead (repeatable).")] = None
    strategy: Annotated[str, typer.Option(help="staged, exhaustive or random.")] = "staged"
    trials: Annotated[int, typer.Option(min=1, help="Candidates the random strategy draws.")] = 12


@option_group("Run")
class Run:
    """A plan file instead of options, where results go, a dry or quick run."""

    config: Annotated[
        Path | None, typer.Option(help="A plan file (YAML/JSON): its fields replace the options; MODEL, --quick apply.")
    ] = None
    out: Annotated[Path, typer.Option(help="Folder for the chosen variant, decision log and report.")] = Path(
        "out/optimize"
    )
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan (JSON) with its candidates; run nothing.")
    ] = False
    quick: Annotated[bool, typer.Option(help="Few inputs, short timing, no slow candidates (about a minute).")] = False


@grouped
def optimize(
    model: Annotated[str, typer.Argument(help="Zoo name, ModelCard (.card.json) or ONNX path.")],
    budget: Budget,
    search: Search,
    run: Run,
    inputs: Annotated[
        Path | None, typer.Option(help="Photos, an ImageFolder (labels), a text file, an .npz or .npy folder.")
    ] = None,
    tokenizer: TokenizerOption = None,
) -> None:
    """Search passes, backends and options; keep the fastest variant inside the accuracy budget, explained."""
    if is_llm(model):
        streams = search.batch if search.batch > 1 else 16
        optimize_llm(model, run.quick, run.out, budget.generation(), search.objective, streams)
        return
    plan = load_plan(run.config, {"model": model}) if run.config else option_plan(model, inputs, tokenizer, budget,
                                                                                  search, run.out)  # fmt: skip
    plan = quick_plan(plan) if run.quick else plan
    env = settings()
    render.inferred(resolve_model(plan.model, env, Path(plan.tokenizer) if plan.tokenizer else None))
    if run.dry_run:
        render.console.print_json(expand(plan, env).to_json())
        return
    with render.progress() as step:
        result = run_optimize(plan, env, progress=lambda label, done: step(f"[{done + 1}] {label}"))
    files = artifacts.save(result, Path(plan.out_dir), env, optimize_html)
    render.optimize_result(result)
    for path in files.values():
        render.console.print(f"wrote {path}")
    if not result.budget_met:
        raise BudgetExceeded(
            f"no optimized candidate keeps the budget ({plan.budget:.2%}); the original is returned: {files['variant']}"
        )


def option_plan(model: str, inputs: Path | None, tokenizer: Path | None, budget: Budget, search: Search,
                out: Path) -> Plan:  # fmt: skip
    """The plan the command-line options describe (InvalidInput for an out-of-range value)."""
    drop, points = budget_drop(budget.budget or "1%")
    return Plan(
        model, inputs=str(inputs) if inputs else None, label_map=str(budget.label_map) if budget.label_map else None,
        tokenizer=str(tokenizer) if tokenizer else None, budget=drop, budget_points=points, decisive=budget.decisive,
        objective=cast(Objective, search.objective), batch=search.batch, p99_target_ms=search.p99_target_ms,
        swap=tuple(search.swap or ()), strategy=cast(Strategy, search.strategy), trials=search.trials,
        output=budget.output, metric=budget.metric, metric_min=budget.metric_min, out_dir=str(out),
    ).checked()  # fmt: skip
