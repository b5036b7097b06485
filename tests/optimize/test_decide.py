"""The decision rule: faster only when the CI says so; the two fastest meet head to head; reasons for all."""

from turboinfer.optimize.decide import decide
from turboinfer.optimize.plan import Candidate, Outcome, Step


def outcome(name, ratio, ci, status="not chosen"):
    return Outcome(Candidate((Step(name),) if name else ()), status, ratio=ratio, ratio_ci=ci)


def never(first, second):
    raise AssertionError("no head-to-head expected")


def test_a_speedup_inside_the_noise_is_not_chosen():
    original = outcome("", 1.0, (0.98, 1.02), "original")
    noisy = outcome("onnxslim", 0.97, (0.93, 1.01))
    chosen = decide([original, noisy], 0.02, never)
    assert chosen is original and original.status == "chosen"
    assert noisy.reason == "not chosen: faster but inside the noise, ×0.97 (CI 0.93–1.01)"


def test_the_fastest_inside_the_budget_wins_and_the_runner_up_is_explained():
    original = outcome("", 1.0, (0.98, 1.02), "original")
    rejected = outcome("ort-int8-static", 0.4, (0.38, 0.42), "rejected")
    rejected.reason = "rejected: top-1 agreement 0.86 < 0.99"
    a = outcome("nncf-int8", 0.60, (0.58, 0.62))
    b = outcome("fold-normalize", 0.62, (0.60, 0.64))
    c = outcome("onnxslim", 0.90, (0.85, 0.95))
    chosen = decide([original, rejected, a, b, c], 0.02, lambda first, second: (1.01, (0.99, 1.03)))
    assert chosen is a and a.status == "chosen" and "×0.60" in a.reason
    assert b.reason.startswith("not chosen: no difference head to head")
    assert c.reason.startswith("not chosen: slower than the chosen")
    assert rejected.status == "rejected"


def test_the_runner_up_wins_when_it_is_faster_head_to_head():
    original = outcome("", 1.0, (0.98, 1.02), "original")
    a, b = outcome("x", 0.60, (0.58, 0.62)), outcome("y", 0.61, (0.59, 0.63))
    chosen = decide([original, a, b], 0.02, lambda first, second: (0.90, (0.88, 0.92)))
    assert chosen is b and a.reason.startswith("not chosen: slower head to head")


def test_nothing_fits_returns_the_original_with_the_reason():
    original = outcome("", 1.0, (0.98, 1.02), "original")
    rejected = outcome("ort-int8-static", 0.5, (0.48, 0.52), "rejected")
    assert decide([original, rejected], 0.02, never) is original
    assert original.reason == "chosen: no optimized candidate fits the budget"
