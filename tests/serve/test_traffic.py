"""Canary and shadow over a real socket: responses stay correct, per-variant latency and agreement are exported."""

from __future__ import annotations

import json

import numpy as np
import pytest
import skimage.data
from PIL import Image

from tests.support.http import call, metric, running
from tests.support.images import encode
from turboinfer.core.errors import InvalidInput
from turboinfer.models.labels import CAT_CLASSES
from turboinfer.models.variant import parse_variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.run import build_server
from turboinfer.serve.split_config import SplitConfig
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import ModelServing
from turboinfer.serve.v2.traffic import agreement


@pytest.fixture(scope="module")
def cat() -> bytes:
    return encode(Image.fromarray(skimage.data.chelsea()), quality=90)


def serve_with(settings, mode: str, share: float = 0.5):
    primary = parse_variant("efficientnet-lite0", settings)
    second = parse_variant("efficientnet-lite0@openvino", settings)
    batching = BatcherConfig(max_batch=2, max_delay_s=0.002)
    split = SplitConfig(mode, share)  # type: ignore[arg-type]
    return build_server([ModelServing(primary, batching, second, split)], ServeConfig(batching))


def test_shadow_mirrors_every_request_and_records_agreement(effnet, settings, cat):
    with running(serve_with(settings, "shadow")) as base:
        for _ in range(6):
            assert call(f"{base}/v1/models/efficientnet-lite0/image", cat)[0] == 200
        # mirrored requests finish after the answers; wait for all six
        for _ in range(200):
            text = call(f"{base}/metrics")[2].decode()
            if metric(text, "turboinfer_shadow_top1_total{") >= 6:
                break
        assert metric(text, 'turboinfer_shadow_top1_total{agree="true",model="efficientnet-lite0"}') == 6
        assert metric(text, 'turboinfer_shadow_cosine_count{model="efficientnet-lite0"}') == 6
        assert metric(text, 'turboinfer_shadow_cosine_bucket{le="0.999",model="efficientnet-lite0"}') == 0
        assert (
            metric(text, 'turboinfer_variant_duration_seconds_count{model="efficientnet-lite0",variant="shadow"}') == 6
        )
        assert (
            metric(text, 'turboinfer_variant_duration_seconds_count{model="efficientnet-lite0",variant="primary"}') == 6
        )


def test_canary_answers_its_share(effnet, settings, cat):
    with running(serve_with(settings, "canary", share=0.5)) as base:
        for _ in range(20):
            status, _, body = call(f"{base}/v1/models/efficientnet-lite0/image", cat)
            assert status == 200 and b'"class"' in body
        text = call(f"{base}/metrics")[2].decode()
    canary = metric(text, 'turboinfer_variant_duration_seconds_count{model="efficientnet-lite0",variant="canary"}')
    primary = metric(text, 'turboinfer_variant_duration_seconds_count{model="efficientnet-lite0",variant="primary"}')
    assert canary + primary == 20 and 3 <= canary <= 17


def test_agreement_measures():
    a = {"logits": np.array([[0.1, 0.9], [0.8, 0.2]])}
    b = {"logits": np.array([[0.2, 0.8], [0.1, 0.9]])}
    top1, cosine = agreement("classify", a, b)
    assert top1 == 0.5 and 0 < cosine < 1
    assert np.isnan(agreement("embed", a, a)[0]) and agreement("embed", a, a)[1] == pytest.approx(1.0)


def test_second_variant_must_take_the_same_inputs(effnet, minilm, settings):
    with pytest.raises(InvalidInput, match="different inputs"):
        primary, text_model = parse_variant("efficientnet-lite0", settings), parse_variant("minilm-l6", settings)
        build_server([ModelServing(primary, BatcherConfig(), text_model, SplitConfig("shadow"))], ServeConfig())


def test_cat_still_answered_correctly_under_shadow(effnet, settings, cat):
    with running(serve_with(settings, "shadow")) as base:
        body = call(f"{base}/v1/models/efficientnet-lite0/image", cat)[2]
    assert json.loads(body)["top5"][0]["class"] in CAT_CLASSES
