"""`turboinfer` command line (typer)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from turboinfer.bench import history
from turboinfer.bench.decode import compare_decoders, default_cases, folder_cases
from turboinfer.cli import render
from turboinfer.cli.bench import bench
from turboinfer.cli.card import card
from turboinfer.cli.groups import grouped, option_group
from turboinfer.cli.llm import profile_llm
from turboinfer.cli.optimize import optimize
from turboinfer.cli.options import (
    JsonOption,
    TokenizerOption,
    int_list,
    settings,
)
from turboinfer.cli.search import search
from turboinfer.cli.serve import serve
from turboinfer.core.errors import TurboinferError
from turboinfer.core.types import ImagePreprocess
from turboinfer.llm.card import build_llm, llm_table
from turboinfer.llm.variant import is_llm
from turboinfer.models.catalog import build_zoo_model, resolve_model, zoo_table
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
app.command()(bench)
app.command()(optimize)


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


@option_group("Sweeps and caps")
class Sweeps:
    """How long the profile measures and what it sweeps."""

    batch: Annotated[str, typer.Option(help="Batch sizes to sweep.")] = "1,2,4,8,16"
    thread_sweep: Annotated[str, typer.Option("--thread-sweep", help="Thread counts to sweep (default 1..cores).")] = ""
    seq: Annotated[str, typer.Option(help="Sequence lengths to sweep (text models).")] = "32,64,128,256"
    seconds: Annotated[float, typer.Option(help="Time cap for the latency distribution and the pipeline.")] = 3.0
    quick: Annotated[bool, typer.Option(help="Short caps and small sweeps (seconds, not minutes).")] = False


@option_group("Reports")
class Reports:
    """Where the profile is also written."""

    json_path: JsonOption = None
    html_path: Annotated[Path | None, typer.Option("--html", help="Write the HTML report here.")] = None


@app.command()
@grouped
def profile(
    model: Annotated[str, typer.Argument(help="Zoo name, ModelCard (.card.json) or ONNX path.")],
    sweeps: Sweeps,
    reports: Reports,
    backend: Annotated[str, typer.Option(help="ort or openvino.")] = "ort",
    threads: Annotated[int, typer.Option(help="Intra-op threads; 0 = all usable cores.")] = 0,
    pipeline: Annotated[str, typer.Option(help="auto, image, text or none.")] = "auto",
    inputs: Annotated[Path | None, typer.Option(help="Folder of photos (default: packaged real photos).")] = None,
    tokenizer: TokenizerOption = None,
) -> None:
    """Where the time goes: stages, operators, roofline, jitter, scaling, and what to do about it."""
    if is_llm(model):
        profile_llm(model, threads, sweeps.quick, reports.json_path, reports.html_path)
        return
    if pipeline not in ("auto", "image", "text", "none"):
        raise typer.BadParameter("choose auto, image, text or none", param_hint="--pipeline")
    kind: PipelineKind = pipeline  # type: ignore[assignment]
    options = SessionOptions(intra_threads=threads)
    request = ProfileRequest(
        backend, options, kind, inputs, sweeps.seconds, int_list(sweeps.batch, "--batch"),
        int_list(sweeps.thread_sweep, "--thread-sweep") if sweeps.thread_sweep else (), int_list(sweeps.seq, "--seq"),
    )  # fmt: skip
    if sweeps.quick:
        request = ProfileRequest.quick(backend=backend, options=options, pipeline=kind, inputs=inputs)
    resolved = resolve_model(model, settings(), tokenizer)
    render.inferred(resolved)
    with render.progress() as step:
        report = profile_model(resolved, request, settings(), progress=step)
    render.profile(report)
    if reports.json_path:
        render.write_json(reports.json_path, report.to_dict())
    if reports.html_path:
        render.write_text(reports.html_path, profile_html(report))


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
        render.write_text(html_path, history_html(stored))


def main() -> None:
    """Entry point: user errors print one line and exit with their code (2, or 3 for budget)."""
    try:
        app()
    except TurboinferError as err:
        render.error(str(err))
        sys.exit(err.exit_code)


if __name__ == "__main__":
    main()
