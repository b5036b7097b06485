"""History round trip, a corrupted file, and the regression gate in both directions."""

import sqlite3

import numpy as np
import pytest

from turboinfer.bench import history

ENV = {"created_utc": "2026-12-02T10:00:00+00:00", "packages": {"onnxruntime": "1.x"}}


def result(samples: np.ndarray, backend: str = "ort") -> dict:
    return {
        "variant": {"model_name": "m", "onnx_sha256": "abc", "backend": backend, "options": {}},
        "batch": 1,
        "latency": {"median": float(np.median(samples)), "p99": float(np.percentile(samples, 99))},
        "throughput": 1 / float(np.median(samples)),
        "samples_s": samples.tolist(),
    }


def samples(median: float, seed: int, n: int = 200) -> np.ndarray:
    return median * np.random.default_rng(seed).lognormal(0, 0.05, n)


def test_round_trip(tmp_path):
    path = tmp_path / "h.sqlite"
    first = history.record(path, result(samples(0.010, 1)), ENV)
    second = history.record(path, result(samples(0.020, 2), "openvino"), ENV)
    runs = history.runs(path)
    assert [r.id for r in runs] == [first, second]
    assert runs[1].label == "m@openvino"
    assert runs[0].samples_s.shape == (200,)
    assert runs[0].environment == ENV
    assert history.get_run(path, second).median_s == pytest.approx(np.median(samples(0.020, 2)))
    assert history.runs(path, model="other") == []
    with pytest.raises(history.InvalidInput, match="no run 99"):
        history.get_run(path, 99)


def test_corrupted_file_is_a_clear_error_and_stays_untouched(tmp_path):
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"this is not a database, but somebody's file" * 50)
    before = path.read_bytes()
    with pytest.raises(history.HistoryError, match="not a turboinfer history database"):
        history.record(path, result(samples(0.01, 1)), ENV)
    assert path.read_bytes() == before


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "h.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(history.HistoryError, match="newer"):
        history.runs(path)


def test_gate_fails_only_on_a_significant_slowdown_beyond_the_threshold(tmp_path):
    path = tmp_path / "h.sqlite"
    baseline = history.get_run(path, history.record(path, result(samples(0.010, 1)), ENV))
    slower = history.regression_gate(baseline, samples(0.0115, 2), threshold=0.05)  # +15%
    assert slower.failed and "regression" in slower.message
    same = history.regression_gate(baseline, samples(0.010, 3), threshold=0.05)
    assert not same.failed and same.message.startswith("ok")
    slightly = history.regression_gate(baseline, samples(0.0102, 4), threshold=0.05)  # +2%: inside the threshold
    assert not slightly.failed
    faster = history.regression_gate(baseline, samples(0.008, 5), threshold=0.05)
    assert not faster.failed


def test_regressions_between_consecutive_runs_are_flagged(tmp_path):
    path = tmp_path / "h.sqlite"
    for median, seed in ((0.010, 1), (0.0101, 2), (0.013, 3)):
        history.record(path, result(samples(median, seed)), ENV)
    flagged = history.regressions(history.runs(path))
    assert [(before.id, after.id) for before, after, _ in flagged] == [(2, 3)]
