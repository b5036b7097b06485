"""`turboinfer` command line (typer)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from turboinfer.bench import history
from turboinfer.bench.ab import BenchConfig
from turboinfer.bench.decode import compare_decoders, default_cases, folder_cases
from turboinfer.bench.openai_load import OpenAiLoad
from turboinfer.bench.run import LoadRequest, run_bench, run_load
from turboinfer.cli import render
from turboinfer.cli.card import card
from turboinfer.cli.llm import bench_llm, bench_openai, optimize_llm, profile_llm
from turboinfer.cli.options import (
    JsonOption,
    TokenizerOption,
    float_list,
    int_list,
    settings,
)
from turboinfer.cli.search import search
from turboinfer.cli.serve import serve
from turboinfer.core.errors import BudgetExceeded, TurboinferError
from turboinfer.core.types import ImagePreprocess
from turboinfer.llm.card import build_llm, llm_table
from turboinfer.llm.variant import is_llm
from turboinfer.measure.fidelity import DECISIVE_P
from turboinfer.models.catalog import build_zoo_model, resolve_model, zoo_table
from turboinfer.models.variant import parse_variant
from turboinfer.optimize import artifacts
from turboinfer.optimize.generation import GenBudget
from turboinfer.optimize.plan import Plan, load_plan, quick_plan
from turboinfer.optimize.run import run as run_optimize
from turboinfer.optimize.search import expand
from turboinfer.profile.machine import run_probe
from turboinfer.profile.run import PipelineKind, ProfileRequest, profile_model
from turboinfer.report.html import history_html, profile_html
from turboinfer.runtime.session import SessionOptions

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Diagnose, optimize, prove and serve inference.")
zoo = typer.Typer(no_args_is_help=True, help="Real pretrained models from installed packages, built offline.")
app.add_typer(zoo, name="zoo")
app.add_typer(search, name="search")
app.add_typer(card, name="card")
app.command()(serve)


@app.command()
def probe(json_path: JsonOption = None) -> None:
    """This machine: CPU, ISA, cores, quota, GPU; measured GEMM peaks and memory bandwidth."""
    report = run_probe()
    render.probe(report)
    if json_path:
        render.write_json(json_path, report.to_dict())


@zoo.command("list")
def zoo_list() -> None:
    """List the zoo's models and whether they are built."""
    render.zoo_list([*zoo_table(settings()), *llm_table(settings())])


@zoo.command("build")
def zoo_build(
    name: Annotated[str, typer.Argument(help="Zoo model name (see `turboinfer zoo list`).")],
    force: Annotated[bool, typer.Option(help="Rebuild even if a verified build exists.")] = False,
) -> None:
    """Export a zoo model to ONNX in the cache and print its ModelCard path (an LLM: its cache folder)."""
    if is_llm(name):
        render.llm_built(build_llm(name, settings(), force=force))
        return
    render.zoo_built(build_zoo_model(name, settings(), force=force))


@app.command()
def profile(
    model: Annotated[str, typer.Argument(help="Zoo name, ModelCard (.card.json) or ONNX path.")],
    backend: Annotated[str, typer.Option(help="ort or openvino.")] = "ort",
    threads: Annotated[int, typer.Option(help="Intra-op threads; 0 = all usable cores.")] = 0,
    pipeline: Annotated[str, typer.Option(help="auto, image, text or none.")] = "auto",
    inputs: Annotated[Path | None, typer.Option(help="Folder of photos (default: packaged real photos).")] = None,
    batch: Annotated[str, typer.Option(help="Batch sizes to sweep.")] = "1,2,4,8,16",
    thread_sweep: Annotated[
        str, typer.Option("--thread-sweep", help="Thread counts to sweep (default 1..cores).")
    ] = "",
    seq: Annotated[str, typer.Option(help="Sequence lengths to sweep (text models).")] = "32,64,128,256",
    seconds: Annotated[float, typer.Option(help="Time cap for the latency distribution and the pipeline.")] = 3.0,
    json_path: JsonOption = None,
    html_path: Annotated[Path | None, typer.Option("--html", help="Write the HTML report here.")] = None,
    quick: Annotated[bool, typer.Option(help="Short caps and small sweeps (seconds, not minutes).")] = False,
    tokenizer: TokenizerOption = None,
) -> None:
    """Where the time goes: stages, operators, roofline, jitter, scaling, and what to do about it."""
    if is_llm(model):
        profile_llm(model, threads, quick, json_path, html_path)
        return
    if pipeline not in ("auto", "image", "text", "none"):
        raise typer.BadParameter("choose auto, image, text or none", param_hint="--pipeline")
    kind: PipelineKind = pipeline  # type: ignore[assignment]
    request = ProfileRequest(
        backend, SessionOptions(intra_threads=threads), kind, inputs, seconds, int_list(batch, "--batch"),
        int_list(thread_sweep, "--thread-sweep") if thread_sweep else (), int_list(seq, "--seq"),
    )  # fmt: skip
    if quick:
        request = ProfileRequest.quick(backend=backend, options=request.options, pipeline=kind, inputs=inputs)
    resolved = resolve_model(model, settings(), tokenizer)
    render.inferred(resolved)
    with render.progress() as step:
        report = profile_model(resolved, request, settings(), progress=step)
    render.profile(report)
    data = report.to_dict()
    if json_path:
        render.write_json(json_path, data)
    if html_path:
        render.write_text(html_path, profile_html(data))


