"""llama.cpp as an engine (xllamacpp, in-process): the shipped SmolLM2 Q4_1 follows the oracle on its greedy path, many
streams at once answer as one at a time does (up to near-ties its batched kernels round otherwise), every token is
counted (characters over several byte tokens too), stops and cancellation behave, a tiny Gemma 3 GGUF (which
OpenVINO GenAI's reader refuses) decodes exactly as the oracle at f32, and the registry makes it the default engine
for such a file."""

from __future__ import annotations

import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.llm.card import build_llm
from turboinfer.llm.engines import engine_entry
from turboinfer.llm.variant import GeneratorVariant, open_generator, parse_generator
from turboinfer.measure.fidelity import common_prefix, path_agreement
from turboinfer.measure.sentences import real_sentences
from turboinfer.runtime.llm.generate import GenerationRequest, Sampling

PROMPT = "The standard library's documentation says that"


@pytest.fixture(scope="module")
def llama(settings):
    return open_generator(GeneratorVariant("smollm2-135m", "llama.cpp", "q4_1", "f16", threads=2), settings)


@pytest.fixture(scope="module")
def oracle(settings):
    return open_generator(GeneratorVariant("smollm2-135m", "transformers", "fp32", threads=2), settings)


def test_the_shipped_file_follows_the_oracle_on_its_greedy_path(llama, oracle):
    prose = oracle.tokenize(" ".join(real_sentences(30)))[:48]
    assert llama.tokenize(" ".join(real_sentences(30)))[:48] == prose
    request = GenerationRequest(tuple(prose), max_tokens=24, ignore_eos=True)
    result = llama.generate(request)
    assert path_agreement(oracle.teacher_forced(prose + result.tokens), 48, result.tokens) >= 0.8
    assert common_prefix(result.tokens, oracle.generate(request).tokens) >= 4
    assert llama.detokenize(result.tokens) == result.text and len(result.token_times_s) == 24


def test_streams_together_answer_as_one_at_a_time(llama):
    requests = [GenerationRequest(PROMPT + " " * i + word, max_tokens=8 + 4 * i, ignore_eos=True)
                for i, word in enumerate(("files", "a module of the standard library", "it", "Python"))]  # fmt: skip
    alone = [llama.generate(r).tokens for r in requests]
    together = [r.tokens for r in llama.generate_many(requests)]
    assert [len(t) for t in together] == [8, 12, 16, 20]
    # llama.cpp's kernels for a batch of streams round differently from one stream's: a near-tie may flip later on
    assert all(common_prefix(a, b) >= 3 for a, b in zip(alone, together, strict=True))
    assert sum(a == b for a, b in zip(alone, together, strict=True)) >= 2


def test_characters_over_several_byte_tokens_are_counted_token_by_token(llama):
    pieces = []
    result = llama.generate(GenerationRequest("Emoji: 👌🌍🎉 and more emoji:", max_tokens=12, ignore_eos=True),
                            pieces.append)  # fmt: skip
    assert len(result.tokens) == 12 == len(result.token_times_s)
    assert "".join(pieces) == result.text == llama.detokenize(result.tokens)


def test_stop_strings_and_seeds(llama):
    counted = llama.generate(GenerationRequest("Count: 1, 2, 3,", max_tokens=40, stop=(" 7",)))
    assert counted.finish_reason == "stop" and "7" not in counted.text and counted.text.startswith(" 4")
    sampled = GenerationRequest(PROMPT, max_tokens=12, sampling=Sampling(temperature=1.0, seed=2**64 - 1))
    assert llama.generate(sampled).tokens == llama.generate(sampled).tokens


def test_a_cancelled_stream_frees_its_slot_and_the_others_go_on(llama):
    keys = [llama.add(GenerationRequest(PROMPT, max_tokens=200, ignore_eos=True)) for _ in range(2)]
    while not llama.live[keys[0]].tokens:
        llama.step()
    llama.cancel(keys[0])
    done: list[int] = []
    while keys[1] not in done:
        done += llama.step()
    assert keys[0] not in done and len(llama.result(keys[1]).tokens) == 200
    assert llama.live == {} and llama.generate(GenerationRequest(PROMPT, max_tokens=4)).completion_tokens <= 4


def test_bad_requests_are_refused_before_any_work(llama):
    with pytest.raises(InvalidInput, match="the prompt is empty"):
        llama.add(GenerationRequest(""))
    with pytest.raises(InvalidInput, match="exceeds the"):
        llama.add(GenerationRequest(PROMPT, max_tokens=9000))


def test_a_gemma3_gguf_runs_on_llamacpp_by_default_exactly_as_the_oracle(own_llms, settings):
    path = str(own_llms.gguf("gemma3", "f32"))
    variant = parse_generator(path, settings, threads=2)
    assert (variant.engine, variant.weights) == ("llama.cpp", "f32")
    card = build_llm(path, settings)
    assert engine_entry("openvino-genai").refusal(card) and engine_entry("llama.cpp").refusal(card) is None
    request = GenerationRequest(PROMPT, max_tokens=16, ignore_eos=True)
    ours = open_generator(variant, settings).generate(request)
    oracle = open_generator(GeneratorVariant(path, "transformers", "fp32", threads=2), settings)
    assert ours.tokens == oracle.generate(request).tokens
