"""The openvino-ir engine: a tiny Gemma 3 (a family OpenVINO GenAI's GGUF reader refuses) exported by optimum-intel
in its own environment runs in OpenVINO GenAI's continuous batching, at fp32 exactly as the oracle, many prompts of
mixed lengths at once as one at a time, prompt lookup as plain decoding; a GGUF's chat template reaches the IR's
tokenizer; an export that cannot run leaves nothing in the cache."""

from __future__ import annotations

import pytest

from turboinfer.core.errors import InvalidModel
from turboinfer.llm import ir_export
from turboinfer.llm.card import build_llm
from turboinfer.llm.variant import GeneratorVariant, open_generator
from turboinfer.runtime.llm.generate import GenerationRequest

PROMPTS = ("The standard library's documentation says that", "Files", "A module of the standard library reads")


def greedy(generator, prompt: str = PROMPTS[0], tokens: int = 16) -> list[int]:
    return generator.generate(GenerationRequest(prompt, max_tokens=tokens, ignore_eos=True)).tokens


@pytest.fixture(scope="module")
def gemma(own_llms):
    return str(own_llms.gguf("gemma3", "f32"))


@pytest.fixture(scope="module")
def exact(gemma, settings):
    """fp32 weights and f32 KV cache and numerics: what equals the oracle."""
    return open_generator(GeneratorVariant(gemma, "openvino-ir", "fp32", "f32", threads=2), settings)


def test_fp32_decodes_exactly_as_the_oracle(gemma, exact, settings):
    oracle = open_generator(GeneratorVariant(gemma, "transformers", "fp32", threads=2), settings)
    assert exact.tokenize(PROMPTS[0]) == oracle.tokenize(PROMPTS[0])
    assert greedy(exact) == greedy(oracle)


def test_mixed_length_prompts_at_once_answer_as_one_at_a_time(exact):
    requests = [GenerationRequest(p, max_tokens=8 + 4 * i, ignore_eos=True) for i, p in enumerate(PROMPTS)]
    alone = [exact.generate(r).tokens for r in requests]
    assert [r.tokens for r in exact.generate_many(requests)] == alone


def test_prompt_lookup_leaves_greedy_output_unchanged(gemma, exact, settings):
    looked = open_generator(GeneratorVariant(gemma, "openvino-ir", "fp32", "f32", threads=2, prompt_lookup=3), settings)
    copy = "Repeat: " + PROMPTS[2] + " " + PROMPTS[0] + ". Repeat: " + PROMPTS[2]
    assert greedy(looked, copy, 24) == greedy(exact, copy, 24)


def test_a_ggufs_chat_template_reaches_the_ir(exact):
    rendered = exact.chat([{"role": "user", "content": "Hi."}])
    assert "Hi." in rendered and rendered.startswith("<|im_start|>")  # the tests' SmolLM2 tokenizer's template


def test_an_export_that_cannot_run_leaves_nothing_behind(own_llms, settings, monkeypatch, tmp_path):
    card = build_llm(str(own_llms.gguf("gemma3", "q4_0")), settings)
    monkeypatch.setattr(ir_export, "optimum_cli", lambda: tmp_path / "missing" / "bin" / "optimum-cli")
    with pytest.raises(InvalidModel, match="optimum-intel is not installed at .*missing"):
        open_generator(GeneratorVariant(str(card.source), "openvino-ir", "int8", "u8"), settings)
    monkeypatch.undo()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "gemma3_text"}')
    with pytest.raises(InvalidModel, match="optimum-intel cannot export broken as OpenVINO IR: "):
        ir_export.export_ir(broken, tmp_path / "out" / "ir", "int8")
    assert not list((tmp_path / "out").iterdir()) and not any(card.folder.glob("*openvino-ir*"))


@pytest.mark.slow
def test_data_aware_int4_writes_int4_weights_calibrated_on_prose(gemma, settings):
    generator = open_generator(GeneratorVariant(gemma, "openvino-ir", "int4-awq", "u8", threads=2), settings)
    assert len(greedy(generator, tokens=8)) == 8
    folder = build_llm(gemma, settings).folder / "openvino-ir-int4-awq"
    assert 'element_type="u4"' in (folder / "openvino_model.xml").read_text()