@app.command("bench-decode")
def bench_decode(
    inputs: Annotated[
        Path | None, typer.Option(help="Folder of JPEGs (default: 0.3, 4.1, 12.5 MP real photos).")
    ] = None,
    seconds: Annotated[float, typer.Option(help="Time cap per photo for the interleaved latency runs.")] = 5.0,
    json_path: JsonOption = None,
) -> None:
    """Decoders vs the Pillow + torchvision-style baseline: ms/image, speedup with CI, images/s on 1 and 2 threads."""
    cases = folder_cases(inputs) if inputs else default_cases(settings())
    results = compare_decoders(cases, ImagePreprocess(), seconds=seconds)
    render.decode_results(cases, results)
    if json_path:
        render.write_json(
            json_path, {"cases": [c.describe() for c in cases], "results": [r.to_dict() for r in results]}
        )


def percent(text: str, option: str = "--fail-if-slower") -> float:
    """Parse "5%" or "0.05" into 0.05."""
    try:
        return float(text.rstrip("%")) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise typer.BadParameter(f"expected a percentage like 5%, got {text!r}", param_hint=option) from None


def budget_drop(text: str) -> tuple[float, bool]:
    """--budget: "1%" (relative to the original's accuracy) or "1pt" (accuracy points) → (0.01, points?)."""
    if text.endswith("pt"):
        return percent(text.removesuffix("pt") + "%", "--budget"), True
    return percent(text, "--budget"), False


