"""The only place that prints: rich tables and one-line errors."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from turboinfer.apps.imagesearch.case_study import CaseStudyResult
from turboinfer.apps.imagesearch.index import IndexReport
from turboinfer.apps.imagesearch.query import QueryResult
from turboinfer.apps.imagesearch.recall import RecallReport
from turboinfer.bench.ab import BenchResult
from turboinfer.bench.decode import DecodeCase, MethodResult
from turboinfer.bench.history import Run
from turboinfer.bench.loadgen import LoadResult
from turboinfer.bench.run import BenchOutcome
from turboinfer.core.card import ModelCard
from turboinfer.llm.card import LlmCard
from turboinfer.measure.stats import PairedRatio, Summary
from turboinfer.optimize.run import OptimizeResult
from turboinfer.profile.machine import ProbeReport
from turboinfer.profile.run import ProfileReport
from turboinfer.report.html import ms
from turboinfer.serve.run import LlmServing
from turboinfer.serve.v2.repository import ModelServing

console = Console()
errors = Console(stderr=True)


def error(message: str) -> None:
    """A user error: one line on stderr, no traceback."""
    errors.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write machine-readable results and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str))
    console.print(f"wrote {path}")


def write_text(path: Path, text: str) -> None:
    """Write a text artifact (an HTML report) and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    console.print(f"wrote {path}")


