"""`turboinfer bench`: a model's latency or an interleaved A/B (tensor models and LLMs), HTTP load on a V2 server
(--http), or streamed load on an OpenAI-compatible server (--openai) — one verb, its options grouped by product."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from turboinfer.bench import history
from turboinfer.bench.ab import BenchConfig
from turboinfer.bench.openai_load import OpenAiLoad
from turboinfer.bench.run import LoadRequest, run_bench, run_load
from turboinfer.cli import render
from turboinfer.cli.groups import grouped, option_group
from turboinfer.cli.llm import bench_llm, bench_openai
from turboinfer.cli.options import JsonOption, float_list, int_list, percent, settings
from turboinfer.core.settings import Settings
from turboinfer.llm.variant import is_llm
from turboinfer.models.variant import parse_variant


@option_group("Timing a model")
class Timing:
    """How a local model (or an A/B pair) is timed."""

    batch: Annotated[int, typer.Option(min=1)] = 1
    threads: Annotated[int, typer.Option(help="Intra-op threads; 0 = a variant file's, else the runtime default.")] = 0
    backend: Annotated[str, typer.Option(help="ort, openvino or torch (MODEL@BACKEND overrides).")] = "ort"
    duration: Annotated[float, typer.Option(help="Seconds of timed runs.")] = 10.0
    runs: Annotated[int | None, typer.Option(help="Exact number of timed runs (overrides --duration).")] = None


@option_group("History and regression gate")
class Gate:
    """Where runs are stored and what a run is compared against."""

    history_path: Annotated[Path | None, typer.Option("--history", help="SQLite history file.")] = None
    no_history: Annotated[bool, typer.Option("--no-history", help="Do not store this run.")] = False
    baseline: Annotated[int | None, typer.Option(help="History run id to compare against (regression gate).")] = None
    fail_if_slower: Annotated[str, typer.Option(help="Gate threshold, e.g. 5%.")] = "5%"

    def store(self, env: Settings) -> Path | None:
        """The history file this run goes into (None: not stored)."""
        return None if self.no_history else (self.history_path or env.history_path)


@option_group("Load on a server (--http, --openai)")
class Load:
    """A server to load instead of a local model, and the load's shape."""

    http: Annotated[str | None, typer.Option(help="Load-test this URL instead of a local model.")] = None
    openai_url: Annotated[
        str | None, typer.Option("--openai", help="Load-test an OpenAI-compatible server (streamed completions).")
    ] = None
    rate: Annotated[str | None, typer.Option(help="Open loop: requests/s (--openai: a list, e.g. 0.5,1,2).")] = None
    concurrency: Annotated[
        str | None, typer.Option(help="Closed loop: concurrent clients (--openai: a list, e.g. 1,4,16).")
    ] = None
    p99_target: Annotated[float | None, typer.Option(help="Rate sweep: highest rate with p99 under this, ms.")] = None
    body: Annotated[str, typer.Option(help="image, v2-json or v2-binary (V2 bodies follow MODEL's inputs).")] = "image"


@option_group("Streamed requests (--openai)")
class Streamed:
    """What each streamed request of --openai asks for, and the goodput targets."""

    requests: Annotated[int, typer.Option(min=1, help="--openai: requests per step.")] = 32
    max_tokens: Annotated[int, typer.Option(min=1, help="--openai: tokens generated per request.")] = 128
    prompt_tokens: Annotated[int, typer.Option(min=1, help="--openai: prompt length, tokens (about).")] = 200
    shared_prefix: Annotated[int, typer.Option(min=0, help="--openai: tokens of a shared system prompt.")] = 0
    completions: Annotated[bool, typer.Option(help="--openai: /v1/completions instead of chat.")] = False
    ttft_target_ms: Annotated[float, typer.Option(help="--openai goodput: TTFT target, ms.")] = 1000.0
    tpot_target_ms: Annotated[float, typer.Option(help="--openai goodput: TPOT target, ms.")] = 100.0


