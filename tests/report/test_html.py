"""The report pages drawn from typed results: an LLM profile, a load run and a decision log read back from its JSON
(the profile, optimize and case-study pages are drawn from real runs in tests/profile, tests/optimize and
tests/cli)."""

from __future__ import annotations

import json

import pytest

from turboinfer.bench.openai_load import LoadRun, Record
from turboinfer.core.errors import InvalidInput
from turboinfer.optimize.artifacts import read_decisions
from turboinfer.optimize.plan import Candidate, Outcome, Step
from turboinfer.profile.diagnose import Recommendation
from turboinfer.profile.generation import (
    CacheGain,
    DecodeRow,
    GenProfile,
    GenRoofline,
    KvFootprint,
    PrefillRow,
    PrefixReuse,
    StreamsRow,
)
from turboinfer.report.html import decision_table, generation_html, openai_load_html
from turboinfer.runtime.session import SessionOptions

ADVICE = Recommendation("rule", "Serve <many> streams at once", "one stream reads the weights per token", "3×", 0.9)


def llm_profile() -> GenProfile:
    roofline = GenRoofline(20.0, 500.0, 1e8, 9.0, 200.0, 0.45, 300.0, 0.6, 900.0, 0.33, 1e8)
    return GenProfile(
        {"model": "tiny <llm>"}, {"engine": "openvino-genai"}, {"cpu": "Test CPU", "usable_cpus": 2},
        [PrefillRow(64, 0.05, 1280.0), PrefillRow(256, 0.15, 1706.0)],
        [DecodeRow(16, 90.0, 0.011), DecodeRow(512, 80.0, 0.0125)], CacheGain(90.0, 4.5, 20.0, 64),
        [StreamsRow(1, 90.0, 0.05, 0.011), StreamsRow(4, 300.0, 0.07, 0.013)], PrefixReuse(0.3, 0.05, 6.0),
        KvFootprint(15360.0, 15360.0 * 2048, 4.0, 2048), roofline, [ADVICE], 512.0,
    )  # fmt: skip


def test_an_llm_profile_page_is_self_contained_with_its_curves_facts_and_advice():
    page = generation_html(llm_profile())
    assert page.startswith("<!doctype html>") and "http://" not in page and "https://" not in page
    assert page.count('<img src="data:image/png;base64,') == 3  # prefill, decode, streams
    assert "tiny &lt;llm&gt;" in page and "Serve &lt;many&gt; streams at once" in page  # escaped
    assert "15.0 KiB per token" in page and "decode 90.0 tok/s with it, 4.50 without (20×)" in page
    assert '<div class="rec"><b>1. ' in page  # the same recommendation markup as a model's profile


def test_a_load_page_has_one_row_per_step_from_its_summary():
    ok = [Record("200", 0.01, 0.1 * i, 0.1 * i + 0.5, [0.05] * 10, 11, 200) for i in range(1, 5)]
    run = LoadRun("closed", 4, 2.0, [*ok, Record("429", 0.002)])
    summary = run.summary()
    assert (summary.completed, summary.failed, summary.errors) == (4, 1, {"429": 1})
    assert summary.output_throughput == pytest.approx(44 / 2.0) and summary.tpot_ms.median == pytest.approx(50.0)
    assert json.loads(json.dumps(summary.to_dict()))["ttft_ms"]["median"] == pytest.approx(250.0)
    page = openai_load_html("http://127.0.0.1:1/v1", {"streams": 4}, [summary])
    assert page.count("<tr>") == 2 and "<td>closed 4</td><td>4</td><td>1</td><td>22.0</td>" in page


def test_a_decision_log_reads_back_as_the_outcomes_it_was_written_from(tmp_path):
    int8 = Candidate((Step("ort-int8-static", {"per_channel": True}),), "ort", SessionOptions(intra_threads=2))
    outcomes = [
        Outcome(Candidate(), "not chosen", "slower", {"top1_agreement": 1.0}, 0.02, 0.03, 1.0, (0.97, 1.03), 2**22),
        Outcome(int8, "chosen", "fastest inside", {"top1_agreement": 0.995}, 0.01, 0.012, 0.5, (0.48, 0.52), 2**20,
                "int8", judged="top1_agreement", judged_by="top-1 agreement ≥ 0.990"),
    ]  # fmt: skip
    log = tmp_path / "decision-log.json"
    log.write_text(json.dumps({"outcomes": [o.to_dict() for o in outcomes]}, default=str))
    assert read_decisions(log) == outcomes
    table = decision_table(read_decisions(log))
    assert "<th>top1 agreement</th>" in table and "<td>2.00×</td><td>0.48–0.52</td>" in table
    log.write_text('{"outcomes": [{"status": "chosen"}]}')
    with pytest.raises(InvalidInput, match="is not a decision log optimize wrote"):
        read_decisions(log)
