"""The profile report as one self-contained HTML page (opens offline: no scripts, no CDN, images inline)."""

from __future__ import annotations

import html
import json
from typing import Any

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


def recommendations_section(recs: list[dict[str, Any]]) -> str:
    """Ranked recommendations with their evidence."""
    if not recs:
        return "<p>No rule fired: nothing obvious left to fix at this level.</p>"
    return "".join(
        f'<div class="rec"><b>{i}. {html.escape(r["action"])}</b><br>evidence: {html.escape(r["evidence"])}'
        f"<br>expected: {html.escape(r['expected_gain'])}</div>"
        for i, r in enumerate(recs, 1)
    )


def pipeline_section(pipeline: dict[str, Any] | None) -> str:
    """Stage table and bars."""
    if not pipeline:
        return "<p class=muted>No pipeline profiled.</p>"
    stages = pipeline["stages"]
    rows = [[s["name"], ms(s["median"]), ms(s["p99"]), f"{s['share']:.0%}"] for s in stages]
    chart = plots.bars([s["name"] for s in stages], [s["mean"] * 1e3 for s in stages], "mean ms", "time per stage")
    skipped = "".join(f"<li>{html.escape(s)}</li>" for s in pipeline["inputs_skipped"])
    return (
        table(["stage", "median ms", "p99 ms", "share"], rows)
        + image(chart, "stage bars")
        + (f"<p>Skipped inputs:</p><ul>{skipped}</ul>" if skipped else "")
    )


def operators_section(data: dict[str, Any]) -> str:
    """Op-type shares, top nodes and the roofline."""
    ops, roof = data["operators"], data["roofline"]
    if not ops:
        return "<p class=muted>No operator profile.</p>"
    type_rows = [[t["op_type"], ms(t["seconds"]), f"{t['share']:.1%}", t["nodes"]] for t in ops["by_type"][:12]]
    types = table(["op type", "ms", "share", "nodes"], type_rows)
    nodes = table(["node", "op", "ms"], [[n["name"], n["op_type"], ms(n["seconds"])] for n in ops["top_nodes"]])
    points = [(p["intensity"], p["attained_gflops"], p["name"]) for p in ops["roofline"] if p["attained_gflops"]]
    whole = roof.get("whole_model")
    if whole and whole["attained_gflops"]:
        points.append((whole["intensity"], whole["attained_gflops"], "model"))
    chart = plots.roofline(points, roof["peak_gflops"], roof["bandwidth_gbps"], "nodes on the measured roofline")
    unknown = ", ".join(ops["unknown_flops"]) or "none"
    return (
        types + nodes + image(chart, "roofline")
        + f"<p>Ridge point {roof['ridge_flop_per_byte']:.1f} FLOP/byte; {ops['memory_bound_share']:.0%} of placed "
        "node time is memory-bound. Op types without a FLOP model (time shown, intensity not guessed): "
        f"{html.escape(unknown)}."
        " Bytes are each node's tensors read and written once: an upper bound on DRAM traffic, so cache-resident "
        "activations can put a point above the memory roof.</p>"
    )  # fmt: skip


def sweeps_section(sweeps: list[dict[str, Any]]) -> str:
    """One curve per sweep."""
    out = []
    for sweep in sweeps:
        xs = [p["value"] for p in sweep["points"]]
        if not xs:
            continue
        if sweep["parameter"] == "threads":
            ys, label = [p["speedup"] for p in sweep["points"]], "speedup vs 1 thread"
        elif sweep["parameter"] == "sequence":
            ys, label = [p["median_s"] * 1e3 for p in sweep["points"]], "latency, ms"
        else:
            ys, label = [p["items_per_s"] for p in sweep["points"]], "items/s"
        out.append(
            image(
                plots.curve(xs, ys, sweep["parameter"], label, f"{sweep['parameter']} sweep", log_x=True),
                sweep["parameter"],
            )
        )
        if sweep.get("stopped"):
            out.append(f"<p class=muted>{html.escape(sweep['stopped'])}</p>")
    return "".join(out)


