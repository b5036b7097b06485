"""The oracle: fidelity metrics, the budget check and the user metric."""

import numpy as np
import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.measure.fidelity import classify_metrics, embed_metrics
from turboinfer.optimize.accuracy import (
    Budget,
    Fidelity,
    breach,
    fidelity,
    judged,
    judged_by,
    label_accuracy,
    load_user_metric,
    warning,
)


def mean_abs_difference(reference, candidate):
    """A user metric for the test: 1 − mean |difference| of the first output."""
    first = next(iter(reference))
    return 1.0 - float(np.mean(np.abs(reference[first] - candidate[first])))


def test_identical_logits_agree_fully_and_one_flip_costs_one_row():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((10, 1000)).astype(np.float32)
    same = classify_metrics(logits, logits)
    assert (same["top1_agreement"], same["top5_overlap"]) == (1.0, 1.0)
    flipped = logits.copy()
    flipped[3, logits[3].argmin()] = logits[3].max() + 1  # row 3 now answers another class
    metrics = classify_metrics(logits, flipped)
    assert metrics["top1_agreement"] == pytest.approx(0.9)
    assert metrics["top5_overlap"] == pytest.approx(1 - 0.2 / 10)  # one of row 3's top five is replaced


def test_embeddings_cosine_and_neighbour_overlap():
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((50, 32))
    same = embed_metrics(vectors, vectors * 3.0)  # scale does not matter to cosine
    assert same["cosine_mean"] == pytest.approx(1.0) and same["recall10_overlap"] == pytest.approx(1.0)
    noisy = embed_metrics(vectors, vectors + rng.standard_normal((50, 32)))
    assert 0.5 < noisy["cosine_mean"] < 0.9 and noisy["cosine_min"] < noisy["cosine_mean"]
    assert noisy["recall10_overlap"] < 1.0


def test_budget_from_drop_and_breach_message():
    budget = Budget.from_drop(0.01)
    assert (budget.top1_agreement, budget.cosine_mean, budget.cosine_min) == pytest.approx((0.99, 0.99, 0.98))
    assert breach(Fidelity("classify", 100, {"top1_agreement": 0.94}), budget) == "top-1 agreement 0.9400 < 0.9900"
    assert breach(Fidelity("classify", 100, {"top1_agreement": 0.995}), budget) is None
    decisive = {"top1_agreement": 0.90, "decisive_agreement": 0.995, "decisive_n": 40.0}
    assert breach(Fidelity("classify", 100, decisive), budget) is None  # flips among near-ties do not count
    assert breach(Fidelity("classify", 100, {**decisive, "decisive_agreement": 0.95}), budget) == (
        "decisive top-1 agreement 0.9500 < 0.9900"
    )
    assert breach(Fidelity("embed", 9, {"cosine_mean": 0.995, "cosine_min": 0.97}), budget) == (
        "min cosine 0.9700 < 0.9800"
    )
    with pytest.raises(InvalidInput, match="between 0% and 100%"):
        Budget.from_drop(1.5)


def test_user_metric_is_loaded_by_name_and_joins_the_budget():
    metric = load_user_metric("tests.optimize.test_accuracy:mean_abs_difference")
    reference = {"logits": np.zeros((4, 3), np.float32)}
    candidate = {"logits": np.full((4, 3), 0.5, np.float32)}
    result = fidelity("classify", reference, candidate, "logits", metric)
    assert result.metrics["user"] == pytest.approx(0.5)
    assert breach(result, Budget.from_drop(0.01, user_min=0.9)) == "user metric 0.5000 < 0.9000"
    for bad, message in (("nocolon", "module:function"), ("no_such_module_x:f", "cannot import"),
                         ("tests.optimize.test_accuracy:missing", "no callable")):  # fmt: skip
        with pytest.raises(InvalidInput, match=message):
            load_user_metric(bad)


def test_changed_output_shape_is_an_error_and_labels_score_accuracy():
    with pytest.raises(InvalidInput, match="changed shape"):
        fidelity("classify", {"y": np.zeros((2, 3))}, {"y": np.zeros((2, 4))}, "y")
    logits = np.eye(4)
    assert label_accuracy(logits, np.array([0, 1, 2, 0])) == pytest.approx(0.75)


