"""Each rule on synthetic measurements: fires on its evidence, stays quiet without it."""

import pytest

from turboinfer.profile.diagnose import Evidence, diagnose

QUIET = Evidence(precision="int8", model_cv=0.05, first_call_penalty=1.2, usable_cpus=2, threads=2, batch_gain=1.05,
                 thread_efficiency=0.9, attention_share_longest=0.1, memory_bound_share=0.2)  # fmt: skip


def rules(evidence: Evidence) -> list[str]:
    return [r.rule for r in diagnose(evidence)]


def with_(**changes) -> Evidence:
    return Evidence(**{**QUIET.__dict__, **changes})


def test_a_healthy_profile_fires_nothing():
    assert rules(QUIET) == []


@pytest.mark.parametrize(
    ("changes", "rule", "evidence_text"),
    [
        ({"stage_shares": {"decode": 0.55, "model": 0.4}}, "slow-decode", "decode is 55%"),
        ({"stage_shares": {"resize+crop": 0.12, "normalize": 0.08}}, "slow-preprocess", "20%"),
        ({"precision": "fp32", "isa": ("avx2", "avx512_vnni")}, "int8", "avx512_vnni"),
        ({"precision": "fp32", "isa": ("avx2",), "int8_over_fp32": 1.7}, "int8-limited", "1.7×"),
        ({"batch_gain": 3.1, "batch_knee": 8}, "dynamic-batching", "3.1×"),
        ({"threads": 8, "usable_cpus": 2}, "oversubscribed", "8 threads on 2"),
        ({"model_cv": 0.35}, "jitter", "CV 0.35"),
        ({"first_call_penalty": 12.0}, "warm-up", "12.0×"),
        ({"thread_efficiency": 0.4}, "thread-scaling", "40%"),
        ({"attention_share_longest": 0.6, "longest_sequence": 512}, "attention", "60% of model time at sequence 512"),
        ({"memory_bound_share": 0.7}, "memory-bound", "70%"),
    ],
)
def test_rule_fires_with_its_evidence(changes, rule, evidence_text):
    fired = {r.rule: r for r in diagnose(with_(**changes))}
    assert list(fired) == [rule]
    assert evidence_text in fired[rule].evidence
    assert fired[rule].expected_gain


def test_recommendations_are_ranked_by_what_is_at_stake():
    ranked = rules(with_(stage_shares={"decode": 0.6}, first_call_penalty=10.0, batch_gain=2.0, batch_knee=4))
    assert ranked[0] == "slow-decode"
    assert ranked[-1] == "warm-up"
