"""The generation protocol without an engine: text pieces that never split a character or leak a stop string,
seeded sampling, request checks, the decode loop on a toy stream."""

from __future__ import annotations

import numpy as np
import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.runtime.llm.generate import (
    GenerationRequest,
    Sampler,
    Sampling,
    TextAssembler,
    check_request,
    decode,
    kv_bytes_per_token,
)

BYTES = {i: bytes([i]) for i in range(256)}


def utf8(tokens) -> str:
    """A byte-level detokenizer: incomplete UTF-8 at the end decodes to U+FFFD, as real tokenizers do."""
    return b"".join(BYTES[t] for t in tokens).decode("utf-8", errors="replace")


def test_pieces_never_split_a_character():
    text = TextAssembler(utf8, ())
    pieces = [text.add(b) for b in "añ€b".encode()]
    assert pieces == ["a", "", "ñ", "", "", "€", "b"]
    assert text.finish() == "" and text.sent == "añ€b"


def test_a_stop_string_is_held_back_while_it_may_be_arriving_and_never_sent():
    text = TextAssembler(utf8, ("END",))
    pieces = [text.add(b) for b in b"okEN"]
    assert "".join(pieces) == "ok"  # "EN" may start "END"
    assert text.add(ord("D")) == "" and text.stopped and text.sent == "ok"
    other = TextAssembler(utf8, ("END",))
    assert "".join(other.add(b) for b in b"ENx") == "ENx"  # a false start is released


def test_sampling_is_greedy_at_zero_temperature_and_seeded_otherwise():
    logits = np.array([0.0, 2.0, 1.0, 1.9])
    assert Sampler(Sampling())(logits) == 1
    draws = [Sampler(Sampling(temperature=1.0, seed=7))(logits) for _ in range(5)]
    assert len(set(draws)) == 1  # the same seed, the same first draw
    many = Sampler(Sampling(temperature=1.0, seed=1))
    assert set(many(logits) for _ in range(200)) == {0, 1, 2, 3}
    top2 = Sampler(Sampling(temperature=1.0, top_k=2, seed=1))
    assert set(top2(logits) for _ in range(200)) == {1, 3}
    nucleus = Sampler(Sampling(temperature=0.1, top_p=0.5, seed=1))
    assert set(nucleus(logits) for _ in range(50)) == {1}


def test_penalties_lower_the_scores_of_generated_tokens_as_openai_defines_them():
    logits = np.array([0.0, 2.0, 1.0, 1.9])
    assert Sampler(Sampling(presence_penalty=0.5))(logits, [1]) == 3  # 2.0 - 0.5 < 1.9
    assert Sampler(Sampling(frequency_penalty=0.2))(logits, [1]) == 3  # once: 1.8 < 1.9
    assert Sampler(Sampling(frequency_penalty=0.04))(logits, [1, 1]) == 1  # twice: 1.92 > 1.9
    assert Sampler(Sampling(presence_penalty=-1.5))(logits, [2]) == 2  # negative: encouraged
    assert logits[1] == 2.0  # the engine's buffer is untouched


def test_client_values_are_made_safe_for_every_engine():
    assert Sampling.engine_safe(1e-300, 1.0, 0, None).greedy
    assert Sampling.engine_safe(0.8, 1e-300, 0, None).greedy
    assert Sampling.engine_safe(0.8, 0.9, 0, -1).seed == 2**64 - 1
    assert Sampling.engine_safe(0.8, 0.9, 0, 2**64 - 1).seed == 2**64 - 1
    assert not Sampling.engine_safe(0.8, 0.9, 0, 5).greedy


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (GenerationRequest("x", max_tokens=0), "max_tokens must be a positive integer"),
        (GenerationRequest("x", max_tokens=True), "max_tokens must be a positive integer"),
        (GenerationRequest("x", max_tokens=1020), "exceeds the 1024-token context"),
        (GenerationRequest("x", sampling=Sampling(temperature=-1)), "temperature"),
        (GenerationRequest("x", sampling=Sampling(top_p=0)), "top_p must be in"),
        (GenerationRequest("x", sampling=Sampling(top_p=1.5)), "top_p must be in"),
        (GenerationRequest("x", sampling=Sampling(top_k=-2)), "top_k"),
        (GenerationRequest("x", stop=("",)), "non-empty strings"),
        (GenerationRequest("x", stop=("a",) * 17), "up to 16"),
        (GenerationRequest("x", stop=(3,)), "stop must be a string or an array of strings"),  # type: ignore[arg-type]
        (GenerationRequest("x", sampling=Sampling(seed=-1)), "seed must be in 0..2"),
        (GenerationRequest("x", sampling=Sampling(presence_penalty=2.5)), "presence_penalty must be a number in"),
    ],
)
def test_bad_requests_are_named(request_, message):
    with pytest.raises(InvalidInput, match=message):
        check_request(request_, prompt_tokens=10, context=1024)


def test_a_prompt_longer_than_the_context_is_refused():
    with pytest.raises(InvalidInput, match="the prompt is 64 tokens; the context holds 64"):
        check_request(GenerationRequest("x", max_tokens=1), prompt_tokens=64, context=64)


class Counting:
    """A toy engine over bytes: each step's logits favour the previous token + 1 (so 'a' continues 'bcd…')."""

    engine, context, eos = "toy", 64, frozenset({ord("!")})

    def tokenize(self, text):
        return list(text.encode())

    def detokenize(self, tokens):
        return utf8(tokens)

    def start(self, ids):
        class Stream:
            last = ids[-1]

            def logits(self):
                return np.eye(256)[min(self.last + 1, 255)]

            def append(self, token):
                self.last = token

        return Stream()


def test_the_decode_loop_streams_stops_and_counts():
    streamed: list[str] = []
    result = decode(Counting(), Counting().start, GenerationRequest("a", max_tokens=5), streamed.append)
    assert result.text == "bcdef" and "".join(streamed) == "bcdef" and result.finish_reason == "length"
    assert result.prompt_tokens == 1 and result.completion_tokens == 5 and len(result.token_times_s) == 5
    stopped = decode(Counting(), Counting().start, GenerationRequest("a", max_tokens=20, stop=("de",)))
    assert (stopped.text, stopped.finish_reason) == ("bc", "stop")
    eos = decode(Counting(), Counting().start, GenerationRequest(" ", max_tokens=20))
    assert (eos.text, eos.finish_reason) == ("", "stop")  # " " + 1 is "!", the end token


def test_kv_bytes_per_token_of_smollm2():
    assert kv_bytes_per_token(30, 3, 64, 2) == 23040  # 22.5 KiB in FP16
