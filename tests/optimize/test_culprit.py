"""The culprit finder on a real quantization that breaks the budget: a two-layer model whose second MatMul reads
an activation with one huge channel, so per-tensor INT8 activations wipe out the small channels it needs."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from turboinfer.measure.fidelity import classify_metrics
from turboinfer.models.cards import card_from_onnx
from turboinfer.optimize.culprit import find_culprits, with_float_nodes
from turboinfer.optimize.passes import make_pass
from turboinfer.optimize.passes.base import PassContext, apply_pass
from turboinfer.optimize.passes.quantize import NodeLoss, rank_nodes
from turboinfer.optimize.plan import Candidate, Step
from turboinfer.runtime.session import open_session


def outlier_model(path: Path) -> Path:
    """x [batch, 16] → MatMul (channel 0 scaled ×1000) → h → MatMul (ignores channel 0) → y [batch, 10]."""
    rng = np.random.default_rng(0)
    first = rng.standard_normal((16, 16)).astype(np.float32)
    first[:, 0] *= 1000  # one huge channel: h's per-tensor range is set by it
    second = rng.standard_normal((16, 10)).astype(np.float32)
    second[0] = 0  # ...yet the answer depends only on the small channels
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="first"),
         helper.make_node("MatMul", ["h", "w2"], ["y"], name="second")],
        "outlier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        initializer=[numpy_helper.from_array(first, "w1"), numpy_helper.from_array(second, "w2")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture()
def setup(tmp_path):
    card = card_from_onnx(outlier_model(tmp_path / "outlier.onnx"))
    rng = np.random.default_rng(1)
    calibration = rng.standard_normal((64, 16)).astype(np.float32)
    evaluation = rng.standard_normal((200, 16)).astype(np.float32)
    context = PassContext(
        tmp_path / "cache",
        lambda c, size: ({"x": calibration[i : i + size]} for i in range(0, len(calibration), size)),
        calibration_key="outlier",
    )
    reference = open_session(card.onnx_path).run({"x": evaluation})["y"]

    def agreement(candidate: Candidate) -> float:
        built = card
        for step in candidate.steps:
            built = apply_pass(make_pass(step.name, step.config), built, context)
        got = open_session(built.onnx_path).run({"x": evaluation})["y"]
        return classify_metrics(reference, got)["top1_agreement"]

    return card, context, calibration, agreement


def test_naive_int8_breaks_and_keeping_the_culprit_in_float_restores(setup):
    card, context, calibration, agreement = setup
    naive = Candidate((Step("ort-int8-static", {"per_channel": True}),))
    assert agreement(naive) < 0.9  # the budget is broken by quantization
    qdq = apply_pass(make_pass("ort-int8-static", {"per_channel": True}), card, context)
    ranked = rank_nodes(card, qdq, [{"x": calibration[:32]}])
    assert ranked[0].name == "second"  # it loses the signal, not "first"
    assert ranked[0].group == ("second", "first")  # its input is float only if its producer is excluded too
    search = find_culprits(naive, ranked, agreement, least=0.99)
    assert search.culprits == ("second",) and search.trials[0].float_nodes == 1
    assert agreement(with_float_nodes(naive, search.nodes)) >= 0.99


def test_the_search_doubles_then_bisects_to_the_fewest_nodes():
    ranked = [NodeLoss(f"n{i}", float(20 - i), (f"n{i}",)) for i in range(20)]
    needed = 5  # the metric fits once the top 5 nodes are in float

    def metric(candidate: Candidate) -> float:
        return 1.0 if len(candidate.steps[0].config["exclude_nodes"]) >= needed else 0.5

    search = find_culprits(Candidate((Step("ort-int8-static"),)), ranked, metric, least=0.99)
    assert search.nodes == tuple(f"n{i}" for i in range(needed))
    assert [t.float_nodes for t in search.trials] == [1, 2, 4, 8, 6, 5]
    never = find_culprits(Candidate((Step("ort-int8-static"),)), ranked, lambda c: 0.0, least=0.99)
    assert never.nodes == () and not never.restored and never.to_dict()["restored"] is False
