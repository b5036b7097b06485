"""The reports as self-contained HTML pages (open offline: no scripts, no CDN, images inline), drawn from the
typed results of profile, optimize, bench and the case study."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from turboinfer.apps.imagesearch.case_study import CaseStudyResult
from turboinfer.bench.history import Run
from turboinfer.bench.openai_load import LoadSummary
from turboinfer.optimize.culprit import CulpritSearch
from turboinfer.optimize.plan import Outcome, Plan
from turboinfer.optimize.run import OptimizeResult
from turboinfer.profile.diagnose import Recommendation
from turboinfer.profile.generation import GenProfile
from turboinfer.profile.operators import OperatorProfile
from turboinfer.profile.pipeline import PipelineProfile
from turboinfer.profile.roofline import Ceilings, RooflinePoint
from turboinfer.profile.run import ProfileReport
from turboinfer.profile.scaling import Sweep
from turboinfer.report import plots

STYLE = """body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
.rec{background:#f6f8fb;border-left:4px solid #3b6ea8;padding:.5em .8em;margin:.5em 0}.muted{color:#666}"""


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """An HTML table with escaped cells."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def image(uri: str, alt: str) -> str:
    """An inline image."""
    return f'<img src="{uri}" alt="{html.escape(alt)}">'


def ms(seconds: float | None) -> str:
    """Seconds → '12.3' ms text."""
    return "—" if seconds is None else f"{seconds * 1e3:.3g}"


def recommendations_section(recs: Sequence[Recommendation]) -> str:
    """Ranked recommendations with their evidence (a profile's and an LLM profile's alike)."""
    if not recs:
        return "<p>No rule fired: nothing obvious left to fix at this level.</p>"
    return "".join(
        f'<div class="rec"><b>{i}. {html.escape(r.action)}</b><br>evidence: {html.escape(r.evidence)}'
        f"<br>expected: {html.escape(r.expected_gain)}</div>"
        for i, r in enumerate(recs, 1)
    )


def pipeline_section(pipeline: PipelineProfile | None) -> str:
    """Stage table and bars."""
    if not pipeline:
        return "<p class=muted>No pipeline profiled.</p>"
    stages = pipeline.stages
    rows = [[s.name, ms(s.summary.median), ms(s.summary.p99), f"{s.share:.0%}"] for s in stages]
    chart = plots.bars([s.name for s in stages], [s.summary.mean * 1e3 for s in stages], "mean ms", "time per stage")
    skipped = "".join(f"<li>{html.escape(s)}</li>" for s in pipeline.inputs_skipped)
    return (
        table(["stage", "median ms", "p99 ms", "share"], rows)
        + image(chart, "stage bars")
        + (f"<p>Skipped inputs:</p><ul>{skipped}</ul>" if skipped else "")
    )


def roofline_point(point: RooflinePoint, name: str) -> tuple[float, float, str] | None:
    """(intensity, attained GFLOP/s, name) of a point that was timed and moved bytes, else None."""
    if not point.attained_gflops or point.intensity is None:
        return None
    return point.intensity, point.attained_gflops, name


def operators_section(ops: OperatorProfile | None, whole: RooflinePoint | None, roof: Ceilings) -> str:
    """Op-type shares, top nodes and the roofline."""
    if not ops:
        return "<p class=muted>No operator profile.</p>"
    type_rows = [[t.op_type, ms(t.seconds), f"{t.share:.1%}", t.nodes] for t in ops.by_type[:12]]
    types = table(["op type", "ms", "share", "nodes"], type_rows)
    nodes = table(["node", "op", "ms"], [[n.name, n.op_type, ms(n.seconds)] for n in ops.nodes[:15]])
    placed = [roofline_point(p, p.name) for p in ops.points] + [roofline_point(whole, "model") if whole else None]
    points = [p for p in placed if p]
    chart = plots.roofline(points, roof.peak_gflops, roof.bandwidth_gbps, "nodes on the measured roofline")
    unknown = ", ".join(ops.unknown_flops) or "none"
    return (
        types + nodes + image(chart, "roofline")
        + f"<p>Ridge point {roof.ridge:.1f} FLOP/byte; {ops.memory_bound_share():.0%} of placed "
        "node time is memory-bound. Op types without a FLOP model (time shown, intensity not guessed): "
        f"{html.escape(unknown)}."
        " Bytes are each node's tensors read and written once: an upper bound on DRAM traffic, so cache-resident "
        "activations can put a point above the memory roof.</p>"
    )  # fmt: skip


def sweeps_section(sweeps: Sequence[Sweep]) -> str:
    """One curve per sweep."""
    out = []
    for sweep in sweeps:
        xs = [p.value for p in sweep.points]
        if not xs:
            continue
        if sweep.parameter == "threads":
            ys, label = [p.extra["speedup"] for p in sweep.points], "speedup vs 1 thread"
        elif sweep.parameter == "sequence":
            ys, label = [p.median_s * 1e3 for p in sweep.points], "latency, ms"
        else:
            ys, label = [p.items_per_s for p in sweep.points], "items/s"
        chart = plots.curve(xs, ys, sweep.parameter, label, f"{sweep.parameter} sweep", log_x=True)
        out.append(image(chart, sweep.parameter))
        if sweep.stopped:
            out.append(f"<p class=muted>{html.escape(sweep.stopped)}</p>")
    return "".join(out)


def profile_html(report: ProfileReport) -> str:
    """The whole profile report page."""
    lat, penalty = report.model_latency, report.new_shape_penalty()
    samples = [s * 1e3 for s in report.model_samples_s]
    latency = (
        f"<p>median {ms(lat.median)} ms (95% CI {ms(lat.median_ci[0])}–{ms(lat.median_ci[1])}), p90 "
        f"{ms(lat.p90)}, p99 {ms(lat.p99)} ms, CV {lat.cv:.2f}, outliers {lat.outlier_rate:.1%}, "
        f"first call {lat.first_call_penalty or 0:.1f}× the median, n={lat.n} ({report.model_stop_reason}); "
        f"new-shape penalty {penalty or 0:.1f}×</p>"
        + (image(plots.histogram(samples, "model latency, batch 1"), "latency histogram") if samples else "")
    )
    env, model = report.environment, html.escape(report.model)
    backend = html.escape(f"{report.backend.get('backend')} ({report.backend.get('precision')})")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer profile: {model}</title>
<style>{STYLE}</style></head><body>
<h1>Profile of {model}</h1>
<p class=muted>{backend} · {html.escape(env["cpu"]["model"])}, {env["cpu"]["cores"]} cores ·
{html.escape(env["created_utc"])}</p>
<h2>Recommendations</h2>{recommendations_section(report.recommendations)}
<h2>One request, stage by stage</h2>{pipeline_section(report.pipeline)}
<h2>Model latency</h2>{latency}
<h2>Operators and roofline</h2>{operators_section(report.operators, report.whole_model, report.ceilings)}
<h2>Scaling</h2>{sweeps_section(report.sweeps)}
</body></html>"""


def history_html(runs: Sequence[Run]) -> str:
    """Trend page: median latency over runs for each variant and batch, and the table of runs."""
    series: dict[str, list[Run]] = {}
    for run in runs:
        series.setdefault(f"{run.label} b{run.batch}", []).append(run)
    charts = "".join(
        image(plots.curve([r.id for r in of], [r.median_s * 1e3 for r in of], "run id", "median ms", name), name)
        for name, of in series.items()
    )
    table_html = table(
        ["id", "when (UTC)", "variant", "batch", "median ms", "p99 ms", "items/s"],
        [[r.id, r.created_utc, r.label, r.batch, f"{r.median_s * 1e3:.3g}", f"{r.p99_s * 1e3:.3g}",
          f"{r.throughput:.1f}"] for r in runs],
    )  # fmt: skip
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer history</title>
<style>{STYLE}</style></head><body><h1>Bench history</h1>{charts or "<p>No runs yet.</p>"}{table_html}</body></html>"""


DECISION_HEADERS = [
    "candidate",
    "status",
    "speed-up",
    "ratio CI",
    "median ms",
    "fidelity",
    "MiB",
    "precision",
    "reason",
]


def fidelity_key(outcomes: Sequence[Outcome]) -> str:
    """The metric that judged a decision log's candidates (labelled accuracy, decisive or overall top-1 agreement,
    mean cosine)."""
    judged = next((o.judged for o in outcomes if o.judged), None)
    if judged:
        return judged
    measured = next((o.fidelity for o in outcomes if o.fidelity), {})
    return "top1_agreement" if "top1_agreement" in measured else "cosine_mean"


def least_fidelity(plan: Plan, outcomes: Sequence[Outcome], key: str) -> float:
    """The budget's threshold on the judged metric (labelled accuracy: relative to, or points below, the original's)."""
    if key != "accuracy":
        return 1 - plan.budget
    reference = next(o.fidelity["accuracy_reference"] for o in outcomes if "accuracy_reference" in o.fidelity)
    return reference - plan.budget if plan.budget_points else reference * (1 - plan.budget)


def decision_rows(outcomes: Sequence[Outcome], key: str) -> list[list[Any]]:
    """One decision-log row per optimize candidate (columns: DECISION_HEADERS)."""
    return [
        [o.candidate.label, o.status, f"{1 / o.ratio:.2f}×" if o.ratio else "—",
         f"{o.ratio_ci[0]:.2f}–{o.ratio_ci[1]:.2f}" if o.ratio_ci else "—", ms(o.median_s),
         f"{o.fidelity.get(key, float('nan')):.4f}" if o.fidelity else "—",
         f"{o.size_bytes / 2**20:.1f}" if o.size_bytes else "—", o.precision, o.reason]
        for o in outcomes
    ]  # fmt: skip


def decision_table(outcomes: Sequence[Outcome]) -> str:
    """The decision log as a table, its fidelity column named by the metric that judged."""
    key = fidelity_key(outcomes)
    return table([*DECISION_HEADERS[:5], key.replace("_", " "), *DECISION_HEADERS[6:]], decision_rows(outcomes, key))


def culprits_section(culprits: CulpritSearch | None) -> str:
    """What the culprit finder tried on the broken INT8 candidate, and whether it restored the budget."""
    if not culprits:
        return ""
    trials = ", ".join(f"{t.float_nodes} → {t.metric:.3f}" for t in culprits.trials)
    restored = (f"; restored with {len(culprits.nodes)} nodes in float.</p>" if culprits.restored else
                "; no subset tried restored the budget.</p>")  # fmt: skip
    error = f"<p>It stopped on an error: {html.escape(culprits.error)}</p>" if culprits.error else ""
    return (f"<h2>Culprit finder</h2><p>On {html.escape(culprits.candidate)}: trials (nodes in float → metric) "
            f"{html.escape(trials)}{restored}{error}")  # fmt: skip


def optimize_html(result: OptimizeResult) -> str:
    """The optimizer's report: the choice, the Pareto plot and the decision log."""
    plan, chosen, outcomes = result.plan, result.chosen, result.outcomes
    key = fidelity_key(outcomes)
    least = least_fidelity(plan, outcomes, key)
    points = [
        (1 / o.ratio, o.fidelity[key], "chosen" if o.status == "chosen" else "", o.status != "rejected")
        for o in outcomes
        if o.ratio and key in o.fidelity
    ]
    chart = plots.pareto(points, least, key.replace("_", " "), "speed against fidelity")
    top1 = result.true_top1
    truth = (
        f"<p>True top-1 on the labelled ImageNet photos: original {top1['original']:.2f}, "
        f"chosen {top1['chosen']:.2f}.</p>"
        if top1 else ""
    )  # fmt: skip
    model, inputs = html.escape(plan.model), result.inputs
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer optimize: {model}</title>
<style>{STYLE}</style></head><body>
<h1>Optimizing {model}</h1>
<p class=muted>{html.escape(result.machine["cpu"])} · objective {plan.objective} at batch {plan.batch} · budget:
{html.escape(chosen.judged_by or f"{key} ≥ {least:.3f}")} · {inputs["evaluation"]} evaluation and
{inputs["calibration"]} calibration inputs ({html.escape(inputs.get("origin", ""))}) · {result.seconds:.0f} s</p>
<div class="rec"><b>{html.escape(chosen.candidate.label)}</b><br>{html.escape(chosen.reason)}</div>{truth}
{image(chart, "Pareto plot")}
<h2>Decision log</h2>
{decision_table(outcomes)}
{culprits_section(result.culprits)}
</body></html>"""


def case_study_html(study: CaseStudyResult, decisions: Sequence[Outcome] = ()) -> str:
    """The image-search case study: QPS and latency bars, stage breakdown, recall, goals, the decision log of the
    optimize run that chose the optimized contender."""
    results, config = study.results, study.config
    labels = [r.contender.label for r in results]
    target = f"p99 ≤ {config.p99_target_s * 1e3:.0f} ms"
    qps = plots.bars(labels, [r.sustainable_qps or 0 for r in results], f"requests/s at {target}", "sustainable QPS")
    p99 = plots.bars(labels, [(r.reference_p99_s() or 0) * 1e3 for r in results], "ms",
                     f"p99 at the seed baseline's sustainable rate ({study.reference_rate or 0:.2f}/s)")  # fmt: skip
    stages = list(results[0].stages_ms)
    breakdown = plots.stacked_bars(labels, {s: [r.stages_ms[s] for r in results] for s in stages}, "ms",
                                   "median time per stage, one query at a time")  # fmt: skip
    rows = [
        [r.contender.label, r.contender.description, f"{r.sustainable_qps or 0:.1f}",
         ms(r.at_reference_rate.percentile(50) if r.at_reference_rate else None), ms(r.reference_p99_s()),
         f"{r.recall.with_pca.at_1:.3f}", f"{r.recall.with_pca.at_10:.3f}", f"{r.recall.without_pca.at_10:.3f}",
         f"{r.index.photos_per_s:.1f}"]
        for r in results
    ]  # fmt: skip
    ratios = "".join(f"<li>{html.escape(k.replace('_', ' '))}: {'—' if v is None else f'{v:.2f}'}</li>"
                     for k, v in study.ratios().items())  # fmt: skip
    log = f"<h2>How the optimized variant was chosen</h2>{decision_table(decisions)}" if decisions else ""
    headers = ["contender", "what", f"QPS at {target}", "p50 ms at ref. rate", "p99 ms at ref. rate", "recall@1",
               "recall@10", f"recall@10 without PCA{config.pca}", "indexing photos/s"]  # fmt: skip
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer image-search case study</title>
<style>{STYLE}</style></head><body>
<h1>Image search: seed baseline vs same-model baseline vs optimized</h1>
<p class=muted>End to end over HTTP (POST /v1/search: decode, embed, PCA + FAISS search) with augmented real
photos as queries; open-loop load, each server in its own process on the same machine as the load generator.</p>
{table(headers, rows)}
<ul>{ratios}</ul>
{image(qps, "QPS bars")}{image(p99, "p99 bars")}{image(breakdown, "stage breakdown")}
{log}
</body></html>"""


