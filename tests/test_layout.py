"""Tests and benchmarks share helpers through tests/support only: no module imports a test module or a conftest."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_test_modules(path: Path) -> list[str]:
    """The modules under tests/ that path imports, other than tests.support's."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return [n for n in names if n.startswith("tests.") and not n.startswith("tests.support")]


def test_helpers_come_from_tests_support_only() -> None:
    files = [*ROOT.joinpath("tests").rglob("*.py"), *ROOT.joinpath("benchmarks").rglob("*.py")]
    offenders = {str(p.relative_to(ROOT)): found for p in files if (found := imported_test_modules(p))}
    assert len(files) > 100 and offenders == {}
