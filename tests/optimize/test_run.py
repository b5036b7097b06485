"""run(plan) end to end on the real EfficientNet-Lite0 and real photos: outcomes, reasons, artifacts, and the
bad inputs a user can give (empty or corrupt photo folders, a failing pass, an impossible budget)."""

import json
from pathlib import Path

import pytest

from turboinfer.core.errors import DataUnavailable, InvalidInput
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import load_variant
from turboinfer.optimize import artifacts
from turboinfer.optimize.data import input_sets
from turboinfer.optimize.plan import Candidate, Plan, Step
from turboinfer.optimize.run import run
from turboinfer.report.html import optimize_html
from turboinfer.runtime.session import SessionOptions

TWO = SessionOptions(intra_threads=2)
SMALL = {"n_evaluation": 48, "n_calibration": 16, "seconds_per_candidate": 0.5, "culprits": False}


@pytest.fixture(scope="module")
def result(settings, tmp_path_factory):
    space = (
        Candidate((), "ort", TWO),
        Candidate((Step("fold-normalize"),), "ort", TWO),
        Candidate((Step("ort-int8-static"),), "ort", TWO),
        Candidate((Step("ort-fusion"),), "ort", TWO),  # a transformer pass on a CNN: fails, the search goes on
    )
    plan = Plan("efficientnet-lite0", strategy="exhaustive", space=space, **SMALL)
    outcome = run(plan, settings)
    outcome.files = artifacts.save(outcome, tmp_path_factory.mktemp("optimize-out"), settings, optimize_html)
    return outcome


def by_label(result, label):
    return next(o for o in result.outcomes if o.candidate.label == label)


def test_every_candidate_has_a_measured_outcome_and_a_reason(result):
    original = by_label(result, "original @ort 2t")
    assert original.ratio is not None and original.fidelity["top1_agreement"] == 1.0
    folded = by_label(result, "fold-normalize @ort 2t")
    assert folded.fidelity["top1_agreement"] >= 0.99 and folded.status == (
        "chosen" if result.chosen.candidate == folded.candidate else "not chosen"
    )
    int8 = by_label(result, "ort-int8-static @ort 2t")
    assert int8.status == "rejected" and int8.reason.startswith("rejected: top-1 agreement")
    assert int8.size_bytes < folded.size_bytes / 3 and int8.ratio_ci is not None
    failed = by_label(result, "ort-fusion @ort 2t")
    assert failed.status == "failed" and "transformer" in failed.reason
    assert result.chosen.status == "chosen" and result.chosen.reason.startswith(("chosen", "the reference"))
    assert result.inputs["evaluation"] == 48 and result.inputs["sources"]["calibration"] >= 1
    assert set(result.true_top1) == {"original", "chosen"}


def test_artifacts_are_a_servable_variant_a_decision_log_and_a_report(result, settings):
    variant = load_variant(Path(result.files["variant"]), settings)
    assert variant.backend == result.chosen.candidate.backend
    assert variant.card.card_path == Path(result.chosen.card_path)
    log = json.loads(Path(result.files["decision_log"]).read_text())
    assert len(log["outcomes"]) == 4 and log["chosen"]["status"] == "chosen"
    page = Path(result.files["report"]).read_text()
    assert "Pareto plot" in page and "rejected: top-1 agreement" in page and "data:image/png;base64," in page


def test_an_impossible_budget_returns_the_original_with_the_reason(settings):
    space = (Candidate((), "ort", TWO), Candidate((Step("ort-int8-static"),), "ort", TWO))
    outcome = run(Plan("efficientnet-lite0", budget=0.0, strategy="exhaustive", space=space, **SMALL), settings)
    assert not outcome.budget_met
    assert outcome.chosen.candidate == space[0]
    assert outcome.chosen.reason == "chosen: no optimized candidate fits the budget"


