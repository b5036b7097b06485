"""The decoder LLM through the CLI as a user runs it: zoo build, bench (pp/tg, A/B), profile and optimize."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import run


def test_zoo_build_and_list_the_llm():
    built = run("zoo", "build", "smollm2-135m")
    assert built.returncode == 0, built.stderr
    assert (
        "llama, 134.5 M parameters, 30 layers, hidden 576, 9 query / 3 KV heads × 64, vocab 49,152, context 8,192, Q4_1"
        in built.stderr
    )
    assert "smollm2-135m" in run("zoo", "list").stdout


def test_bench_pp_and_tg_with_intervals_and_history(tmp_path):
    store = tmp_path / "h.sqlite"
    result = run("bench", "smollm2-135m", "--runs", "2", "--history", str(store), "--json", str(tmp_path / "b.json"))
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "b.json").read_text())["results"][0]
    assert data["pp"]["median"] > 0 and data["tg"]["16"]["median"] > 0 and len(data["pp"]["values"]) == 2
    from turboinfer.bench.history import runs

    (stored,) = runs(store)
    assert stored.label == "smollm2-135m@openvino-genai" and stored.throughput == pytest.approx(
        data["tg"]["16"]["median"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [(("bench", "smollm2-135m@llamacpp"), "unknown engine 'llamacpp'"),
     (("bench", "smollm2-135m@ort-genai", "--vs", "nope.generator.json"), "not valid")],
)  # fmt: skip
def test_bad_llm_arguments_are_one_line(args, message):
    result = run(*args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


@pytest.mark.slow
def test_profile_and_optimize_quick(tmp_path):
    profiled = run("profile", "smollm2-135m", "--quick", "--json", str(tmp_path / "p.json"), "--html",
                   str(tmp_path / "p.html"))  # fmt: skip
    assert profiled.returncode == 0, profiled.stderr
    report = json.loads((tmp_path / "p.json").read_text())
    assert report["cache"]["gain"] > 5 and report["kv"]["bytes_per_token"] == 30 * 2 * 3 * 64
    assert report["recommendations"] and report["roofline"]["decode_bound_tokens_per_s"] > 0
    assert (tmp_path / "p.html").read_text().count("data:image/png;base64,") == 3
    # a cold cache builds three OpenVINO IR layouts (optimum-intel, NNCF's data-aware int4 among them) and ORT
    # GenAI's int4 model first: minutes on two cores
    optimized = run("optimize", "smollm2-135m", "--quick", "--objective", "throughput", "--batch", "4", "--out",
                    str(tmp_path / "o"), timeout=1800)  # fmt: skip
    assert optimized.returncode == 0, optimized.stderr
    log = json.loads((tmp_path / "o" / "decision-log.json").read_text())
    assert log["chosen"]["status"] == "chosen" and all(o["reason"] for o in log["outcomes"])
    assert "output tok/s at 4 streams" in log["chosen"]["reason"]
    q8 = next(o for o in log["outcomes"] if o["label"].startswith("smollm2-135m@openvino-genai q8_0"))
    assert q8["status"] != "rejected" and q8["fidelity"]["path_agreement"] >= 0.9, q8
