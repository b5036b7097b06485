"""The Q8_0 GGUF that OpenVINO GenAI serves, written from the shipped Q4_1 file: the same metadata and tensors,
every weight within half a Q8_0 step of the de-quantized original, and the file appears whole or not at all."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from turboinfer.core.errors import InvalidModel
from turboinfer.llm.card import gguf_path, llm_entry
from turboinfer.llm.gguf_convert import requantize_gguf


@pytest.fixture(scope="module")
def shipped():
    return gguf_path(llm_entry("smollm2-135m"))


@pytest.fixture(scope="module")
def written(shipped, tmp_path_factory):
    target = tmp_path_factory.mktemp("q8") / "model.q8_0.gguf"
    requantize_gguf(shipped, target)
    return target


def test_metadata_and_tensors_carry_over(shipped, written):
    source, copy = gguf.GGUFReader(str(shipped)), gguf.GGUFReader(str(written))
    for name, item in source.fields.items():
        if not name.startswith("GGUF.") and name != "general.file_type":
            assert copy.fields[name].contents() == item.contents(), name
    assert copy.fields["general.file_type"].contents() == gguf.LlamaFileType.MOSTLY_Q8_0  # what OpenVINO reads
    assert [(t.name, list(t.shape)) for t in copy.tensors] == [(t.name, list(t.shape)) for t in source.tensors]
    kinds = {t.tensor_type.name for t in copy.tensors if len(t.shape) > 1}
    assert kinds == {"Q8_0"} and not list(written.parent.glob(".*partial"))


def test_every_weight_is_within_half_a_q8_0_step(shipped, written):
    source = {t.name: t for t in gguf.GGUFReader(str(shipped)).tensors}
    for tensor in gguf.GGUFReader(str(written)).tensors[:12]:
        original = gguf.quants.dequantize(source[tensor.name].data, source[tensor.name].tensor_type)
        copy = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        if original.ndim < 2:
            assert np.array_equal(copy, original), tensor.name
            continue
        groups = original.reshape(-1, 32)
        step = np.abs(groups).max(axis=1, keepdims=True) / 127
        error = np.abs(copy.reshape(-1, 32) - groups)
        assert (error <= step * (0.5 + 127 * 2**-11) + 1e-7).all(), tensor.name  # the scale is rounded to FP16


def test_only_known_layouts_are_written(shipped, tmp_path):
    with pytest.raises(InvalidModel, match="writes q8_0, q4_0, q4_1, q5_0, q5_1, f16, bf16, not 'q2_k'"):
        requantize_gguf(shipped, tmp_path / "x.gguf", "q2_k")
