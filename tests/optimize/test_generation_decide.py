"""Choosing a generator: the fastest inside the budget for the objective (one stream's decode, or many streams'
output), reasons for every candidate, and a clear error when none keeps the budget."""

from __future__ import annotations

import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.llm.speed import GenSpeed, StreamsSpeed, TaskSpeed, rate
from turboinfer.llm.variant import GeneratorVariant
from turboinfer.optimize.generation import GenBudget, GenOutcome, GenPlan, breach, decide


def outcome(weights: str, decode: float, streams: float, status: str = "fits") -> GenOutcome:
    engine = "ort-genai" if weights.startswith("int") else "openvino-genai"
    speed = GenSpeed(weights, {}, rate([500.0]), {16: rate([decode])}, rate([0.1]))
    return GenOutcome(GeneratorVariant("smollm2-135m", engine, weights), status, "", {}, speed,
                      StreamsSpeed(16, streams))  # fmt: skip


def test_latency_takes_the_fastest_decoder_and_throughput_the_most_output():
    ort, ov = outcome("int8", 130, 130), outcome("q8_0", 85, 315)
    assert decide([ort, ov], "latency") is ort and "130 tok/s decoding one stream" in ort.reason
    assert ov.status == "not chosen" and "85 tok/s decoding one stream against the chosen's 130" in ov.reason
    ort, ov = outcome("int8", 130, 130), outcome("q8_0", 85, 315)
    assert decide([ort, ov], "throughput") is ov and "315 output tok/s at 16 streams" in ov.reason


def test_grounded_ranks_by_the_grounded_task_and_an_unmeasured_objective_is_never_ranked():
    plain, lookup = outcome("q8_0", 90, 300), outcome("q8_0", 85, 300)
    plain.tasks, lookup.tasks = {"grounded": TaskSpeed(90.0, 1.0)}, {"grounded": TaskSpeed(150.0, 2.1, 0.37)}
    assert decide([plain, lookup], "grounded") is lookup and "150 tok/s decoding one stream on input-grounded" in (
        lookup.reason
    )
    assert lookup.to_dict()["speed"]["grounded"] == {"tokens_per_s": 150.0, "tokens_per_step": 2.1, "acceptance": 0.37}
    assert plain.to_dict()["speed"]["grounded"] == {"tokens_per_s": 90.0, "tokens_per_step": 1.0}
    with pytest.raises(ValueError, match="was not measured for the grounded objective"):
        decide([outcome("q8_0", 90, 300)], "grounded")


def test_a_rejected_candidate_is_never_chosen_and_none_left_is_an_error():
    fast = outcome("q4_1", 100, 370, "rejected")
    fast.reason = "rejected: greedy-path agreement 0.770 < 0.900"
    slow = outcome("q8_0", 85, 315)
    assert decide([fast, slow], "throughput") is slow and fast.status == "rejected"
    with pytest.raises(InvalidInput, match="no candidate kept the budget: .*q4_1.*0.770 < 0.900"):
        decide([fast], "latency")


def test_the_budget_reads_teacher_forced_agreement_before_the_greedy_path():
    budget = GenBudget(0.9, 1.05)
    assert breach({"path_agreement": 0.77}, budget) == "greedy-path agreement 0.770 < 0.900"
    assert breach({"next_token_agreement": 0.95, "path_agreement": 0.5, "perplexity_ratio": 1.2}, budget) == (
        "perplexity ratio 1.200 > 1.050"
    )
    assert breach({"next_token_agreement": 0.97, "perplexity_ratio": 0.99}, budget) is None


def test_an_unknown_objective_is_refused():
    with pytest.raises(InvalidInput, match="objective is one of latency, throughput, grounded, got 'speed'"):
        GenPlan(objective="speed")
