"""The decoder comparison on real photos (short time caps: checks outcomes, not speed)."""

import json

import pytest

from turboinfer.bench.decode import (
    BASELINE,
    compare_decoders,
    default_cases,
    fidelity_set,
    folder_cases,
    jpeg_case,
    top1_agreement,
)
from turboinfer.core.errors import DataUnavailable
from turboinfer.core.types import ImagePreprocess
from turboinfer.models.decoders import choose_decoder
from turboinfer.models.photos import labelled_imagenet_photos
from turboinfer.runtime.session import open_session


def test_default_cases_span_the_sizes(settings):
    cases = default_cases(settings)
    assert [c.label for c in cases] == ["0.3 MP", "4.1 MP", "12.5 MP"]
    assert cases[0].megapixels == pytest.approx(0.31, abs=0.01)
    assert cases[2].megapixels >= 12
    assert "resized" in cases[2].origin


def test_every_method_is_measured_against_the_baseline():
    path = labelled_imagenet_photos()[0][0]
    results = compare_decoders([jpeg_case("small", path)], ImagePreprocess(), threads=(1, 2), seconds=0.3)
    by_method = {r.method: r for r in results}
    assert set(by_method) == {BASELINE, "simplejpeg", "opencv", "pillow-draft", "torchvision"}
    assert by_method[BASELINE].speedup is None
    assert set(by_method[BASELINE].images_per_s) == {1}
    fast = by_method["simplejpeg"]
    assert fast.speedup is not None and fast.speedup.ci[0] <= fast.speedup.ratio <= fast.speedup.ci[1]
    assert set(fast.images_per_s) == {1, 2} and all(v > 0 for v in fast.images_per_s.values())
    assert fast.latency.n >= 6
    json.dumps([r.to_dict() for r in results])


def test_folder_cases(tmp_path):
    with pytest.raises(DataUnavailable, match="no JPEG"):
        folder_cases(tmp_path)
    path = labelled_imagenet_photos()[0][0]
    (tmp_path / "a.jpg").write_bytes(path.read_bytes())
    (tmp_path / "notes.txt").write_text("ignored")
    cases = folder_cases(tmp_path)
    assert len(cases) == 1 and cases[0].label.startswith("a.jpg")


@pytest.mark.parametrize(
    "decoder",
    [
        "simplejpeg",
        pytest.param("opencv", marks=pytest.mark.slow),
        pytest.param("pillow-draft", marks=pytest.mark.slow),
        pytest.param("torchvision", marks=pytest.mark.slow),
    ],
)
def test_top1_agreement_with_the_reference_on_real_photos(decoder, effnet, settings, record_property):
    """DCT downscaling changes pixels; it must not change EfficientNet-Lite0's answers (≥ 99% of 300, decisive
    inputs and all)."""
    items = fidelity_set(settings)
    assert len(items) == 300
    session = open_session(effnet.onnx_path)
    agreement = top1_agreement(session, effnet.preprocess, items, choose_decoder(decoder))
    record_property("top1_agreement", agreement["top1_agreement"])
    assert agreement["decisive_agreement"] >= 0.99 and agreement["top1_agreement"] >= 0.99
