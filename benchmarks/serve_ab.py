"""Two checkouts of turboinfer serving the same LLM side by side, loaded in turn → markdown rows for
docs/benchmarks.md: the A/B of a change to the serving path (each server runs the `src/` it is given, with this
venv's packages), interleaved round by round so that the machine's drift falls on both.

Run: .venv/bin/python benchmarks/serve_ab.py BEFORE_SRC AFTER_SRC [MODEL] [streams=1] [requests=8] [rounds=4]
     e.g. git worktree add /tmp/before 2bcb396 && .venv/bin/python benchmarks/serve_ab.py /tmp/before/src src
     (MODEL: what `turboinfer serve` takes; the default is the packaged Gemma 3 270M Q4_K_M on its int8 IR)
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from llm_serve import STREAMS, THREADS, load, row  # benchmarks/llm_serve.py
from own_llm import packaged_gemma  # benchmarks/own_llm.py

from serve import free_port, launch, stop, wait_ready  # benchmarks/serve.py
from turboinfer.bench.openai_load import closed_loop
from turboinfer.core.settings import Settings
from turboinfer.llm.card import build_llm


def start(src: Path, model: str) -> tuple[Any, str]:
    """`turboinfer serve MODEL` run from the checkout whose src/ this is; (process, base URL) once healthy."""
    port = free_port()
    command = [sys.executable, "-m", "turboinfer.cli.main", "serve", model, "--port", str(port),
               "--threads", str(THREADS), "--streams", str(STREAMS), "--log-level", "warning"]  # fmt: skip
    process = launch(command, env={**os.environ, "PYTHONPATH": str(src.resolve())}, cwd="/")
    return wait_ready(f"http://127.0.0.1:{port}/health", process), f"http://127.0.0.1:{port}"


def main() -> None:
    args = [a for a in sys.argv[1:] if "=" not in a]
    options = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    if len(args) < 2:
        raise SystemExit(__doc__)
    settings = Settings.from_env(os.environ)
    model = args[2] if len(args) > 2 else f"{packaged_gemma(settings)}@openvino-ir"
    name = build_llm(model.split("@")[0], settings).name
    streams, requests = int(options.get("streams", 1)), int(options.get("requests", 8))
    servers = {f"before ({args[0]})": start(Path(args[0]), model), f"after ({args[1]})": start(Path(args[1]), model)}
    try:
        for round_ in range(int(options.get("rounds", 4))):
            for i, (label, (_, url)) in enumerate(servers.items()):
                result = asyncio.run(closed_loop(load(url, model=name), streams, requests, step=round_ * 10 + i))
                print(row(label, f"{streams} streams", result), flush=True)
    finally:
        for process, _ in servers.values():
            stop(process)


if __name__ == "__main__":
    main()
