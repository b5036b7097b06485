"""--inputs in every form a user keeps them, and each bad form as a one-line error or a counted skip."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.support.images import image_folder
from turboinfer.core.errors import InvalidInput
from turboinfer.models.cards import card_from_onnx
from turboinfer.models.datasets import read_inputs
from turboinfer.models.photos import labelled_imagenet_photos


def test_a_folder_of_photos_and_an_image_folder_with_labels(effnet, tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    for path, _ in labelled_imagenet_photos()[:5]:
        shutil.copy(path, flat / path.name)
    assert read_inputs(flat, effnet).form == "photos" and read_inputs(flat, effnet).count == 5
    tree = read_inputs(image_folder(tmp_path / "tree"), effnet)
    expected = sorted(labelled_imagenet_photos(), key=lambda pair: (pair[1], pair[0].name))
    assert tree.form == "imagefolder" and tree.count == 20
    assert sorted(zip(tree.labels, [p.name for p in tree.photos], strict=True)) == [(c, p.name) for p, c in expected]
    by_index = read_inputs(image_folder(tmp_path / "indexed", by_index=True), effnet)
    assert sorted(by_index.labels) == sorted(tree.labels)


def test_label_maps_unknown_and_empty_class_folders_and_labels_outside_the_outputs(effnet, tmp_path):
    root = tmp_path / "mine"
    (root / "cats").mkdir(parents=True)
    (root / "dogs").mkdir()
    (root / "empty").mkdir()
    photo = labelled_imagenet_photos()[0][0]
    shutil.copy(photo, root / "cats" / "a.jpg")
    shutil.copy(photo, root / "dogs" / "b.jpg")
    with pytest.raises(InvalidInput, match=r"class folders \['cats', 'dogs', 'empty'\] are not ImageNet class names"):
        read_inputs(root, effnet)
    (root / "labels.txt").write_text("cats 281\ndogs 207\nempty 1\n")
    found = read_inputs(root, effnet)
    assert sorted(found.labels) == [207, 281] and found.skipped == ("empty/: empty class folder",)
    (root / "labels.txt").write_text("cats 1281\ndogs 207\nempty 1\n")
    with pytest.raises(InvalidInput, match=r"class indices \[1281\] are outside the model's 1000 outputs"):
        read_inputs(root, effnet)
    other = tmp_path / "map.txt"
    other.write_text("cats\ndogs\nempty\n")  # one name per line: the line number is the index
    assert sorted(read_inputs(root, effnet, other).labels) == [0, 1]


def test_a_text_file_skips_and_counts_empty_lines(user_models, tmp_path):
    card = card_from_onnx(user_models["text"])
    lines = tmp_path / "lines.txt"
    lines.write_text("The first input.\n\n   \nThe second one.\n")
    found = read_inputs(lines, card)
    assert found.texts == ("The first input.", "The second one.") and len(found.skipped) == 2
    lines.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(InvalidInput, match="not UTF-8"):
        read_inputs(lines, card)


def test_tensors_from_npz_and_npy_are_checked_against_the_inputs(user_models, tmp_path):
    card = card_from_onnx(user_models["tensor"])
    np.savez(tmp_path / "good.npz", x=np.ones((7, 16), np.float64))
    found = read_inputs(tmp_path / "good.npz", card)
    assert found.form == "tensors" and found.count == 7 and found.tensors["x"].dtype == np.float32
    for name, arrays, message in (
        ("wrong-name.npz", {"z": np.ones((2, 16))}, r"tensors \['z'\] do not match the model's inputs \['x'\]"),
        ("wrong-shape.npz", {"x": np.ones((2, 15))}, "dim 1 must be 16"),
        ("wrong-dtype.npz", {"x": np.array([["a"] * 16])}, "the input takes float32"),
    ):
        np.savez(tmp_path / name, **arrays)
        with pytest.raises(InvalidInput, match=message):
            read_inputs(tmp_path / name, card)
    folder = tmp_path / "npy"
    folder.mkdir()
    np.save(folder / "x.npy", np.zeros((3, 16), np.float32))
    assert read_inputs(folder, card).count == 3
    text = card_from_onnx(user_models["text"])
    np.save(tmp_path / "ids.npy", np.full((2, 8), 1.5))
    with pytest.raises(InvalidInput, match="'ids' is float64, the input takes int64"):
        read_inputs(tmp_path / "ids.npy", text)


def test_missing_and_empty_inputs_are_one_line_errors(effnet, tmp_path):
    with pytest.raises(InvalidInput, match="inputs not found"):
        read_inputs(tmp_path / "nope", effnet)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInput, match="holds no photos, class folders, .npy files or text"):
        read_inputs(tmp_path / "empty", effnet)
