"""The CLI as a user runs it: a real subprocess."""

from __future__ import annotations

import subprocess
import sys

TURBOINFER = [sys.executable, "-m", "turboinfer.cli.main"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*TURBOINFER, *args], capture_output=True, text=True, timeout=120, env=env)