@contextmanager
def progress() -> Iterator[Callable[[str], None]]:
    """A spinner on stderr; yields a function that names the current step."""
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=errors,
                  transient=True) as bar:  # fmt: skip
        task = bar.add_task("starting")
        yield lambda step: bar.update(task, description=step)


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr; yields a function taking (done, total)."""
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=errors,
                  transient=True) as bar:  # fmt: skip
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def probe(report: ProbeReport) -> None:
    """Render `turboinfer probe`."""
    cpu = report.machine.cpu
    quota = "none" if cpu.quota_cpus is None else f"{cpu.quota_cpus:g} CPUs"
    console.print(f"[bold]{cpu.model}[/] ({cpu.arch}), {cpu.cores} logical cores, cgroup quota: {quota}")
    console.print(f"ISA: {', '.join(cpu.isa) or 'none of interest'}")
    limit = report.machine.memory_limit_gib
    console.print(f"memory: {report.machine.memory_gib} GiB" + (f" (cgroup limit {limit:.1f} GiB)" if limit else ""))
    gpus = ", ".join(f"{g.name} {g.memory_gib} GiB" for g in report.machine.gpus)
    console.print(f"GPU: {gpus or 'none'} ({report.machine.gpu_probe})")
    table = Table(title="Measured ceilings")
    for column in ("measurement", "value", "unit", "method"):
        table.add_column(column)
    for metric in report.ceilings:
        table.add_row(metric.name, f"{metric.value:,.1f}", metric.unit, metric.method)
    console.print(table)
    console.print(f"probe took {report.seconds:.1f} s")


def zoo_list(rows: list[dict[str, object]]) -> None:
    """Render `turboinfer zoo list`."""
    table = Table(title="Model zoo")
    table.add_column("name", no_wrap=True)
    for column in ("task", "weights", "description", "built"):
        table.add_column(column)
    for row in rows:
        built = "yes" if row["built"] else "no"
        table.add_row(*(str(row[c]) for c in ("name", "task", "weights", "description")), built)
    console.print(table)


def inferred(card: ModelCard, always: bool = False) -> None:
    """Say what was inferred from a bare ONNX graph (a model with no card file), one line per input and task."""
    if card.extra.get("inferred") and (always or not card.card_path.is_file()):
        for line in card.extra["inferred"]:
            console.print(f"[dim]inferred:[/] {escape(line)}", highlight=False)


def zoo_built(card: ModelCard) -> None:
    """Render `turboinfer zoo build`: the card path on stdout (scriptable), details on stderr."""
    seconds = card.extra.get("build_seconds")
    timing = " [yellow](random weights: timing only)[/]" if card.provenance.timing_only else ""
    errors.print(
        f"{card.name}: {card.onnx_path.stat().st_size / 2**20:.1f} MiB ONNX, sha256 "
        f"{card.onnx_sha256[:12]}…, built in {seconds} s{timing}",
        highlight=False,
    )
    print(card.card_path)


def llm_built(card: LlmCard) -> None:
    """Render `turboinfer zoo build` of an LLM: its cache folder on stdout, what the file is on stderr."""
    llm_facts(card)
    print(card.folder)


def llm_facts(card: LlmCard) -> None:
    """Say what an LLM file is (architecture, sizes, layout, tokenizer, template) and what its overrides change."""
    errors.print(f"{card.name}: {card.line()}", highlight=False, markup=False, soft_wrap=True)
    for line in card.overrides.lines():
        errors.print(f"{card.name}: override: {line}", highlight=False, markup=False, soft_wrap=True)


def latency_line(label: str, s: Summary) -> str:
    """One line: median (CI), p90, p99, CV, first-call penalty."""
    penalty = f", first call {s.first_call_penalty:.1f}× median" if s.first_call_penalty else ""
    return (
        f"{label}: median {ms(s.median)} ms (95% CI {ms(s.median_ci[0])}–{ms(s.median_ci[1])}), "
        f"p90 {ms(s.p90)}, p99 {ms(s.p99)} ms, CV {s.cv:.2f}, outliers {s.outlier_rate:.1%}{penalty}, n={s.n}"
    )


def profile(report: ProfileReport) -> None:
    """Render `turboinfer profile`."""
    backend = report.backend
    console.print(f"[bold]{report.model}[/] on {backend['backend']} ({backend.get('precision')})")
    console.print(latency_line("model only, batch 1", report.model_latency), highlight=False)
    if (penalty := report.new_shape_penalty()) is not None:
        console.print(f"new-shape penalty: first call at a new batch size {penalty:.1f}× its median", highlight=False)
    pipeline = report.pipeline
    if pipeline is not None:
        title = f"One request through the pipeline ({pipeline.requests} requests, {pipeline.inputs_used} inputs)"
        table = Table(title=title)
        for column in ("stage", "median ms", "p99 ms", "share of mean"):
            table.add_column(column, justify="left" if column == "stage" else "right")
        for stage in pipeline.stages:
            table.add_row(stage.name, ms(stage.summary.median), ms(stage.summary.p99), f"{stage.share:.0%}")
        table.add_row("[bold]end to end[/]", ms(pipeline.end_to_end.median), ms(pipeline.end_to_end.p99), "100%")
        console.print(table)
        for reason in pipeline.inputs_skipped:
            errors.print(f"[yellow]skipped[/] {escape(reason)}", highlight=False)
    if report.operators is not None:
        ops = Table(title="Operators by type (one inference)")
        for column in ("op type", "ms", "share", "nodes"):
            ops.add_column(column, justify="left" if column == "op type" else "right")
        for op in report.operators.by_type[:8]:
            ops.add_row(op.op_type, ms(op.seconds), f"{op.share:.0%}", str(op.nodes))
        console.print(ops)
    roof, whole = report.ceilings, report.whole_model
    if whole is not None and whole.attained_gflops is not None:
        console.print(
            f"roofline: {whole.flops / 1e9:.2f} GFLOP, intensity {whole.flops / whole.bytes:.1f} FLOP/byte vs ridge "
            f"{roof.ridge:.1f} → {whole.bound}-bound; {whole.attained_gflops:.0f} GFLOP/s attained of "
            f"{whole.ceiling_gflops:.0f} ({roof.peak_gflops:.0f} GFLOP/s peak, "
            f"{roof.bandwidth_gbps:.1f} GB/s measured)",
            highlight=False,
        )
    for sweep in report.sweeps:
        points = ", ".join(f"{p.value}: {ms(p.median_s)} ms" for p in sweep.points)
        stopped = f" [yellow]({escape(sweep.stopped)})[/]" if sweep.stopped else ""
        console.print(f"{sweep.parameter} sweep: {points}{stopped}", highlight=False)
    console.print("[bold]Recommendations[/] (ranked)")
    for i, rec in enumerate(report.recommendations, 1):
        console.print(f"{i}. {escape(rec.action)}", highlight=False)
        console.print(f"   evidence: {escape(rec.evidence)}; expected: {escape(rec.expected_gain)}", highlight=False)
    if not report.recommendations:
        console.print("no rule fired")


def decode_results(cases: list[DecodeCase], results: list[MethodResult]) -> None:
    """Render `turboinfer bench-decode`."""
    for case in cases:
        console.print(
            f"[bold]{case.label}[/]: {case.width}x{case.height}, {len(case.jpeg) // 1024} KiB ({case.origin})"
        )
    table = Table(title="JPEG → normalized 224×224 tensor (interleaved runs; speedup = baseline / method, 95% CI)")
    for column in ("photo", "method", "median ms", "p90 ms", "speedup", "img/s 1 thread", "img/s 2 threads"):
        table.add_column(column, justify="left" if column in ("photo", "method") else "right")
    for r in results:
        speedup = "—" if r.speedup is None else f"{r.speedup.ratio:.2f}× ({r.speedup.ci[0]:.2f}–{r.speedup.ci[1]:.2f})"
        rates = [f"{r.images_per_s[t]:.0f}" if t in r.images_per_s else "—" for t in (1, 2)]
        table.add_row(r.case, r.method, ms(r.latency.median), ms(r.latency.p90), speedup, *rates)
    console.print(table)


def bench_line(label: str, r: BenchResult) -> str:
    """One variant's figures: median with CI, p90/p99 with CIs, throughput, memory."""
    s = r.summary
    return (
        f"{label} {r.variant['model_name']}@{r.variant['backend']} batch {r.batch} ({r.precision}): "
        f"median {ms(s.median)} ms ({ms(s.median_ci[0])}–{ms(s.median_ci[1])}), p90 {ms(s.p90)} "
        f"({ms(r.p90_ci[0])}–{ms(r.p90_ci[1])}), p99 {ms(s.p99)} ({ms(r.p99_ci[0])}–{ms(r.p99_ci[1])}) ms, "
        f"CV {s.cv:.2f}, {r.throughput:.1f} items/s ({r.throughput_ci[0]:.1f}–{r.throughput_ci[1]:.1f}), "
        f"first call {s.first_call_penalty or 0:.1f}×, +{r.rss_delta_mib:.0f} MiB RSS "
        f"(peak {r.peak_rss_mib:.0f}), n={s.n}"
    )


