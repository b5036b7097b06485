"""The CLI as a user runs it: a real subprocess, real exit codes, no tracebacks for user errors."""

import json
import os
from pathlib import Path

from tests.support.cli import run


def test_unknown_zoo_name_is_one_line_and_exit_2():
    result = run("zoo", "build", "resnet9000")
    assert result.returncode == 2
    assert "unknown model 'resnet9000'" in result.stderr
    assert "efficientnet-lite0" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_zoo_build_prints_the_card_path(effnet):
    result = run("zoo", "build", "efficientnet-lite0")
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()) == effnet.card_path


def test_zoo_list_shows_every_model():
    result = run("zoo", "list")
    assert result.returncode == 0
    for name in ("efficientnet-lite0", "minilm-l6", "mobilenetv2", "resnet152", "smollm2-135m"):
        assert name in result.stdout


def test_missing_torch_extra_is_named(tmp_path):
    """Building a model without torch installed says which extra to install."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "torch.py").write_text("raise ImportError('torch hidden for this test')\n")
    env = {**os.environ, "PYTHONPATH": str(blocker), "TURBOINFER_CACHE": str(tmp_path / "cache")}
    result = run("zoo", "build", "mobilenetv2", env=env)
    assert result.returncode == 2
    assert "pip install -e '.[torch]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_probe_json_reports_measured_peaks(tmp_path):
    out = tmp_path / "p.json"
    result = run("probe", "--json", str(out))
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["cpu"]["model"] and data["cpu"]["cores"] >= 1
    assert isinstance(data["cpu"]["isa"], list)
    assert data["peaks"]["fp32_gflops"] > 1
    assert data["peaks"]["mem_bandwidth_gbps"] > 0.5
    assert data["peaks"]["int8_gops"] > 1
    assert all(m["method"] for m in data["measurements"])
    assert data["environment"]["packages"]["onnxruntime"]


def test_profile_quick_writes_json_and_html(effnet, tmp_path):
    out_json, out_html = tmp_path / "p.json", tmp_path / "p.html"
    result = run("profile", "efficientnet-lite0", "--quick", "--json", str(out_json), "--html", str(out_html))
    assert result.returncode == 0, result.stderr
    assert "Recommendations" in result.stdout
    data = json.loads(out_json.read_text())
    assert data["pipeline"]["stages"][1]["name"] == "decode"
    assert out_html.read_text().startswith("<!doctype html>")


def test_profile_bad_arguments_are_one_line_errors(tmp_path):
    result = run("profile", "efficientnet-lite0", "--batch", "1,x")
    assert result.returncode == 2 and "comma-separated integers" in result.stderr
    result = run("profile", str(tmp_path / "missing.onnx"))
    assert result.returncode == 2 and "model file not found" in result.stderr
    assert "Traceback" not in result.stderr


def test_bench_stores_history_and_the_gate_sets_the_exit_code(effnet, tmp_path):
    store = tmp_path / "h.sqlite"
    first = run(
        "bench", "efficientnet-lite0", "--runs", "20", "--history", str(store), "--json", str(tmp_path / "b.json")
    )
    assert first.returncode == 0, first.stderr
    assert "stored as history run(s) 1" in first.stdout
    assert json.loads((tmp_path / "b.json").read_text())["kind"] == "single"
    # make run 1 look 10× faster than anything real: the next run must fail the gate with exit code 1
    import sqlite3

    with sqlite3.connect(store) as db:
        samples = json.loads(db.execute("SELECT samples FROM runs WHERE id = 1").fetchone()[0])
        db.execute("UPDATE runs SET samples = ? WHERE id = 1", (json.dumps([s / 10 for s in samples]),))
    gated = run("bench", "efficientnet-lite0", "--runs", "20", "--history", str(store), "--baseline", "1")
    assert gated.returncode == 1
    assert "regression" in gated.stderr
    listing = run("history", "--history", str(store), "--html", str(tmp_path / "h.html"))
    assert listing.returncode == 0 and "History (2 runs)" in listing.stdout
    assert (tmp_path / "h.html").read_text().startswith("<!doctype html>")


def test_bench_http_unreachable_is_a_one_line_error():
    result = run("bench", "--http", "http://127.0.0.1:9/v1/models/m/image", "--rate", "10", "--duration", "1")
    assert result.returncode == 2 and "cannot reach" in result.stderr
    assert "Traceback" not in result.stderr


def test_bench_and_serve_argument_errors_fail_before_any_work(effnet, tmp_path):
    store = tmp_path / "h.sqlite"
    cases = [
        (("bench", "efficientnet-lite0", "--no-history", "--baseline", "1"), "needs a history file"),
        (("bench", "efficientnet-lite0", "--history", str(store), "--baseline", "99"), "no run 99"),
        (("bench", "--http", "http://127.0.0.1:9/x", "--body", "v2-json", "--rate", "1"), "V2 bodies need --model"),
        (("serve", "efficientnet-lite0", "--canary", "a", "--shadow", "b"), "not both"),
        (("serve", "efficientnet-lite0", "--overload-status", "500"), "429 or 503"),
        (("search", "serve", str(tmp_path), "--overload-status", "500"), "429 or 503"),
    ]
    for args, message in cases:
        result = run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    from turboinfer.bench.history import runs

    assert runs(store) == []  # the unknown baseline was refused before anything was measured or stored


def test_optimize_dry_run_prints_the_plan_with_its_candidates(effnet):
    result = run("optimize", "efficientnet-lite0", "--dry-run", "--budget", "0.5%")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["budget"] == 0.005 and plan["model"] == "efficientnet-lite0"
    assert plan["space"][0]["steps"] == [] and plan["space"][0]["backend"] == "ort"
    assert any(step["name"] == "nncf-int8" for c in plan["space"] for step in c["steps"])


def test_optimize_argument_errors_are_one_line(tmp_path):
    for args, message in ((("--budget", "lots"), "expected a percentage"), (("--objective", "speed"), "objective"),
                          (("--config", str(tmp_path / "none.yaml")), "plan file not found")):  # fmt: skip
        result = run("optimize", "efficientnet-lite0", *args)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_optimize_with_an_impossible_budget_exits_3_and_still_writes_its_outputs(effnet, tmp_path):
    plan = {
        "model": "ignored-model-argument-wins", "budget": 0.0, "strategy": "exhaustive", "n_evaluation": 32,
        "n_calibration": 8, "seconds_per_candidate": 0.3, "culprits": False, "out_dir": str(tmp_path / "out"),
        "space": [{"steps": []}, {"steps": [{"name": "ort-int8-static"}]}],
    }  # fmt: skip
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    result = run("optimize", "efficientnet-lite0", "--config", str(tmp_path / "plan.json"))
    assert result.returncode == 3, result.stderr
    assert "no optimized candidate keeps the budget" in result.stderr
    assert "rejected" in result.stdout and "chosen" in result.stdout
    for name in ("chosen.variant.json", "decision-log.json", "report.html"):
        assert (tmp_path / "out" / name).is_file()
