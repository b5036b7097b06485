"""Property-based fuzzing over a real socket (Hypothesis): whatever a client sends — V2 bodies with any field of
any JSON type, binary bodies of any length, real JPEGs truncated, bit-flipped or with edited headers — the answer
is a 2xx or 4xx with a JSON body, and the server stays live. A longer run: pytest -m slow tests/serve/test_fuzz.py."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.http import call, running
from turboinfer.bench.corpus import INPUT_FIELDS, MISSING, TOP_FIELDS, binary_probe, jpeg_mutation, mutated, v2_body
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import parse_variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.run import build_server
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import ModelServing

MODELS = ("efficientnet-lite0", "minilm-l6")
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)
QUICK = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
LONG = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


@pytest.fixture(scope="module")
def fuzzed(effnet, minilm, settings):
    """A server of an image and a text model, the valid V2 template of each, and real JPEGs."""
    batching = BatcherConfig(max_batch=4, max_delay_s=0.002)
    served = [ModelServing(parse_variant(name, settings), batching) for name in MODELS]
    server = build_server(served, ServeConfig(batching, max_body_bytes=4 * 2**20, body_timeout_s=2.0))
    jpegs = [p.read_bytes() for p in all_photos(settings) if p.suffix.lower() == ".jpg"][:6]
    templates = {card.name: v2_body(card) for card in (effnet, minilm)}
    with running(server) as base:
        yield base, templates, jpegs
        assert call(f"{base}/v2/health/live")[0] == 200


def answered_cleanly(base: str, route: str, model: str, body: bytes, headers: dict[str, str]) -> None:
    url = f"{base}/v2/models/{model}/infer" if route == "infer" else f"{base}/v1/models/{model}/image"
    status, _, raw = call(url, body, headers)
    assert status < 500, (status, raw[:300])
    json.loads(raw)  # every answer, good or bad, is JSON


def check_field(fuzzed, model: str, where: str, value, removed: bool) -> None:
    base, templates, _ = fuzzed
    raw = json.dumps(mutated(templates[model], where, MISSING if removed else value)).encode()
    answered_cleanly(base, "infer", model, raw, {"Content-Type": "application/json"})


def check_binary(fuzzed, model: str, seed: int) -> None:
    base, templates, _ = fuzzed
    probe = binary_probe(model, templates[model], random.Random(seed))
    answered_cleanly(base, "infer", model, probe.body, probe.headers)


def check_jpeg(fuzzed, index: int, seed: int) -> None:
    base, _, jpegs = fuzzed
    raw, _ = jpeg_mutation(jpegs[index % len(jpegs)], random.Random(seed))
    answered_cleanly(base, "image", MODELS[0], raw, {"Content-Type": "image/jpeg"})


def field_paths(model: str) -> list[str]:
    """Every mutable field of a model's template (MiniLM has three inputs, EfficientNet one)."""
    inputs = 3 if model == MODELS[1] else 1
    return [f"inputs.{i}.{f}" for i in range(inputs) for f in INPUT_FIELDS] + list(TOP_FIELDS)


FIELD = st.sampled_from(MODELS).flatmap(lambda model: st.tuples(st.just(model), st.sampled_from(field_paths(model))))


@QUICK
@given(field=FIELD, value=JSON, removed=st.booleans())
def test_any_v2_field_of_any_json_type_is_a_clean_4xx_or_an_answer(fuzzed, field, value, removed):
    check_field(fuzzed, *field, value, removed)


@QUICK
@given(model=st.sampled_from(MODELS), seed=st.integers(0, 2**32))
def test_binary_bodies_of_any_length_are_a_clean_4xx_or_an_answer(fuzzed, model, seed):
    check_binary(fuzzed, model, seed)


@QUICK
@given(index=st.integers(0, 5), seed=st.integers(0, 2**32))
def test_broken_real_jpegs_are_a_clean_4xx_or_an_answer(fuzzed, index, seed):
    check_jpeg(fuzzed, index, seed)


@pytest.mark.slow
@LONG
@given(field=FIELD, value=JSON, removed=st.booleans())
def test_long_v2_fields(fuzzed, field, value, removed):
    check_field(fuzzed, *field, value, removed)


@pytest.mark.slow
@LONG
@given(index=st.integers(0, 5), seed=st.integers(0, 2**32))
def test_long_jpegs(fuzzed, index, seed):
    check_jpeg(fuzzed, index, seed)