@grouped
def bench(
    timing: Timing,
    gate: Gate,
    load: Load,
    streamed: Streamed,
    model: Annotated[
        str | None, typer.Argument(help="A: zoo name, card, ONNX path or .variant.json; MODEL@BACKEND.")
    ] = None,
    vs: Annotated[
        str | None, typer.Option(help="B, interleaved with A (the same as A for an A/A noise check).")
    ] = None,
    html_path: Annotated[Path | None, typer.Option("--html", help="--openai: an HTML report here.")] = None,
    json_path: JsonOption = None,
) -> None:
    """Rigorous latency of a model, an interleaved A/B with a verdict, HTTP load (open/closed loop, sweep), or an
    OpenAI-compatible server under streamed load (--openai)."""
    env = settings()
    if load.openai_url:
        bench_openai_server(load.openai_url, model, load, streamed, gate.store(env), (json_path, html_path))
    elif load.http:
        bench_http(load.http, model, load, timing, env, json_path)
    elif model is None:
        raise typer.BadParameter("give a MODEL, or --http URL", param_hint="MODEL")
    elif is_llm(model):
        bench_llm(model, vs, timing.threads, timing.runs, gate.store(env), json_path)
    else:
        bench_model(model, vs, timing, gate, env, json_path)


def bench_openai_server(url: str, model: str | None, load: Load, streamed: Streamed, store: Path | None,
                        reports: tuple[Path | None, Path | None]) -> None:  # fmt: skip
    """`bench --openai URL`: streamed load at each concurrency and rate."""
    requests = OpenAiLoad(url, model or "", streamed.prompt_tokens, streamed.max_tokens, not streamed.completions,
                          streamed.shared_prefix, ttft_target_s=streamed.ttft_target_ms / 1000,
                          tpot_target_s=streamed.tpot_target_ms / 1000)  # fmt: skip
    levels = [("closed", float(c)) for c in int_list(load.concurrency or "1", "--concurrency")] + [
        ("open", r) for r in float_list(load.rate or "", "--rate")]  # fmt: skip
    bench_openai(requests, levels, streamed.requests, store, *reports)


def bench_http(url: str, model: str | None, load: Load, timing: Timing, env: Settings, json_path: Path | None) -> None:
    """`bench --http URL`: open or closed loop, or a rate sweep to a p99 target, on a V2 server."""
    if load.body not in ("image", "v2-json", "v2-binary"):
        raise typer.BadParameter("choose image, v2-json or v2-binary", param_hint="--body")
    variant = parse_variant(model, env, timing.backend) if model else None
    target = load.p99_target / 1000 if load.p99_target else None
    rates = float_list(load.rate or "", "--rate")
    clients = int_list(load.concurrency, "--concurrency") if load.concurrency else ()
    if len(rates) > 1 or len(clients) > 1:
        raise typer.BadParameter("--http takes one --rate or one --concurrency", param_hint="--rate")
    request = LoadRequest(url, load.body, rates[0] if rates else None, clients[0] if clients else None,  # type: ignore[arg-type]
                          target, timing.duration, variant)  # fmt: skip
    results, best = run_load(request, env)
    render.load_results(results, best, target)
    if json_path:
        render.write_json(json_path, {"steps": [r.to_dict() for r in results], "best_rate": best})


def bench_model(model: str, vs: str | None, timing: Timing, gate: Gate, env: Settings, json_path: Path | None) -> None:
    """`bench MODEL [--vs B]`: latency with CIs, or an interleaved A/B with a verdict; stored, gated."""
    a = parse_variant(model, env, timing.backend, timing.threads)
    render.inferred(a.card)
    b = parse_variant(vs, env, timing.backend, timing.threads) if vs else None
    config = BenchConfig(batch=timing.batch, duration=timing.duration, runs=timing.runs)
    outcome = run_bench(a, b, config, gate.store(env), gate.baseline, percent(gate.fail_if_slower))
    render.bench_outcome(outcome)
    if json_path:
        render.write_json(json_path, outcome.to_dict())
    if outcome.gate is not None and outcome.gate.failed:
        raise history.Regression(outcome.gate.message)