def test_the_judged_output_is_the_first_or_an_embedding(effnet, minilm):
    assert judged(effnet, None) == ("classify", "logits")
    assert judged(effnet, "logits") == ("classify", "logits")
    assert judged(effnet, "features") == ("embed", "features")
    assert judged(minilm, None)[0] == "embed"
    with pytest.raises(InvalidInput, match="no output 'pooled'; its outputs: logits, features"):
        judged(effnet, "pooled")


def confident_and_tied_logits(rng: np.random.Generator, n: int) -> np.ndarray:
    """n rows whose first half is decisive (one class far ahead) and second half near-ties among ten classes."""
    logits = rng.standard_normal((n, 10)) * 0.01
    logits[: n // 2, 0] += 10.0
    return logits


def test_decisive_agreement_counts_flips_only_where_the_original_is_sure():
    rng = np.random.default_rng(2)
    reference = confident_and_tied_logits(rng, 100)
    candidate = reference + rng.standard_normal(reference.shape) * 0.05  # shuffles the near-ties only
    result = fidelity("classify", {"y": reference}, {"y": candidate}, "y")
    m = result.metrics
    assert m["decisive_n"] == 50 and m["decisive_agreement"] == 1.0 and m["top1_agreement"] < 0.9
    assert result.judged == "decisive_agreement" and breach(result, Budget.from_drop(0.01)) is None
    assert "50 of 100 inputs" in judged_by(result, Budget.from_drop(0.01)) and not warning(result, Budget())


def test_too_few_decisive_inputs_fall_back_to_overall_agreement_with_a_warning():
    rng = np.random.default_rng(3)
    reference = rng.standard_normal((100, 10)) * 0.01  # the model is never sure (random weights)
    candidate = reference + rng.standard_normal(reference.shape) * 0.05
    result = fidelity("classify", {"y": reference}, {"y": candidate}, "y")
    assert result.judged == "top1_agreement" and breach(result, Budget()) is not None
    assert "only 0 inputs are decisive" in warning(result, Budget())


def test_labelled_budgets_relative_and_in_points_with_their_intervals():
    labels = np.arange(400) % 10
    reference = np.eye(10)[labels] * 5.0  # always right
    candidate = reference.copy()
    candidate[:6] = np.eye(10)[(labels[:6] + 1) % 10] * 5.0  # wrong on 6 of 400: accuracy 0.985
    result = fidelity("classify", {"y": reference}, {"y": candidate}, "y", labels=labels)
    m = result.metrics
    assert result.judged == "accuracy" and m["accuracy"] == pytest.approx(0.985) and m["labelled_n"] == 400
    assert m["accuracy_ratio_low"] < 0.985 < m["accuracy_ratio_high"]
    assert breach(result, Budget.from_drop(0.01)) == "accuracy ratio 0.9850 < 0.9900"
    assert breach(result, Budget.from_drop(0.02)) is None
    assert breach(result, Budget.from_drop(0.02, points=True)) is None
    assert "on 400 labelled inputs" in judged_by(result, Budget.from_drop(0.02, points=True))


def test_too_few_labels_to_resolve_the_budget_is_a_warning_not_a_silent_pass():
    labels = np.arange(20) % 10
    reference = np.eye(10)[labels] * 5.0
    result = fidelity("classify", {"y": reference}, {"y": reference.copy()}, "y", labels=labels)
    assert breach(result, Budget.from_drop(0.01)) is None  # no drop at all: the point estimate passes ...
    candidate = reference.copy()
    candidate[0] = np.eye(10)[1] * 5.0  # one mistake in 20
    shaky = fidelity("classify", {"y": reference}, {"y": candidate}, "y", labels=labels)
    text = warning(shaky, Budget.from_drop(0.1))
    assert "20 labelled inputs cannot resolve a 10.0% budget" in text  # ... and a 5% drop inside a 10% budget: warned


def test_probabilities_are_not_softmaxed_again():
    probabilities = np.array([[0.7, 0.2, 0.1], [0.34, 0.33, 0.33]])
    assert classify_metrics(probabilities, probabilities)["decisive_n"] == 1