def bench_outcome(outcome: BenchOutcome) -> None:
    """Render `turboinfer bench` (single or A/B) and the gate."""
    if outcome.ab:
        console.print(bench_line("A", outcome.ab.a), highlight=False)
        console.print(bench_line("B", outcome.ab.b), highlight=False)
        ratio = outcome.ab.ratio
        console.print(f"B/A latency {ratio.ratio:.3f} (95% CI {ratio.ci[0]:.3f}–{ratio.ci[1]:.3f}), paired over "
                      f"{outcome.ab.a.summary.n} interleaved rounds", highlight=False)  # fmt: skip
        console.print(f"[bold]verdict:[/] {escape(outcome.ab.verdict)}", highlight=False)
    elif outcome.single:
        console.print(bench_line("", outcome.single).strip(), highlight=False)
    if outcome.run_ids:
        console.print(f"stored as history run(s) {', '.join(map(str, outcome.run_ids))}")
    if outcome.gate:
        colour = "red" if outcome.gate.failed else "green"
        console.print(f"[{colour}]{escape(outcome.gate.message)}[/]", highlight=False)


def load_results(results: list[LoadResult], best: float | None, target: float | None) -> None:
    """Render a load run (or each step of a sweep)."""
    table = Table(title="HTTP load")
    for column in ("mode", "offered/s", "achieved/s", "sent", "ok", "p50 ms", "p90 ms", "p99 ms", "statuses"):
        table.add_column(column, justify="left" if column in ("mode", "statuses") else "right")
    for r in results:
        offered = f"{r.offered_rate:.0f}" if r.offered_rate else f"{r.concurrency} clients"
        statuses = ", ".join(f"{k}: {v}" for k, v in r.statuses.items())
        latencies = (ms(r.percentile(q)) for q in (50, 90, 99))
        table.add_row(r.mode, offered, f"{r.achieved_rate:.0f}", str(r.sent), str(r.ok), *latencies, statuses)
    console.print(table)
    if target is not None:
        found = f"{best:.0f} requests/s" if best else "none (even the first rate missed it)"
        console.print(f"highest rate with p99 ≤ {target * 1e3:.0f} ms: {found}")