def generation_html(profile: GenProfile) -> str:
    """A decoder LLM's profile: prefill by prompt length, decode by depth, streams, roofline, recommendations."""
    prefill = plots.curve([r.prompt for r in profile.prefill], [r.tokens_per_s for r in profile.prefill],
                          "prompt tokens", "prefill tok/s", "prefill by prompt", log_x=True)  # fmt: skip
    decode = plots.curve([r.depth for r in profile.decode], [r.tokens_per_s for r in profile.decode],
                         "context depth, tokens", "decode tok/s", "decode by depth", log_x=True)  # fmt: skip
    streams = plots.curve([r.streams for r in profile.streams], [r.output_tokens_per_s for r in profile.streams],
                          "streams", "output tok/s", "output by streams", log_x=True)  # fmt: skip
    r, c = profile.roofline, profile.cache
    facts = [["decode bandwidth", f"{r.decode_achieved_gbps:.1f} of {r.bandwidth_gbps:.1f} GB/s measured "
              f"({r.decode_share_of_bound:.0%} of the {r.decode_bound_tokens_per_s:.0f} tok/s bound)"],
             ["prefill compute", f"{r.prefill_achieved_gflops:.0f} GOP/s; peaks {r.fp32_peak_gflops:.0f} FP32, "
              f"{r.int8_peak_gops:.0f} INT8"],
             ["KV cache", f"{profile.kv.bytes_per_token / 1024:.1f} KiB per token; decode {c.with_cache:.1f} "
              f"tok/s with it, {c.without_cache:.2f} without ({c.gain:.0f}×)"],
             ["peak RSS", f"{profile.peak_rss_mib:.0f} MiB"]]  # fmt: skip
    title = html.escape(str(profile.variant.get("model", "")))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer profile: {title}</title>
