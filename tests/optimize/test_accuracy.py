"""The oracle: fidelity metrics, the budget check and the user metric."""

import numpy as np
import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.optimize.accuracy import (
    Budget,
    Fidelity,
    breach,
    classify_metrics,
    embed_metrics,
    fidelity,
    judged,
    label_accuracy,
    load_user_metric,
)


def mean_abs_difference(reference, candidate):
    """A user metric for the test: 1 − mean |difference| of the first output."""
    first = next(iter(reference))
    return 1.0 - float(np.mean(np.abs(reference[first] - candidate[first])))


def test_identical_logits_agree_fully_and_one_flip_costs_one_row():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((10, 1000)).astype(np.float32)
    assert classify_metrics(logits, logits) == {"top1_agreement": 1.0, "top5_overlap": 1.0}
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
