"""Input-kind inference from a bare graph (image, token ids, generic tensors), said out loud; cards checked against
their inputs; the table sizes of index inputs."""

from __future__ import annotations

import pytest

from turboinfer.core.errors import InvalidModel
from turboinfer.core.types import ImagePreprocess, TensorSpec, TextPreprocess
from turboinfer.models.cards import card_from_onnx
from turboinfer.models.inputs import check_preprocess, image_layout, index_limits, infer_inputs, load_graph, token_roles

LOGITS = (TensorSpec("logits", ("batch", 10), "float32"),)


@pytest.mark.parametrize(
    ("shape", "dtype", "layout"),
    [(("batch", 3, 224, 224), "float32", "NCHW"), (("batch", 299, 299, 3), "uint8", "NHWC"),
     (("batch", 3, "h", "w"), "float32", "NCHW"), (("batch", 1, 28, 28), "float32", None),
     (("batch", 3, 224, 320), "float32", None), (("batch", 3, 224, 224), "int64", None),
     (("batch", 3), "float32", None)],
)  # fmt: skip
def test_image_inputs_are_three_channel_squares_in_either_layout(shape, dtype, layout):
    assert image_layout(TensorSpec("x", shape, dtype)) == layout


def test_token_roles_come_from_the_names_of_integer_sequence_inputs():
    def specs(*names: str, dtype: str = "int64") -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(n, ("batch", "sequence"), dtype) for n in names)

    assert token_roles(specs("input_ids", "attention_mask", "token_type_ids")) == (
        "input_ids", "attention_mask", "token_type_ids")  # fmt: skip
    assert token_roles(specs("ids", dtype="int32")) == ("ids", "", "")
    assert token_roles(specs("a", "b")) is None  # two candidates for the ids
    assert token_roles(specs("ids", dtype="float32")) is None
    assert (
        token_roles((TensorSpec("ids", ("batch", "s"), "int64"), TensorSpec("mask", ("batch", "t"), "int64"))) is None
    )


def test_each_user_model_kind_is_inferred_and_said_in_one_line_per_input(user_models, tmp_path):
    image = card_from_onnx(user_models["image"])
    assert isinstance(image.preprocess, ImagePreprocess) and image.task == "classify"
    assert image.extra["inferred"][0] == ("input `pixel_values` [N,3,224,224] float32 → image, ImageNet mean/std, "
                                          "resize 256 / crop 224 (assumed; override with a card)")  # fmt: skip
    text = card_from_onnx(user_models["text"])
    assert isinstance(text.preprocess, TextPreprocess) and text.preprocess.ids == "ids" and not text.preprocess.mask
    assert "token ids (vocabulary 30522)" in text.extra["inferred"][0] and "no tokenizer" in text.extra["inferred"][0]
    tensor = card_from_onnx(user_models["tensor"])
    assert tensor.preprocess is None and "generic tensor" in tensor.extra["inferred"][0]
    assert index_limits(load_graph(user_models["text"])) == {"ids": 30522}


def test_a_tokenizer_beside_the_model_is_found(minilm, tmp_path):
    found = infer_inputs(minilm.inputs, minilm.outputs, minilm.folder, {})
    assert isinstance(found.preprocess, TextPreprocess) and found.preprocess.tokenizer.endswith("tokenizer.json")
    assert found.task == "embed" and found.kind == "tokens"
    alone = infer_inputs(minilm.inputs, minilm.outputs, tmp_path, {})
    assert isinstance(alone.preprocess, TextPreprocess) and alone.preprocess.tokenizer == ""


def test_a_card_whose_preprocessing_does_not_fit_its_inputs_is_refused(effnet, minilm):
    from dataclasses import replace

    grey = replace(effnet, inputs=(TensorSpec("image", ("batch", 1, 224, 224), "float32"),))
    with pytest.raises(InvalidModel, match="makes 3-channel NCHW float32 images, but the model takes `image` "
                                           r"\[N,1,224,224\] float32"):  # fmt: skip
        check_preprocess(grey)
    renamed = replace(minilm, preprocess=replace(minilm.preprocess, mask="mask"))
    with pytest.raises(InvalidModel, match=r"names inputs \['mask'\] the model lacks"):
        check_preprocess(renamed)
    check_preprocess(effnet)
    check_preprocess(minilm)