def history(stored: list[Run], flagged: list[tuple[Run, Run, PairedRatio]]) -> None:
    """Render `turboinfer history`."""
    table = Table(title=f"History ({len(stored)} runs)")
    for column in ("id", "when (UTC)", "variant", "batch", "median ms", "p99 ms", "items/s"):
        table.add_column(column, justify="left" if column in ("when (UTC)", "variant") else "right")
    for run in stored:
        table.add_row(str(run.id), run.created_utc, run.label, str(run.batch), f"{run.median_s * 1e3:.3g}",
                      f"{run.p99_s * 1e3:.3g}", f"{run.throughput:.1f}")  # fmt: skip
    console.print(table)
    for before, after, ratio in flagged:
        console.print(f"[red]regression[/]: run {after.id} is {ratio.ratio:.2f}× run {before.id} "
                      f"(95% CI {ratio.ci[0]:.2f}–{ratio.ci[1]:.2f}) for {after.label}", highlight=False)  # fmt: skip


def serving(host: str, port: int, served: list[ModelServing], llms: Sequence[LlmServing] = ()) -> None:
    """Say what is being served where (and each LLM's KV cache arithmetic)."""
    labels = [s.variant.label + (f" + {s.split.mode} {s.second.label}" if s.second and s.split else "") for s in served]
    if labels:
        console.print(f"serving {', '.join(labels)} on http://{host}:{port} (KServe V2 under /v2, metrics at /metrics)")
    for llm in llms:
        second = f" + {llm.split.mode} {llm.second.engine.engine}" if llm.second and llm.split else ""
        console.print(f"serving {llm.name} ({llm.engine.engine}{second}) on http://{host}:{port}/v1 (OpenAI API; "
                      "/health)")  # fmt: skip
        console.print(f"  {llm.facts}", highlight=False, markup=False)
        console.print(f"  {llm.kv_plan}", highlight=False)