<style>{STYLE}</style></head><body>
<h1>Generation profile: {title}</h1>
<p class=muted>{html.escape(json.dumps(profile.engine))} · {html.escape(profile.machine["cpu"])}</p>
{table(["", "measured"], facts)}
<h2>Recommendations</h2>{recommendations_section(profile.recommendations)}
{image(prefill, "prefill")}{image(decode, "decode")}{image(streams, "streams")}
</body></html>"""


def openai_load_html(url: str, load: dict[str, Any], steps: Sequence[LoadSummary]) -> str:
    """A load run against an OpenAI-compatible server (its settings in load): throughput against latency, per
    step."""
    rows = [[f"{s.mode} {s.level:g}", s.completed, s.failed, f"{s.output_throughput:.1f}", f"{s.goodput:.2f}",
             f"{s.ttft_ms.median:.0f}", f"{s.ttft_ms.p99:.0f}", f"{s.tpot_ms.median:.1f}", f"{s.tpot_ms.p99:.1f}",
             f"{s.itl_ms.p99:.1f}"] for s in steps]  # fmt: skip
    headers = ["step", "done", "failed", "output tok/s", "goodput req/s", "TTFT p50 ms", "TTFT p99 ms",
               "TPOT p50 ms", "TPOT p99 ms", "ITL p99 ms"]  # fmt: skip
    plot = plots.curve([s.output_throughput for s in steps], [s.tpot_ms.p99 for s in steps],
                       "output tok/s", "TPOT p99, ms", "throughput vs latency")  # fmt: skip
    where = html.escape(url)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer load: {where}</title>
<style>{STYLE}</style></head><body>
<h1>Load on {where}</h1>
<p class=muted>{html.escape(json.dumps(load))}</p>
{table(headers, rows)}
{image(plot, "throughput vs latency")}
</body></html>"""