@app.command()
def bench(
    model: Annotated[
        str | None, typer.Argument(help="A: zoo name, card, ONNX path or .variant.json; MODEL@BACKEND.")
    ] = None,
    vs: Annotated[
        str | None, typer.Option(help="B, interleaved with A (the same as A for an A/A noise check).")
    ] = None,
    batch: Annotated[int, typer.Option(min=1)] = 1,
    threads: Annotated[int, typer.Option(help="Intra-op threads; 0 = a variant file's, else the runtime default.")] = 0,
    backend: Annotated[str, typer.Option(help="ort, openvino or torch (MODEL@BACKEND overrides).")] = "ort",
    duration: Annotated[float, typer.Option(help="Seconds of timed runs.")] = 10.0,
    runs: Annotated[int | None, typer.Option(help="Exact number of timed runs (overrides --duration).")] = None,
    history_path: Annotated[Path | None, typer.Option("--history", help="SQLite history file.")] = None,
    no_history: Annotated[bool, typer.Option("--no-history", help="Do not store this run.")] = False,
    baseline: Annotated[int | None, typer.Option(help="History run id to compare against (regression gate).")] = None,
    fail_if_slower: Annotated[str, typer.Option(help="Gate threshold, e.g. 5%.")] = "5%",
    http: Annotated[str | None, typer.Option(help="Load-test this URL instead of a local model.")] = None,
    openai_url: Annotated[
        str | None, typer.Option("--openai", help="Load-test an OpenAI-compatible server (streamed completions).")
    ] = None,
    rate: Annotated[str | None, typer.Option(help="Open loop: requests/s (--openai: a list, e.g. 0.5,1,2).")] = None,
    concurrency: Annotated[
        str | None, typer.Option(help="Closed loop: concurrent clients (--openai: a list, e.g. 1,4,16).")
    ] = None,
    p99_target: Annotated[float | None, typer.Option(help="Rate sweep: highest rate with p99 under this, ms.")] = None,
    body: Annotated[str, typer.Option(help="image, v2-json or v2-binary (V2 bodies follow MODEL's inputs).")] = "image",
    requests: Annotated[int, typer.Option(min=1, help="--openai: requests per step.")] = 32,
    max_tokens: Annotated[int, typer.Option(min=1, help="--openai: tokens generated per request.")] = 128,
    prompt_tokens: Annotated[int, typer.Option(min=1, help="--openai: prompt length, tokens (about).")] = 200,
    shared_prefix: Annotated[int, typer.Option(min=0, help="--openai: tokens of a shared system prompt.")] = 0,
    completions: Annotated[bool, typer.Option(help="--openai: /v1/completions instead of chat.")] = False,
    ttft_target_ms: Annotated[float, typer.Option(help="--openai goodput: TTFT target, ms.")] = 1000.0,
    tpot_target_ms: Annotated[float, typer.Option(help="--openai goodput: TPOT target, ms.")] = 100.0,
    html_path: Annotated[Path | None, typer.Option("--html", help="--openai: an HTML report here.")] = None,
    json_path: JsonOption = None,
) -> None:
    """Rigorous latency of a model, an interleaved A/B with a verdict, HTTP load (open/closed loop, sweep), or an
    OpenAI-compatible server under streamed load (--openai)."""
    env = settings()
    if openai_url:
        streamed = OpenAiLoad(openai_url, model or "", prompt_tokens, max_tokens, not completions, shared_prefix,
                              ttft_target_s=ttft_target_ms / 1000, tpot_target_s=tpot_target_ms / 1000)  # fmt: skip
        levels = [("closed", float(c)) for c in int_list(concurrency or "1", "--concurrency")] + [
            ("open", r) for r in float_list(rate or "", "--rate")]  # fmt: skip
        bench_openai(streamed, levels, requests, None if no_history else (history_path or env.history_path),
                     json_path, html_path)  # fmt: skip
        return
    if http:
        if body not in ("image", "v2-json", "v2-binary"):
            raise typer.BadParameter("choose image, v2-json or v2-binary", param_hint="--body")
        variant = parse_variant(model, env, backend) if model else None
        target = p99_target / 1000 if p99_target else None
        rates, clients = float_list(rate or "", "--rate"), int_list(concurrency, "--concurrency") if concurrency else ()
        if len(rates) > 1 or len(clients) > 1:
            raise typer.BadParameter("--http takes one --rate or one --concurrency", param_hint="--rate")
        load = LoadRequest(http, body, rates[0] if rates else None, clients[0] if clients else None,  # type: ignore[arg-type]
                           target, duration, variant)  # fmt: skip
        results, best = run_load(load, env)
        render.load_results(results, best, target)
        if json_path:
            render.write_json(json_path, {"steps": [r.to_dict() for r in results], "best_rate": best})
        return
    if model is None:
        raise typer.BadParameter("give a MODEL, or --http URL", param_hint="MODEL")
    if is_llm(model):
        bench_llm(model, vs, threads, runs, None if no_history else (history_path or env.history_path), json_path)
        return
    a = parse_variant(model, env, backend, threads)
    render.inferred(a.card)
    b = parse_variant(vs, env, backend, threads) if vs else None
    config = BenchConfig(batch=batch, duration=duration, runs=runs)
    store = None if no_history else (history_path or env.history_path)
    outcome = run_bench(a, b, config, store, baseline, percent(fail_if_slower))
    render.bench_outcome(outcome)
    if json_path:
        render.write_json(json_path, outcome.to_dict())
    if outcome.gate is not None and outcome.gate.failed:
        raise history.Regression(outcome.gate.message)