def optimize_result(result: OptimizeResult) -> None:
    """The decision log as a table, then the choice and its reason."""
    table = Table(title=f"candidates for {result.plan.model} (time per item vs the original, interleaved)")
    for column in ("candidate", "status", "speed-up", "ratio 95% CI", "fidelity", "reason"):
        table.add_column(column, justify="left" if column in ("candidate", "status", "reason") else "right")
    for o in result.outcomes:
        main = o.fidelity.get(o.judged) if o.judged else None
        table.add_row(
            escape(o.candidate.label), o.status, f"{1 / o.ratio:.2f}×" if o.ratio else "—",
            f"{o.ratio_ci[0]:.2f}–{o.ratio_ci[1]:.2f}" if o.ratio_ci else "—",
            f"{main:.4f}" if main is not None else "—", escape(o.reason),
        )  # fmt: skip
    console.print(table)
    judged = next((o for o in result.outcomes if o.judged_by), None)
    if judged is not None:
        console.print(f"judged by {escape(judged.judged_by)}; inputs: {escape(str(result.inputs.get('origin', '')))}")
    for text in dict.fromkeys(o.warning for o in result.outcomes if o.warning):
        console.print(f"[yellow]warning:[/] {escape(text)}")
    if result.culprits:
        trials = ", ".join(f"{t.float_nodes}→{t.metric:.3f}" for t in result.culprits.trials)
        console.print(f"culprit finder on {escape(result.culprits.candidate)}: nodes in float → metric: {trials}")
        if result.culprits.error:
            console.print(f"culprit finder stopped: {escape(result.culprits.error)}")
    if result.true_top1:
        console.print(f"true top-1 on labelled photos: original {result.true_top1['original']:.2f}, "
                      f"chosen {result.true_top1['chosen']:.2f}")  # fmt: skip
    console.print(f"[bold]chosen:[/] {escape(result.chosen.candidate.label)} — {escape(result.chosen.reason)}")
    console.print(f"searched {len(result.outcomes)} candidates in {result.seconds:.0f} s")


def index_report(report: IndexReport, out: Path) -> None:
    """What indexing did, and what it skipped."""
    pca = (
        f"PCA {report.dims} → {report.pca} dims ({report.pca_variance_kept:.1%} of the variance)"
        if report.pca
        else "no PCA"
    )
    kind = f"{report.kind} in {report.shards} shards" if report.shards > 1 else report.kind
    console.print(f"indexed {report.photos} photos into {out} ({kind}, {pca}); embedded {report.embedded} "
                  f"at {report.photos_per_s:.1f} photos/s, reused {report.reused}")  # fmt: skip
    if report.skipped or report.not_images:
        console.print(
            f"skipped {len(report.skipped)} photos; passed over {report.not_images} files that are not images"
        )
        for path, reason in report.skipped.items():
            console.print(f"  {escape(Path(path).name)}: {escape(reason)}", highlight=False)


def query_result(result: QueryResult) -> None:
    """Hits with scores, and the time per stage."""
    table = Table("#", "score", "photo")
    for rank, hit in enumerate(result.hits, 1):
        table.add_row(str(rank), f"{hit.score:.4f}", escape(str(hit.path)))
    console.print(table)
    console.print(" · ".join(f"{stage} {ms(seconds)} ms" for stage, seconds in result.timings_s.items()))


def recall_report(report: RecallReport) -> None:
    """recall@1/@10 with and without PCA."""
    table = Table("embeddings", "recall@1", "recall@10", "queries", title=f"near-duplicate retrieval, {report.model}")
    for label, recall in ((f"PCA {report.pca}" if report.pca else "as built", report.with_pca),
                          ("without PCA", report.without_pca)):  # fmt: skip
        table.add_row(label, f"{recall.at_1:.3f}", f"{recall.at_10:.3f}", str(recall.queries))
    console.print(table)


def case_study(result: CaseStudyResult) -> None:
    """The three contenders side by side and the goals' ratios."""
    target = f"QPS at p99 ≤ {result.config.p99_target_s * 1e3:.0f} ms"
    table = Table(
        "contender",
        target,
        "p50 / p99 ms at ref. rate",
        "recall@10",
        "stages ms (decode/embed/search/http)",
        title=f"image search end to end (reference rate {result.reference_rate or 0:.2f} req/s)",
    )
    for r in result.results:
        ref = r.at_reference_rate
        table.add_row(
            r.contender.label,
            f"{r.sustainable_qps or 0:.1f}",
            f"{ms(ref.percentile(50))} / {ms(ref.percentile(99))}" if ref else "—",
            f"{r.recall.with_pca.at_10:.3f}",
            " / ".join(f"{v:.1f}" for v in r.stages_ms.values()),
        )
    console.print(table)
    for name, value in result.ratios().items():
        console.print(f"{name.replace('_', ' ')}: {'—' if value is None else f'{value:.2f}'}")
