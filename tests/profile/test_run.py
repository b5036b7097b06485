"""`profile` on real zoo models and real inputs, in quick mode: every section present, the right rules fire."""

import json

import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.models.catalog import build_zoo_model
from turboinfer.models.photos import labelled_imagenet_photos
from turboinfer.profile.run import ProfileRequest, profile_model
from turboinfer.report.html import profile_html


@pytest.fixture(scope="module")
def effnet_report(effnet, settings):
    return profile_model(effnet, ProfileRequest.quick(), settings)


def test_efficientnet_report_has_every_section(effnet_report):
    report = effnet_report
    assert [s.name for s in report.pipeline.stages] == [
        "read",
        "decode",
        "resize+crop",
        "normalize",
        "model",
        "postprocess",
    ]
    assert report.model_latency.first_call_penalty is not None
    assert report.operators.by_type[0].op_type == "Conv"
    assert report.whole_model.flops == pytest.approx(0.8e9, rel=0.06)
    assert {s.parameter for s in report.sweeps} == {"batch", "threads"}
    data = json.loads(json.dumps(report.to_dict()))
    assert data["roofline"]["ridge_flop_per_byte"] > 0
    assert data["model_samples_s"]
    assert data["environment"]["packages"]["onnxruntime"]


def test_efficientnet_rules_fire_on_real_measurements(effnet_report):
    rules = {r.rule for r in effnet_report.recommendations}
    shares = {s.name: s.share for s in effnet_report.pipeline.stages}
    assert ("slow-decode" in rules) == (shares["decode"] >= 0.25)
    assert rules & {"int8", "int8-limited"}  # an FP32 model on a CPU: INT8 is always assessed


def test_minilm_sequence_sweep_and_attention(minilm, settings):
    report = profile_model(minilm, ProfileRequest.quick(sequences=(32, 128, 256)), settings)
    assert [s.name for s in report.pipeline.stages] == ["tokenize", "model", "postprocess"]
    sequence = report.sweep("sequence")
    assert [p.value for p in sequence.points] == [32, 128, 256]
    shares = [p.extra["attention_share"] for p in sequence.points]
    # measured, not modelled: a fused attention kernel keeps its share nearly flat, so only its range is asserted
    assert all(0 < share < 1 for share in shares)
    assert sequence.points[-1].median_s > sequence.points[0].median_s
    assert {r.rule for r in report.recommendations} & {"int8", "int8-limited", "attention"}


def test_resnet152_timing_only_model_profiles(settings):
    card = build_zoo_model("resnet152", settings)
    report = profile_model(card, ProfileRequest.quick(pipeline="none", batches=(1,), seconds=0.3), settings)
    assert report.pipeline is None
    assert report.whole_model.flops == pytest.approx(23.1e9, rel=0.02)  # 11.5 G multiply-adds
    assert report.whole_model.bound in ("compute", "memory")
    assert report.recommendations


def test_folder_with_a_corrupt_photo_is_skipped_and_counted(effnet, settings, tmp_path):
    for path, _ in labelled_imagenet_photos()[:3]:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    (tmp_path / "notes.txt").write_text("not an image, not even looked at")
    request = ProfileRequest.quick(inputs=tmp_path, batches=(1,))
    report = profile_model(effnet, request, settings)
    assert report.pipeline.inputs_used == 3
    assert len(report.pipeline.inputs_skipped) == 1 and "broken.jpg" in report.pipeline.inputs_skipped[0]


def test_openvino_backend(effnet, settings):
    report = profile_model(effnet, ProfileRequest.quick(backend="openvino", pipeline="none", batches=(1,)), settings)
    assert report.backend["precision"] == "f32"
    assert report.operators.nodes


def test_wrong_pipeline_kind(effnet, settings):
    with pytest.raises(InvalidInput, match="takes image input"):
        profile_model(effnet, ProfileRequest(pipeline="text"), settings)


def test_html_report_is_self_contained(effnet_report):
    page = profile_html(effnet_report)
    assert page.startswith("<!doctype html>")
    for section in ("Recommendations", "One request, stage by stage", "Operators and roofline", "Scaling"):
        assert section in page
    assert page.count("data:image/png;base64,") >= 5  # stages, histogram, roofline, batch, threads
    assert "http://" not in page and "https://" not in page and "<script" not in page


def test_model_without_input_shapes_is_a_clear_error(settings, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    from turboinfer.core.errors import InvalidModel
    from turboinfer.models.catalog import resolve_model

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "shapeless",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    path = tmp_path / "shapeless.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    card = resolve_model(str(path), settings)
    with pytest.raises(InvalidModel, match="has no shape in the graph"):
        profile_model(card, ProfileRequest.quick(), settings)


def test_new_shape_penalty_is_reported(effnet_report):
    assert effnet_report.new_shape_penalty() is not None
    assert effnet_report.to_dict()["model_latency"]["new_shape_penalty"] >= 0
