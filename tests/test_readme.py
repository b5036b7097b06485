"""The README stays true: its two set-up commands are Makefile targets, every CLI verb it shows exists, and the
cheap tour commands run (in quick mode)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
TOUR = [line.split("#")[0].split() for line in README.splitlines() if line.startswith("turboinfer ")]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "turboinfer.cli.main", *args], capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_setup_is_exactly_make_demo_and_make_test():
    setup = README.split("## Set up", 1)[1].split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in setup.splitlines()[1:] if line.strip()]
    assert commands == ["make demo", "make test"]
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), flags=re.MULTILINE))
    assert {"demo", "test"} <= targets
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "make lint" in ci_lines and "make test" in ci_lines


def test_every_verb_in_the_tour_exists():
    verbs = {words[1] for words in TOUR}
    listing = cli("--help").stdout
    for verb in verbs:
        assert verb in listing, verb


@pytest.mark.parametrize(
    "args",
    [
        ("zoo", "list"),
        ("zoo", "build", "efficientnet-lite0"),
        ("profile", "efficientnet-lite0", "--quick", "--pipeline", "none"),
        ("bench", "efficientnet-lite0", "--vs", "efficientnet-lite0@torch", "--runs", "5", "--no-history"),
        ("optimize", "minilm-l6", "--budget", "0.5%", "--dry-run"),
    ],
)
def test_tour_commands_run(effnet, args):
    result = cli(*args)
    assert result.returncode == 0, result.stderr
