"""Probe figures and cold zoo build times → a markdown section for docs/benchmarks.md.

Run: .venv/bin/python benchmarks/foundation.py > out/foundation.md
Builds every zoo model from scratch into a temporary cache (needs the torch extra).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from turboinfer.core.settings import Settings
from turboinfer.models.catalog import build_zoo_model, zoo_names
from turboinfer.profile.machine import run_probe


def main() -> None:
    """Print the probe table and the build-time table as markdown."""
    report = run_probe()
    cpu = report.machine.cpu
    print(f"Command: `{' '.join(sys.argv)}`\n")
    print(
        f"Machine: {cpu.model}, {cpu.cores} logical cores, ISA: {', '.join(cpu.isa)}; probe took "
        f"{report.seconds:.1f} s.\n"
    )
    print("| measurement | value | method |\n| --- | --- | --- |")
    for metric in report.ceilings:
        print(f"| {metric.name} | {metric.value:,.1f} {metric.unit} | {metric.method} |")
    print("\n| zoo model | cold build (export + hash + card), s | ONNX size, MiB |\n| --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(cache_dir=Path(tmp))
        for name in zoo_names():
            start = time.perf_counter()
            card = build_zoo_model(name, settings)
            seconds = time.perf_counter() - start
            print(f"| {name} | {seconds:.1f} | {card.onnx_path.stat().st_size / 2**20:.1f} |")


if __name__ == "__main__":
    main()
