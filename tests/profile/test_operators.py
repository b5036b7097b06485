import pytest

from turboinfer.profile.operators import operator_profile
from turboinfer.profile.roofline import Ceilings
from turboinfer.runtime.profiling import NodeRun

RUNS = [
    NodeRun("conv1", "Conv", 0.006, ((1, 16, 56, 56), (32, 16, 3, 3)), ((1, 32, 56, 56),), 1e6),
    NodeRun("/layer.0/attention/MatMul", "MatMul", 0.003, ((1, 128, 384), (384, 384)), ((1, 128, 384),), 8e5),
    NodeRun("add", "Add", 0.0005, ((1, 32, 56, 56), (1, 32, 56, 56)), ((1, 32, 56, 56),), 1.2e6),
    NodeRun("odd", "MysteryOp", 0.0005, ((1, 4),), ((1, 4),), 32.0),
]


def test_aggregates_by_op_type_and_places_known_nodes():
    profile = operator_profile(RUNS, Ceilings(100.0, 10.0))
    assert [n.name for n in profile.nodes][:2] == ["conv1", "/layer.0/attention/MatMul"]
    assert profile.total_seconds == pytest.approx(0.01)
    shares = {t.op_type: t.share for t in profile.by_type}
    assert shares == pytest.approx({"Conv": 0.6, "MatMul": 0.3, "Add": 0.05, "MysteryOp": 0.05})
    assert profile.unknown_flops == ("MysteryOp",)
    assert {p.name for p in profile.points} == {"conv1", "/layer.0/attention/MatMul", "add"}
    add = next(p for p in profile.points if p.name == "add")
    assert add.bound == "memory"
    assert 0 < profile.memory_bound_share() < 1
    assert profile.share_matching(("attention",)) == pytest.approx(0.3)
    assert profile.to_dict(top=2)["top_nodes"][0]["name"] == "conv1"


def test_without_ceilings_nothing_is_placed():
    assert operator_profile(RUNS, None).points == ()
