"""Plans and outcomes round-trip through JSON and YAML; bad plans fail with the field named."""

import json

import pytest
import yaml

from turboinfer.core.errors import InvalidInput
from turboinfer.optimize.plan import Candidate, Outcome, Plan, Step, load_plan, quick_plan
from turboinfer.runtime.session import SessionOptions

SPACE = (
    Candidate(),
    Candidate((Step("fold-normalize"), Step("ort-int8-static", {"calibration": "entropy"})), "ort"),
    Candidate((Step("nncf-int8"),), "openvino", SessionOptions(intra_threads=1, precision="bf16"), batch=8),
)


def test_plan_round_trips_through_json_and_yaml(tmp_path):
    plan = Plan("efficientnet-lite0", budget=0.005, objective="throughput", batch=8, swap=("mobilenetv2",),
                metric="pkg.mod:fn", metric_min=0.9, space=SPACE)  # fmt: skip
    assert Plan.from_dict(json.loads(plan.to_json())) == plan
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan.to_dict()))
    assert load_plan(path) == plan
    assert load_plan(path, {"batch": 4}).batch == 4


def test_labels_name_passes_backend_and_options():
    assert SPACE[0].label == "original @ort"
    assert SPACE[1].label == "fold-normalize > ort-int8-static(calibration=entropy) @ort"
    assert SPACE[2].label == "nncf-int8 @openvino bf16 1t batch 8"
    excluded = Step("ort-int8-static", {"exclude_nodes": ["a", "b"]})
    assert excluded.label() == "ort-int8-static(2 nodes in float)"


def test_bad_plans_are_refused_with_the_reason(tmp_path):
    with pytest.raises(InvalidInput, match="unknown plan fields: colour"):
        Plan.from_dict({"model": "m", "colour": "red"})
    with pytest.raises(InvalidInput, match="needs a model"):
        Plan.from_dict({})
    with pytest.raises(InvalidInput, match="objective"):
        Plan.from_dict({"model": "m", "objective": "speed"})
    with pytest.raises(InvalidInput, match="budget"):
        Plan.from_dict({"model": "m", "budget": 2})
    with pytest.raises(InvalidInput, match="p99_target_ms must be positive"):
        Plan.from_dict({"model": "m", "p99_target_ms": -5})
    with pytest.raises(InvalidInput, match="calibration_batch"):
        Plan.from_dict({"model": "m", "calibration_batch": 0})
    with pytest.raises(InvalidInput, match="bad candidate"):
        Plan.from_dict({"model": "m", "space": [{"options": {"threads": 3}}]})
    (tmp_path / "bad.yaml").write_text("[1, 2")
    with pytest.raises(InvalidInput, match="not valid YAML"):
        load_plan(tmp_path / "bad.yaml")
    with pytest.raises(InvalidInput, match="not found"):
        load_plan(tmp_path / "missing.yaml")


def test_quick_plan_and_outcome_form():
    quick = quick_plan(Plan("m"))
    assert quick.quick and not quick.culprits and quick.n_evaluation == 100
    outcome = Outcome(SPACE[1], "rejected", "rejected: top-1 agreement 0.8 < 0.99", {"top1_agreement": 0.8})
    data = outcome.to_dict()
    assert data["label"] == SPACE[1].label and Candidate.from_dict(data["candidate"]) == SPACE[1]
