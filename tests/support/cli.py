"""The CLI as a user runs it: a real subprocess."""

from __future__ import annotations

import subprocess
import sys

TURBOINFER = [sys.executable, "-m", "turboinfer.cli.main"]


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`turboinfer ARGS` in a subprocess, its output captured; killed after `timeout` seconds."""
    return subprocess.run([*TURBOINFER, *args], capture_output=True, text=True, timeout=timeout, env=env)