def profile_html(data: dict[str, Any]) -> str:
    """The whole profile report page from `ProfileReport.to_dict()`."""
    lat = data["model_latency"]
    samples = [s * 1e3 for s in data.get("model_samples_s", [])]
    latency = (
        f"<p>median {ms(lat['median'])} ms (95% CI {ms(lat['median_ci'][0])}–{ms(lat['median_ci'][1])}), p90 "
        f"{ms(lat['p90'])}, p99 {ms(lat['p99'])} ms, CV {lat['cv']:.2f}, outliers {lat['outlier_rate']:.1%}, "
        f"first call {lat['first_call_penalty']:.1f}× the median, n={lat['n']} ({lat['stop_reason']}); "
        f"new-shape penalty {lat['new_shape_penalty'] or 0:.1f}×</p>"
        + (image(plots.histogram(samples, "model latency, batch 1"), "latency histogram") if samples else "")
    )
    env, model = data["environment"], html.escape(data["model"])
    backend = html.escape(f"{data['backend'].get('backend')} ({data['backend'].get('precision')})")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer profile: {model}</title>
<style>{STYLE}</style></head><body>
<h1>Profile of {model}</h1>
<p class=muted>{backend} · {html.escape(env["cpu"]["model"])}, {env["cpu"]["cores"]} cores ·
{html.escape(env["created_utc"])}</p>
<h2>Recommendations</h2>{recommendations_section(data["recommendations"])}
<h2>One request, stage by stage</h2>{pipeline_section(data["pipeline"])}
<h2>Model latency</h2>{latency}
<h2>Operators and roofline</h2>{operators_section(data)}
<h2>Scaling</h2>{sweeps_section(data["sweeps"])}
</body></html>"""


def history_html(rows: list[dict[str, Any]]) -> str:
    """Trend page: median latency over runs for each variant and batch, and the table of runs."""
    series: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        series.setdefault(f"{row['label']} b{row['batch']}", []).append(row)
    charts = "".join(
        image(plots.curve([r["id"] for r in runs], [r["median_ms"] for r in runs], "run id", "median ms", name), name)
        for name, runs in series.items()
    )
    table_html = table(
        ["id", "when (UTC)", "variant", "batch", "median ms", "p99 ms", "items/s"],
        [[r["id"], r["created_utc"], r["label"], r["batch"], f"{r['median_ms']:.3g}", f"{r['p99_ms']:.3g}",
          f"{r['throughput']:.1f}"] for r in rows],
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


def fidelity_key(outcomes: list[dict[str, Any]]) -> str:
    """The metric that judged a decision log's candidates (labelled accuracy, decisive or overall top-1 agreement,
    mean cosine)."""
    judged = next((o.get("judged") for o in outcomes if o.get("judged")), None)
    if judged:
        return str(judged)
    measured: dict[str, float] = next((o["fidelity"] for o in outcomes if o["fidelity"]), {})
    return "top1_agreement" if "top1_agreement" in measured else "cosine_mean"


def least_fidelity(plan: dict[str, Any], outcomes: list[dict[str, Any]], key: str) -> float:
    """The budget's threshold on the judged metric (labelled accuracy: relative to, or points below, the original's)."""
    if key != "accuracy":
        return 1 - plan["budget"]
    reference = next(o["fidelity"]["accuracy_reference"] for o in outcomes if "accuracy_reference" in o["fidelity"])
    return reference - plan["budget"] if plan.get("budget_points") else reference * (1 - plan["budget"])


def decision_rows(outcomes: list[dict[str, Any]], key: str) -> list[list[Any]]:
    """One decision-log row per optimize candidate (columns: DECISION_HEADERS)."""
    return [
        [o["label"], o["status"], f"{1 / o['ratio']:.2f}×" if o["ratio"] else "—",
         f"{o['ratio_ci'][0]:.2f}–{o['ratio_ci'][1]:.2f}" if o["ratio_ci"] else "—", ms(o["median_s"]),
         f"{o['fidelity'].get(key, float('nan')):.4f}" if o["fidelity"] else "—",
         f"{o['size_bytes'] / 2**20:.1f}" if o["size_bytes"] else "—", o["precision"], o["reason"]]
        for o in outcomes
    ]  # fmt: skip


def optimize_html(data: dict[str, Any]) -> str:
    """The optimizer's report: the choice, the Pareto plot and the decision log, from the result's to_dict()."""
    plan, chosen, outcomes = data["plan"], data["chosen"], data["outcomes"]
    key = fidelity_key(outcomes)
    least = least_fidelity(plan, outcomes, key)
    points = [
        (1 / o["ratio"], o["fidelity"][key], "chosen" if o["status"] == "chosen" else "", o["status"] != "rejected")
        for o in outcomes
        if o["ratio"] and key in o["fidelity"]
    ]
    chart = plots.pareto(points, least, key.replace("_", " "), "speed against fidelity")
    rows = decision_rows(outcomes, key)
    culprits = data.get("culprits")
    culprit_html = (
        f"<h2>Culprit finder</h2><p>On {html.escape(culprits['candidate'])}: trials (nodes in float → metric) "
        + html.escape(", ".join(f"{t['float_nodes']} → {t['metric']:.3f}" for t in culprits["trials"]))
        + (f"; restored with {len(culprits['nodes'])} nodes in float.</p>" if culprits["restored"] else
           "; no subset tried restored the budget.</p>")
        + (f"<p>It stopped on an error: {html.escape(culprits['error'])}</p>" if culprits.get("error") else "")
        if culprits else ""
    )  # fmt: skip
    top1 = data.get("true_top1") or {}
    truth = (
        f"<p>True top-1 on the labelled ImageNet photos: original {top1['original']:.2f}, "
        f"chosen {top1['chosen']:.2f}.</p>"
        if top1 else ""
    )  # fmt: skip
    model = html.escape(plan["model"])
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer optimize: {model}</title>
<style>{STYLE}</style></head><body>
<h1>Optimizing {model}</h1>
<p class=muted>{html.escape(data["machine"]["cpu"])} · objective {plan["objective"]} at batch {plan["batch"]} · budget:
{html.escape(chosen.get("judged_by") or f"{key} ≥ {least:.3f}")} · {data["inputs"]["evaluation"]} evaluation and
{data["inputs"]["calibration"]} calibration inputs ({html.escape(data["inputs"].get("origin", ""))}) ·
{data["seconds"]:.0f} s</p>
<div class="rec"><b>{html.escape(chosen["label"])}</b><br>{html.escape(chosen["reason"])}</div>{truth}
{image(chart, "Pareto plot")}
<h2>Decision log</h2>
{table([*DECISION_HEADERS[:5], key, *DECISION_HEADERS[6:]], rows)}
{culprit_html}
</body></html>"""


