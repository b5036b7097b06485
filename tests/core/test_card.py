from pathlib import Path

import pytest

from turboinfer.core.card import ModelCard, Provenance, card_path_for, load_card, save_card
from turboinfer.core.errors import InvalidModel, ModelNotFound
from turboinfer.core.types import ImagePreprocess, TensorSpec, TextPreprocess


def make_card(tmp_path: Path, preprocess=None) -> ModelCard:
    onnx_path = tmp_path / "m.onnx"
    onnx_path.write_bytes(b"not really onnx, the card does not parse it")
    return ModelCard(
        name="m",
        task="classify",
        onnx_path=onnx_path,
        inputs=(TensorSpec("image", ("batch", 3, 224, 224), "float32"),),
        outputs=(TensorSpec("logits", ("batch", 1000), "float32"),),
        provenance=Provenance(source="test", license="MIT", timing_only=True),
        preprocess=preprocess,
        extra={"opset": 17},
    ).with_hash()


@pytest.mark.parametrize("preprocess", [None, ImagePreprocess(mean=(0.5, 0.5, 0.5)), TextPreprocess()])
def test_card_round_trips_through_its_json_sidecar(tmp_path, preprocess):
    card = make_card(tmp_path, preprocess)
    path = save_card(card)
    assert path == tmp_path / "m.card.json" == card_path_for(card.onnx_path)
    assert load_card(path) == card
    assert len(card.onnx_sha256) == 64


def test_missing_card_names_the_path(tmp_path):
    with pytest.raises(ModelNotFound, match="nope.card.json"):
        load_card(tmp_path / "nope.card.json")


def test_corrupt_card_is_invalid_model(tmp_path):
    path = tmp_path / "bad.card.json"
    path.write_text("{not json")
    with pytest.raises(InvalidModel, match="not valid JSON"):
        load_card(path)


def test_card_with_missing_field_is_invalid_model(tmp_path):
    path = save_card(make_card(tmp_path))
    path.write_text(path.read_text().replace('"task"', '"tusk"'))
    with pytest.raises(InvalidModel, match="task"):
        load_card(path)


def test_card_pointing_to_missing_onnx_is_model_not_found(tmp_path):
    card = make_card(tmp_path)
    path = save_card(card)
    card.onnx_path.unlink()
    with pytest.raises(ModelNotFound, match="missing ONNX"):
        load_card(path)
