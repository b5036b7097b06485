"""How the decoder-LLM results look in the terminal (render.py's console, progress and file writers)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from turboinfer.bench.openai_load import LoadSummary
from turboinfer.cli.render import console, progress, write_json, write_text
from turboinfer.llm.speed import GenBenchConfig, GenSpeed
from turboinfer.measure.stats import PairedRatio
from turboinfer.optimize.generation import GenResult
from turboinfer.profile.generation import GenProfile

__all__ = ["console", "generation_bench", "generation_optimize", "generation_profile", "progress", "write_json",
           "write_text"]  # fmt: skip


def generation_profile(p: GenProfile) -> None:
    """`turboinfer profile LLM`: the sweeps, the roofline, the recommendations."""
    console.print(f"[bold]{escape(str(p.variant))}[/] on {p.machine['cpu']} ({p.machine['usable_cpus']} CPUs)")
    ms = "{:.0f}"
    sweep("prefill by prompt length", ("prompt tokens", "TTFT ms", "prefill tok/s"), p.prefill,
          (("prompt", "{}", 1), ("ttft_s", ms, 1e3), ("tokens_per_s", ms, 1)))  # fmt: skip
    sweep("decode by context depth", ("depth tokens", "TPOT ms", "decode tok/s"), p.decode,
          (("depth", "{}", 1), ("tpot_s", "{:.1f}", 1e3), ("tokens_per_s", "{:.1f}", 1)))  # fmt: skip
    sweep("concurrent streams", ("streams", "output tok/s", "TTFT p50 ms", "TPOT p50 ms"), p.streams,
          (("streams", "{}", 1), ("output_tokens_per_s", ms, 1), ("ttft_p50_s", ms, 1e3),
           ("tpot_p50_s", "{:.1f}", 1e3)))  # fmt: skip
    c, r, kv = p.cache, p.roofline, p.kv
    console.print(f"KV cache: decode {c.with_cache:.1f} tok/s with it, {c.without_cache:.2f} without "
                  f"(transformers, after {c.prompt} tokens): {c.gain:.0f}×; {kv.bytes_per_token / 1024:.1f} KiB "
                  f"per token, {kv.bytes_per_stream_at_context / 2**20:.0f} MiB per stream at {kv.context} "
                  "tokens")  # fmt: skip
    bound = f"{r.decode_share_of_bound:.0%} of the {r.decode_bound_tokens_per_s:.0f} tok/s bound"
    console.print(f"roofline: decode {r.decode_achieved_gbps:.1f} GB/s of {r.bandwidth_gbps:.1f} ({bound}); "
                  f"prefill {r.prefill_achieved_gflops:.0f} GOP/s against {r.fp32_peak_gflops:.0f} FP32 and "
                  f"{r.int8_peak_gops:.0f} INT8 GEMM peaks ({r.prefill_share_of_int8_peak:.0%} of INT8); "
                  f"peak RSS {p.peak_rss_mib:.0f} MiB")  # fmt: skip
    console.print(f"shared 512-token prefix: TTFT {p.prefix.first_ttft_s * 1e3:.0f} → "
                  f"{p.prefix.shared_prefix_ttft_s * 1e3:.0f} ms")  # fmt: skip
    for i, rec in enumerate(p.recommendations, 1):
        console.print(f"{i}. [bold]{escape(rec.action)}[/] — {escape(rec.evidence)} ({escape(rec.expected_gain)})")


def sweep(title: str, columns: tuple[str, ...], rows: Sequence[object],
          cells: tuple[tuple[str, str, float], ...]) -> None:  # fmt: skip
    """One sweep as a table: each cell a row's field, scaled and formatted."""
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:
        values = ((getattr(row, key), fmt, scale) for key, fmt, scale in cells)
        table.add_row(*(fmt.format(value * scale if scale != 1 else value) for value, fmt, scale in values))
    console.print(table)


def generation_bench(results: list[GenSpeed], ratios: dict[str, tuple[PairedRatio, str]],
                     config: GenBenchConfig) -> None:  # fmt: skip
    """pp / tg per variant with CIs; with two, the ratio B/A and its verdict."""
    table = Table(title=f"tokens/s, median (95% CI) of {config.repeats} runs")
    table.add_column("variant")
    table.add_column(f"pp{config.prompt}", justify="right")
    for depth in config.depths:
        table.add_column(f"tg{config.generate} @ {depth}", justify="right")
    for row in results:
        table.add_row(escape(row.label), row.pp.text(), *(row.tg[d].text() for d in config.depths))
    console.print(table)
    for name, (ratio, word) in ratios.items():
        console.print(f"{name}: B/A {ratio.ratio:.2f} (CI {ratio.ci[0]:.2f}–{ratio.ci[1]:.2f}) — {word}")


def generation_optimize(result: GenResult) -> None:
    """The candidates, their fidelity and speed, and the choice."""
    table = Table(title=f"candidates for {result.plan.model}")
    streams = result.plan.objective == "throughput"
    columns = ("candidate", "status", "tg tok/s", "pp tok/s", *(("streams tok/s",) if streams else ()), "agreement",
               "ppl ratio", "reason")  # fmt: skip
    for column in columns:
        table.add_column(column)
    for o in result.outcomes:
        f = o.fidelity
        agreement = f.get("next_token_agreement", f.get("path_agreement"))
        many = o.streams.output_tokens_per_s if o.streams else None
        table.add_row(escape(o.variant.label), o.status, f"{o.speed.decode.median:.1f}" if o.speed else "—",
                      f"{o.speed.pp.median:.0f}" if o.speed else "—",
                      *((f"{many:.0f}" if many else "—",) if streams else ()), f"{agreement:.3f}" if agreement else "—",
                      f"{f['perplexity_ratio']:.3f}" if "perplexity_ratio" in f else "—", escape(o.reason))  # fmt: skip
    console.print(table)
    console.print(f"[bold]chosen:[/] {escape(result.chosen.variant.label)} — {escape(result.chosen.reason)}")


def openai_step(s: LoadSummary) -> None:
    """One load step against an OpenAI-compatible server, on one line."""
    unit = "streams" if s.mode == "closed" else "req/s"
    errors = f", errors {s.errors}" if s.failed else ""
    console.print(
        f"{s.level:g} {unit}: {s.completed} done, {s.failed} failed{errors}; output {s.output_throughput:.1f} tok/s, "
        f"{s.request_throughput:.2f} req/s, goodput {s.goodput:.2f} req/s; TTFT p50 {s.ttft_ms.median:.0f} / p99 "
        f"{s.ttft_ms.p99:.0f} ms, TPOT p50 {s.tpot_ms.median:.1f} / p99 {s.tpot_ms.p99:.1f} ms, ITL p99 "
        f"{s.itl_ms.p99:.1f} ms",
        highlight=False,
    )
