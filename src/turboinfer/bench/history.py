"""Run history in one SQLite file: every bench result with its variant, environment and raw samples."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.errors import InvalidInput, TurboinferError
from turboinfer.measure.stats import PairedRatio, unpaired_ratio_ci

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_utc TEXT NOT NULL,
    model TEXT NOT NULL,
    model_sha256 TEXT NOT NULL,
    variant TEXT NOT NULL,
    batch INTEGER NOT NULL,
    median_s REAL NOT NULL,
    p99_s REAL NOT NULL,
    throughput REAL NOT NULL,
    environment TEXT NOT NULL,
    samples TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_model ON runs (model, created_utc);
"""


class HistoryError(TurboinferError):
    """The history file cannot be used (not a turboinfer database, newer schema, ...)."""


class Regression(TurboinferError):
    """A run is significantly slower than its baseline, beyond the allowed threshold (exit code 1)."""

    exit_code = 1


@dataclass(frozen=True)
class Run:
    """One stored run."""

    id: int
    created_utc: str
    model: str
    model_sha256: str
    variant: dict[str, Any]
    batch: int
    median_s: float
    p99_s: float
    throughput: float
    environment: dict[str, Any]
    samples_s: np.ndarray

    @property
    def label(self) -> str:
        """Model@backend, as shown in listings."""
        return f"{self.model}@{self.variant.get('backend', '?')}"


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """An open history database with the schema in place; clear errors for files that are not one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"history file {path} has schema {version}, newer than this turboinfer ({SCHEMA_VERSION})"
            )
        with connection:
            connection.executescript(SCHEMA)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        yield connection
    except sqlite3.DatabaseError as err:
        raise HistoryError(
            f"history file {path} is not a turboinfer history database ({err}); nothing was changed"
        ) from None
    finally:
        connection.close()


def record(path: Path, result: dict[str, Any], environment: dict[str, Any]) -> int:
    """Store one bench result (BenchResult.to_dict()) in one transaction; returns the run id."""
    variant = result["variant"]
    row = (
        environment.get("created_utc", ""), variant["model_name"], variant.get("onnx_sha256", ""),
        json.dumps(variant, sort_keys=True), result["batch"], result["latency"]["median"], result["latency"]["p99"],
        result["throughput"], json.dumps(environment, default=str), json.dumps(result["samples_s"]),
    )  # fmt: skip
    with connect(path) as db, db:
        cursor = db.execute(
            "INSERT INTO runs (created_utc, model, model_sha256, variant, batch, median_s, p99_s, throughput, "
            "environment, samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )
        return int(cursor.lastrowid or 0)


def to_run(row: tuple) -> Run:
    """A Run from a database row."""
    return Run(
        id=row[0], created_utc=row[1], model=row[2], model_sha256=row[3], variant=json.loads(row[4]), batch=row[5],
        median_s=row[6], p99_s=row[7], throughput=row[8], environment=json.loads(row[9]),
        samples_s=np.asarray(json.loads(row[10]), dtype=float),
    )  # fmt: skip


COLUMNS = "id, created_utc, model, model_sha256, variant, batch, median_s, p99_s, throughput, environment, samples"


def runs(path: Path, model: str | None = None) -> list[Run]:
    """Stored runs, oldest first, optionally for one model."""
    if not path.is_file():
        return []
    with connect(path) as db:
        if model:
            rows = db.execute(f"SELECT {COLUMNS} FROM runs WHERE model = ? ORDER BY id", (model,)).fetchall()
        else:
            rows = db.execute(f"SELECT {COLUMNS} FROM runs ORDER BY id").fetchall()
    return [to_run(r) for r in rows]


def get_run(path: Path, run_id: int) -> Run:
    """One stored run by id."""
    found = [r for r in runs(path) if r.id == run_id]
    if not found:
        raise InvalidInput(f"no run {run_id} in history {path}")
    return found[0]


@dataclass(frozen=True)
class GateResult:
    """Current vs baseline: latency ratio current/baseline (unpaired bootstrap CI) and the decision."""

    baseline: int
    ratio: PairedRatio
    threshold: float
    failed: bool
    message: str


def regression_gate(baseline: Run, current_samples: np.ndarray, threshold: float) -> GateResult:
    """Fail only when the slowdown is significant and beyond the threshold: CI lower bound > 1 + threshold."""
    ratio = unpaired_ratio_ci(baseline.samples_s, np.asarray(current_samples))
    low, high = ratio.ci
    failed = low > 1 + threshold
    measured = f"{ratio.ratio:.3f}× run {baseline.id}'s median (95% CI {low:.3f}–{high:.3f})"
    message = f"regression: {measured} > 1 + {threshold:.0%}" if failed else f"ok: {measured}, gate 1 + {threshold:.0%}"
    return GateResult(baseline.id, ratio, threshold, failed, message)


def regressions(history: list[Run], threshold: float = 0.05) -> list[tuple[Run, Run, PairedRatio]]:
    """Consecutive runs of the same variant and batch where the later one is significantly slower."""
    last: dict[tuple[str, int], Run] = {}
    flagged = []
    for run in history:
        key = (json.dumps(run.variant, sort_keys=True), run.batch)
        if key in last:
            ratio = unpaired_ratio_ci(last[key].samples_s, run.samples_s)
            if ratio.ci[0] > 1 + threshold:
                flagged.append((last[key], run, ratio))
        last[key] = run
    return flagged
