"""Serving a step-wise engine (ONNX Runtime GenAI): streams interleaved a token at a time give what each gives
alone, a cancelled one leaves at once; KV capacity is checked from the arithmetic before anything is allocated."""

from __future__ import annotations

import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.llm.variant import GeneratorVariant, open_generator
from turboinfer.runtime.llm.generate import GenerationRequest
from turboinfer.serve.openai.interleave import Interleaved
from turboinfer.serve.openai.scheduler import SchedulerConfig
from turboinfer.serve.run import llm_serving

PROMPTS = ["1, 2, 3, 4,", "a, b, c, d,", "Monday, Tuesday,"]


@pytest.fixture(scope="module")
def ort(settings):
    return open_generator(GeneratorVariant("smollm2-135m", "ort-genai", "int8", threads=2), settings)


def test_interleaved_streams_match_each_alone_and_a_cancelled_one_leaves(ort):
    requests = [GenerationRequest(p, max_tokens=8) for p in PROMPTS]
    alone = [ort.generate(r).text for r in requests]
    engine = Interleaved(ort)
    pieces: dict[int, list[str]] = {}
    keys = [engine.add(r, pieces.setdefault(i, []).append) for i, r in enumerate(requests)]
    doomed = engine.add(GenerationRequest("Once upon a time", max_tokens=500, ignore_eos=True))
    done: list[int] = []
    engine.step()
    engine.cancel(doomed)
    while len(done) < 3:
        done += engine.step()
    assert sorted(done) == keys and doomed not in engine.live
    results = [engine.result(k) for k in keys]
    assert [r.text for r in results] == alone
    assert ["".join(pieces[i]) for i in range(3)] == alone  # streamed as it went
    assert all(r.finish_reason == "length" and r.completion_tokens == 8 for r in results)


def test_streams_whose_kv_cache_cannot_fit_are_refused_at_start(settings):
    with pytest.raises(InvalidInput, match="need .* GiB of KV cache"):
        llm_serving("smollm2-135m@ort-genai", settings, SchedulerConfig(max_running=100_000))
    with pytest.raises(InvalidInput, match="need .* GiB of KV cache"):
        llm_serving("smollm2-135m", settings, SchedulerConfig(), cache_gb=10_000)
