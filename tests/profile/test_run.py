"""`profile` on real zoo models and real inputs (short time caps)."""

import json

import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.models.photos import labelled_imagenet_photos
from turboinfer.profile.run import ProfileRequest, profile_model


def test_image_model_profile_on_a_folder_with_a_corrupt_photo(effnet, settings, tmp_path):
    for path, _ in labelled_imagenet_photos()[:3]:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    (tmp_path / "notes.txt").write_text("not an image, not even looked at")
    report = profile_model(effnet, ProfileRequest(inputs=tmp_path, seconds=1.0), settings)
    stages = [s.name for s in report.pipeline.stages]
    assert stages == ["read", "decode", "resize+crop", "normalize", "model", "postprocess"]
    assert report.pipeline.inputs_used == 3
    assert len(report.pipeline.inputs_skipped) == 1 and "broken.jpg" in report.pipeline.inputs_skipped[0]
    assert report.model_latency.first_call_penalty is not None
    data = report.to_dict()
    assert data["environment"]["packages"]["onnxruntime"]
    json.dumps(data)


def test_text_model_profile(minilm, settings):
    report = profile_model(minilm, ProfileRequest(seconds=0.5), settings)
    assert [s.name for s in report.pipeline.stages] == ["tokenize", "model", "postprocess"]
    assert report.pipeline.inputs_used == 200


def test_openvino_backend_and_no_pipeline(effnet, settings):
    report = profile_model(effnet, ProfileRequest(backend="openvino", pipeline="none", seconds=0.5), settings)
    assert report.pipeline is None
    assert report.backend["precision"] == "f32"


def test_wrong_pipeline_kind(effnet, settings):
    with pytest.raises(InvalidInput, match="takes image input"):
        profile_model(effnet, ProfileRequest(pipeline="text"), settings)
