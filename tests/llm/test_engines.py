"""The engine registry: docs/llm.md shows its own table, each engine refuses what it cannot run in one line, a model
goes to the first engine that runs it, and optimize's search is every engine's options with the others skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from turboinfer.core.errors import InvalidModel
from turboinfer.llm.card import build_llm
from turboinfer.llm.engines import ENGINES, ORACLE, engine_entry, engine_table
from turboinfer.llm.variant import GeneratorVariant, parse_generator
from turboinfer.optimize.generation import GenPlan, candidates

DOCS = Path(__file__).parents[2] / "docs" / "llm.md"


def test_the_docs_show_the_registrys_own_table():
    assert engine_table() in DOCS.read_text()


def test_an_unknown_engine_names_the_known_ones(settings):
    with pytest.raises(InvalidModel, match=r"unknown engine 'vllm'; choose one of openvino-genai, openvino-ir, llama"):
        parse_generator("smollm2-135m@vllm", settings)


def test_defaults_come_from_the_registry(own_llms, settings):
    assert parse_generator("smollm2-135m", settings).engine == "openvino-genai"
    assert parse_generator(str(own_llms.gguf("gemma3", "q4_0")), settings).engine == "llama.cpp"
    assert parse_generator(str(own_llms.folder("gemma3")), settings).engine == "ort-genai"  # a folder: no GGUF
    ort = parse_generator("smollm2-135m@ort-genai", settings)
    assert (ort.weights, ort.kv_cache) == ("int8", "f32")
    with pytest.raises(InvalidModel, match="prompt lookup runs in openvino-genai, openvino-ir only, not llama.cpp"):
        GeneratorVariant("smollm2-135m", "llama.cpp", kv_cache="f16", prompt_lookup=3).checked()


def test_optimize_searches_every_engine_that_runs_the_model_and_skips_the_rest(own_llms, settings):
    card = build_llm(str(own_llms.gguf("gemma3", "q4_0")), settings)
    tried, skipped = candidates(GenPlan(quick=True), card, threads=2)
    assert {v.engine for v in tried} == {e.name for e in ENGINES if e.name != ORACLE} - {"openvino-genai"}
    assert [(o.variant.engine, o.reason) for o in skipped] == [
        ("openvino-genai", "skipped: openvino-genai does not run gemma3 (it runs llama, qwen2, qwen3)")
    ]
    assert [v.weights for v in tried if v.engine == "llama.cpp"] == ["q4_0"]
    assert engine_entry("llama.cpp").refusal(card) is None