@app.command()
def optimize(
    model: Annotated[str, typer.Argument(help="Zoo name, ModelCard (.card.json) or ONNX path.")],
    inputs: Annotated[
        Path | None, typer.Option(help="Photos, an ImageFolder (labels), a text file, an .npz or .npy folder.")
    ] = None,
    budget: Annotated[
        str | None,
        typer.Option(
            help="Allowed drop (default 1%): labelled, of the original's accuracy (or 1pt: points); else decisive "
            "top-1 agreement / cosine. LLMs: next-token agreement ≥ 1 − P, perplexity ratio ≤ 1 + P/2 (default: "
            "0.90 and 1.05)."
        ),
    ] = None,
    label_map: Annotated[
        Path | None, typer.Option(help="ImageFolder class names → indices (lines: name index).")
    ] = None,
    decisive: Annotated[
        float, typer.Option(min=0.01, max=0.99, help="Inputs whose top-1 probability is ≥ this judge agreement.")
    ] = DECISIVE_P,
    tokenizer: TokenizerOption = None,
    objective: Annotated[
        str,
        typer.Option(
            help="latency (at --batch) or throughput (items/s). LLMs: latency = one stream's decode tok/s, "
            "throughput = output tok/s of --batch concurrent streams (16 when --batch is 1), grounded = one "
            "stream's decode on input-grounded tasks (prompt lookup searched)."
        ),
    ] = "latency",
    batch: Annotated[int, typer.Option(min=1)] = 1,
    p99_target_ms: Annotated[
        float | None, typer.Option(help="Reject candidates whose p99 per call exceeds this (with throughput).")
    ] = None,
    swap: Annotated[list[str] | None, typer.Option(help="A lighter model to try instead (repeatable).")] = None,
    strategy: Annotated[str, typer.Option(help="staged, exhaustive or random.")] = "staged",
    trials: Annotated[int, typer.Option(min=1, help="Candidates the random strategy draws.")] = 12,
    output: Annotated[
        str | None, typer.Option(help="The output the budget judges; a classifier's features: as embeddings.")
    ] = None,
    metric: Annotated[str | None, typer.Option(help="Your metric, module:function(reference, candidate).")] = None,
    metric_min: Annotated[float | None, typer.Option(help="Least value of --metric.")] = None,
    config: Annotated[
        Path | None, typer.Option(help="A plan file (YAML/JSON): its fields replace the options; MODEL, --quick apply.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for the chosen variant, decision log and report.")] = Path(
        "out/optimize"
    ),
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan (JSON) with its candidates; run nothing.")
    ] = False,
    quick: Annotated[bool, typer.Option(help="Few inputs, short timing, no slow candidates (about a minute).")] = False,
) -> None:
    """Search passes, backends and options; keep the fastest variant inside the accuracy budget, explained."""
    if is_llm(model):
        allowed = percent(budget, "--budget") if budget else None
        agreement, ratio = (0.90, 1.05) if allowed is None else (1 - allowed, 1 + allowed / 2)
        optimize_llm(model, quick, out, GenBudget(agreement, ratio), objective, batch if batch > 1 else 16)
        return
    drop, points = budget_drop(budget or "1%")
    fields = {
        "model": model, "inputs": str(inputs) if inputs else None, "budget": drop, "budget_points": points,
        "label_map": str(label_map) if label_map else None, "decisive": decisive,
        "tokenizer": str(tokenizer) if tokenizer else None,
        "objective": objective, "batch": batch, "p99_target_ms": p99_target_ms, "swap": swap or [],
        "strategy": strategy, "trials": trials, "metric": metric, "metric_min": metric_min, "out_dir": str(out),
        "output": output,
    }  # fmt: skip
    plan = load_plan(config, {"model": model}) if config else Plan.from_dict(fields)
    plan = quick_plan(plan) if quick else plan
    env = settings()
    render.inferred(resolve_model(plan.model, env, Path(plan.tokenizer) if plan.tokenizer else None))
    if dry_run:
        render.console.print_json(expand(plan, env).to_json())
        return
    with render.progress() as step:
        result = run_optimize(plan, env, progress=lambda label, done: step(f"[{done + 1}] {label}"))
    files = artifacts.save(result, Path(plan.out_dir), env)
    render.optimize_result(result)
    for path in files.values():
        render.console.print(f"wrote {path}")
    if not result.budget_met:
        raise BudgetExceeded(
            f"no optimized candidate keeps the budget ({plan.budget:.2%}); the original is returned: {files['variant']}"
        )


@app.command("history")
def history_command(
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
    history_path: Annotated[Path | None, typer.Option("--history", help="SQLite history file.")] = None,
    html_path: Annotated[Path | None, typer.Option("--html", help="Write a trend plot page here.")] = None,
) -> None:
    """Stored bench runs, oldest first, with significant slowdowns between consecutive runs flagged."""
    path = history_path or settings().history_path
    stored = history.runs(path, model)
    render.history(stored, history.regressions(stored))
    if html_path:
        render.write_text(html_path, history_html([render.run_row(r) for r in stored]))


def main() -> None:
    """Entry point: user errors print one line and exit with their code (2, or 3 for budget)."""
    try:
        app()
    except TurboinferError as err:
        render.error(str(err))
        sys.exit(err.exit_code)


if __name__ == "__main__":
    main()
