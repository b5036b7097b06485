"""The only place that prints: rich tables and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from turboinfer.core.card import ModelCard
from turboinfer.profile.machine import ProbeReport

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
