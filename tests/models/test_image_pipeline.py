"""The fast pipeline: same answers as the reference on real photos, uint8 folding, the decode pool."""

import numpy as np
import pytest

from turboinfer.core.errors import InvalidInput
from turboinfer.core.types import ImagePreprocess
from turboinfer.models.decoders import available_decoders
from turboinfer.models.image_pipeline import DecodePool, ImagePipeline, NormalizeTable, crop_box
from turboinfer.models.photos import all_photos
from turboinfer.models.preprocess import normalize


def test_crop_box_matches_the_reference_geometry():
    spec = ImagePreprocess()
    # 640x480 → reference resize to 341x256, crop at (58, 16): the box in original pixels
    left, top, right, bottom = crop_box(640, 480, (640, 480), spec)
    assert bottom - top == pytest.approx(224 * 480 / 256)
    assert (left, top) == pytest.approx((58 * 640 / 341, 16 * 480 / 256))
    assert right - left == pytest.approx(224 * 640 / 341)
    # the same box on a half-scale decode is half as large
    assert crop_box(320, 240, (640, 480), spec)[2] == pytest.approx(right / 2)


def test_lookup_table_normalize_equals_the_arithmetic():
    spec = ImagePreprocess()
    pixels = np.random.default_rng(0).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    out = np.empty((3, 224, 224), np.float32)
    NormalizeTable.for_spec(spec).write(pixels, out, "NCHW")
    np.testing.assert_allclose(out, normalize(pixels, spec), atol=1e-5)


def test_uint8_nhwc_pipeline_skips_normalization(settings):
    spec = ImagePreprocess(layout="NHWC", input_dtype="uint8")
    out = ImagePipeline(spec)(all_photos(settings)[0].read_bytes())
    assert out.shape == (224, 224, 3) and out.dtype == np.uint8


@pytest.mark.parametrize("decoder", available_decoders(), ids=lambda d: d.name)
def test_warm_up_runs_a_real_jpeg_through_every_decoder(decoder):
    out = ImagePipeline(ImagePreprocess(), decoder).warm_up()
    assert out.shape == (3, 224, 224) and out.dtype == np.float32 and out.std() > 0.1  # a gradient, decoded


def test_pool_isolates_bad_items_and_matches_single_calls(settings):
    pipeline = ImagePipeline(ImagePreprocess())
    items = [p.read_bytes() for p in all_photos(settings)[:6]]
    items.insert(2, b"not an image at all")
    with DecodePool(pipeline, threads=2) as pool:
        result = pool.batch(items)
    assert list(result.failed) == [2] and "not a decodable image" in result.failed[2]
    assert not result.tensor[2].any()
    for i in (0, 1, 3, 6):
        np.testing.assert_array_equal(result.tensor[i], pipeline(items[i]))


def test_pool_map_streams_batches_in_order_under_concurrency(settings):
    pipeline = ImagePipeline(ImagePreprocess())
    photos = [p.read_bytes() for p in all_photos(settings)[:10]]
    stream = photos * 3  # 30 items
    pulled = []

    def produce():
        for item in stream:
            pulled.append(item)
            yield item

    with DecodePool(pipeline, threads=2) as pool:
        batches = pool.map(produce(), batch_size=8)
        first = next(batches)
        assert len(pulled) <= 8 * 4  # back-pressure: at most a few batches ahead of the consumer
        batches = [first, *batches]
    assert [len(b.tensor) for b in batches] == [8, 8, 8, 6]
    stacked = np.concatenate([b.tensor for b in batches])
    for i in (0, 9, 10, 29):
        np.testing.assert_array_equal(stacked[i], pipeline(stream[i]))
    with pytest.raises(InvalidInput, match="threads"):
        DecodePool(pipeline, threads=0)