def test_judging_the_features_output_uses_the_embedding_budget(settings):
    space = (Candidate((), "ort", TWO), Candidate((Step("ort-int8-static"),), "ort", TWO))
    outcome = run(Plan("efficientnet-lite0", output="features", strategy="exhaustive", space=space, **SMALL), settings)
    int8 = by_label(outcome, "ort-int8-static @ort 2t")
    assert set(int8.fidelity) >= {"cosine_mean", "cosine_min"} and "top1_agreement" not in int8.fidelity
    assert int8.status == "chosen" or "cosine" in int8.reason


def test_photo_folders_skip_corrupt_files_and_refuse_too_few(effnet, settings, tmp_path):
    good = all_photos(settings)[:5]
    for path in good:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "truncated.jpg").write_bytes(good[0].read_bytes()[:200])
    (tmp_path / "notes.png").write_bytes(b"not an image at all")
    sets = input_sets(effnet, settings, tmp_path, n_calibration=4, n_evaluation=10)
    assert len(sets.skipped) == 2 and sets.sources == {"calibration": 2, "evaluation": 3}
    assert any(s.startswith("truncated.jpg:") for s in sets.skipped)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "truncated.jpg").write_bytes(good[0].read_bytes()[:200])
    with pytest.raises(DataUnavailable, match="0 usable photos"):
        input_sets(effnet, settings, broken)
    (broken / "truncated.jpg").unlink()
    with pytest.raises(InvalidInput, match="holds no photos"):
        input_sets(effnet, settings, broken)
    with pytest.raises(InvalidInput, match="not found"):
        input_sets(effnet, settings, tmp_path / "missing")


def test_photo_folders_are_for_image_models_only(minilm, settings, tmp_path):
    photo = all_photos(settings)[0]
    (tmp_path / photo.name).write_bytes(photo.read_bytes())
    with pytest.raises(InvalidInput, match=r"takes token ids \(a text file or tensors\); --inputs .* holds photos"):
        input_sets(minilm, settings, tmp_path)


def test_a_folded_variant_serves_photos_with_the_same_answer(effnet, effnet_context, settings, tmp_path):
    """What optimize writes is what serve takes: a uint8-input model behind the image route."""
    from tests.support.http import call, running
    from turboinfer.models.labels import CAT_CLASSES
    from turboinfer.models.variant import Variant, parse_variant, save_variant
    from turboinfer.optimize.passes import make_pass
    from turboinfer.optimize.passes.base import apply_pass
    from turboinfer.serve.config import ServeConfig
    from turboinfer.serve.run import build_server
    from turboinfer.serve.v2.batcher import BatcherConfig
    from turboinfer.serve.v2.repository import ModelServing

    folded = apply_pass(make_pass("fold-normalize"), effnet, effnet_context)
    path = save_variant(Variant(folded, "ort", TWO), tmp_path / "folded.variant.json")
    server = build_server([ModelServing(parse_variant(str(path), settings), BatcherConfig())], ServeConfig())
    photo = next(p for p in all_photos(settings) if p.name == "chelsea.png").read_bytes()
    with running(server) as base:
        status, _, body = call(f"{base}/v1/models/{folded.name}/image", photo, {"Content-Type": "image/png"})
    assert status == 200, body
    assert json.loads(body)["top5"][0]["class"] in CAT_CLASSES


def test_a_p99_target_rejects_candidates_that_break_it(settings):
    space = (Candidate((), "ort", TWO), Candidate((Step("fold-normalize"),), "ort", TWO))
    plan = Plan("efficientnet-lite0", strategy="exhaustive", space=space, p99_target_ms=0.01, **SMALL)
    folded = run(plan, settings).outcomes[-1]
    assert folded.status == "rejected" and folded.reason.startswith("rejected: p99 ")
    assert folded.reason.endswith("> target 0.01 ms") and folded.p99_s >= folded.median_s


def test_failure_messages_keep_the_library_line_and_our_own_words():
    from turboinfer.optimize.run import failure_message

    assert failure_message(RuntimeError("shape inference failed\ntraceback lines")) == (
        "RuntimeError: shape inference failed"
    )
    assert failure_message(ValueError()) == "ValueError: "
    assert failure_message(InvalidInput("bad config for pass 'x'")) == "bad config for pass 'x'"