def case_study_html(data: dict[str, Any], decision_log: dict[str, Any] | None = None) -> str:
    """The image-search case study: QPS and latency bars, stage breakdown, recall, goals, the decision log."""
    results, config = data["results"], data["config"]
    labels = [r["contender"]["label"] for r in results]
    target = f"p99 ≤ {config['p99_target_s'] * 1e3:.0f} ms"
    reference = data["reference_rate"]
    qps = plots.bars(labels, [r["sustainable_qps"] or 0 for r in results], f"requests/s at {target}", "sustainable QPS")
    p99 = plots.bars(labels, [(r["at_reference_rate"].get("p99_s") or 0) * 1e3 for r in results], "ms",
                     f"p99 at the seed baseline's sustainable rate ({reference or 0:.2f}/s)")  # fmt: skip
    stages = list(results[0]["stages_ms"])
    breakdown = plots.stacked_bars(labels, {s: [r["stages_ms"][s] for r in results] for s in stages}, "ms",
                                   "median time per stage, one query at a time")  # fmt: skip
    rows = [
        [r["contender"]["label"], r["contender"]["description"], f"{r['sustainable_qps'] or 0:.1f}",
         ms(r["at_reference_rate"].get("p50_s")), ms(r["at_reference_rate"].get("p99_s")),
         f"{r['recall']['with_pca']['at_1']:.3f}", f"{r['recall']['with_pca']['at_10']:.3f}",
         f"{r['recall']['without_pca']['at_10']:.3f}", f"{r['index']['photos_per_s']:.1f}"]
        for r in results
    ]  # fmt: skip
    ratios = "".join(f"<li>{html.escape(k.replace('_', ' '))}: {'—' if v is None else f'{v:.2f}'}</li>"
                     for k, v in data["ratios"].items())  # fmt: skip
    log = ""
    if decision_log:
        key = fidelity_key(decision_log["outcomes"])
        log = "<h2>How the optimized variant was chosen</h2>" + table(
            [*DECISION_HEADERS[:5], key.replace("_", " "), *DECISION_HEADERS[6:]],
            decision_rows(decision_log["outcomes"], key),
        )
    headers = ["contender", "what", f"QPS at {target}", "p50 ms at ref. rate", "p99 ms at ref. rate", "recall@1",
               "recall@10", f"recall@10 without PCA{config['pca']}", "indexing photos/s"]  # fmt: skip
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


