import numpy as np
import pytest

from turboinfer.models.postprocess import softmax_top5, unit_embedding


def test_postprocessing():
    logits = np.array([[0.0, 3.0, 1.0]], np.float32)
    top = softmax_top5({"logits": logits})
    assert [c for c, _ in top] == [1, 2, 0]
    assert sum(p for _, p in top) == pytest.approx(1.0)
    assert np.linalg.norm(unit_embedding({"e": np.array([[3.0, 4.0]])})) == pytest.approx(1.0)