def generation_html(data: dict[str, Any]) -> str:
    """A decoder LLM's profile: prefill by prompt length, decode by depth, streams, roofline, recommendations."""

    def curve(rows: list[dict[str, float]], x: str, y: str, xlabel: str, ylabel: str, title: str) -> str:
        return plots.curve([r[x] for r in rows], [r[y] for r in rows], xlabel, ylabel, title, log_x=True)

    prefill = curve(data["prefill"], "prompt", "tokens_per_s", "prompt tokens", "prefill tok/s", "prefill by prompt")
    decode = curve(data["decode"], "depth", "tokens_per_s", "context depth, tokens", "decode tok/s", "decode by depth")
    streams = curve(data["streams"], "streams", "output_tokens_per_s", "streams", "output tok/s", "output by streams")
    r, c = data["roofline"], data["cache"]
    facts = [["decode bandwidth", f"{r['decode_achieved_gbps']:.1f} of {r['bandwidth_gbps']:.1f} GB/s measured "
              f"({r['decode_share_of_bound']:.0%} of the {r['decode_bound_tokens_per_s']:.0f} tok/s bound)"],
             ["prefill compute", f"{r['prefill_achieved_gflops']:.0f} GOP/s; peaks {r['fp32_peak_gflops']:.0f} FP32, "
              f"{r['int8_peak_gops']:.0f} INT8"],
             ["KV cache", f"{data['kv']['bytes_per_token'] / 1024:.1f} KiB per token; decode {c['with_cache']:.1f} "
              f"tok/s with it, {c['without_cache']:.2f} without ({c['gain']:.0f}×)"],
             ["peak RSS", f"{data['peak_rss_mib']:.0f} MiB"]]  # fmt: skip
    recs = "".join(f"<div class=rec><b>{html.escape(x['action'])}</b><br>{html.escape(x['evidence'])} · "
                   f"{html.escape(x['expected_gain'])}</div>" for x in data["recommendations"])  # fmt: skip
    title = html.escape(str(data["variant"].get("model", "")))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer profile: {title}</title>
<style>{STYLE}</style></head><body>
<h1>Generation profile: {title}</h1>
<p class=muted>{html.escape(json.dumps(data["engine"]))} · {html.escape(data["machine"]["cpu"])}</p>
{table(["", "measured"], facts)}
<h2>Recommendations</h2>{recs}
{image(prefill, "prefill")}{image(decode, "decode")}{image(streams, "streams")}
</body></html>"""


def openai_load_html(data: dict[str, Any]) -> str:
    """A load run against an OpenAI-compatible server: throughput against latency, per step."""
    steps = data["steps"]
    rows = [[f"{s['mode']} {s['level']:g}", s["completed"], s["failed"], f"{s['output_throughput']:.1f}",
             f"{s['goodput']:.2f}", f"{s['ttft_ms']['median']:.0f}", f"{s['ttft_ms']['p99']:.0f}",
             f"{s['tpot_ms']['median']:.1f}", f"{s['tpot_ms']['p99']:.1f}", f"{s['itl_ms']['p99']:.1f}"]
            for s in steps]  # fmt: skip
    headers = ["step", "done", "failed", "output tok/s", "goodput req/s", "TTFT p50 ms", "TTFT p99 ms",
               "TPOT p50 ms", "TPOT p99 ms", "ITL p99 ms"]  # fmt: skip
    plot = plots.curve([s["output_throughput"] for s in steps], [s["tpot_ms"]["p99"] for s in steps],
                       "output tok/s", "TPOT p99, ms", "throughput vs latency")  # fmt: skip
    url = html.escape(str(data["url"]))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>turboinfer load: {url}</title>
<style>{STYLE}</style></head><body>
<h1>Load on {url}</h1>
<p class=muted>{html.escape(json.dumps(data["load"]))}</p>
{table(headers, rows)}
{image(plot, "throughput vs latency")}
</body></html>"""
