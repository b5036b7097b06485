"""Every decoder against the reference, on real photos and on each kind of bad input."""

import io

import numpy as np
import pytest
from PIL import Image

from tests.support.images import encode, png_claiming_size
from turboinfer.core.errors import InvalidInput
from turboinfer.core.types import ImagePreprocess
from turboinfer.models.decoders import (
    OpenCvReduced,
    PillowDraft,
    PillowFull,
    SimpleJpeg,
    TorchvisionJpeg,
    apply_orientation,
    available_decoders,
    choose_decoder,
    scale_for,
)
from turboinfer.models.image_pipeline import ImagePipeline
from turboinfer.models.photos import all_photos
from turboinfer.models.preprocess import image_tensor

FULL = 1 << 30
"""min_side that no image reaches: decode at full resolution."""
DECODERS = [SimpleJpeg(), OpenCvReduced(), PillowDraft(), TorchvisionJpeg(), PillowFull()]
SPEC = ImagePreprocess(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))


def asymmetric_photo() -> Image.Image:
    """A 120x60 image whose quadrants differ, so any wrong rotation or flip shows."""
    pixels = np.zeros((60, 120, 3), np.uint8)
    pixels[:30, :60] = (250, 0, 0)
    pixels[:30, 60:] = (0, 250, 0)
    pixels[30:, :60] = (0, 0, 250)
    pixels[30:, 60:] = (250, 250, 250)
    return Image.fromarray(pixels)


def test_auto_picks_the_fastest_available():
    names = ["simplejpeg", "opencv", "pillow-draft", "torchvision", "pillow-full"]
    assert [d.name for d in available_decoders()] == names  # no CUDA device here, so no nvjpeg
    assert choose_decoder().name == "simplejpeg"
    with pytest.raises(InvalidInput, match="not available"):
        choose_decoder("nvjpeg-on-a-cpu")


def test_dct_scale_choice():
    assert scale_for(4000, 3000, 512) == 4
    assert scale_for(4000, 3000, 256) == 8
    assert scale_for(640, 480, 256) == 1
    assert scale_for(1680, 1050, 512) == 2


@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: d.name)
def test_fast_pipeline_matches_the_reference_on_real_photos(decoder, settings):
    pipeline = ImagePipeline(SPEC, decoder)
    for path in all_photos(settings)[::6]:
        data = path.read_bytes()
        reference = image_tensor(data, SPEC)
        ours = pipeline(data)
        assert ours.shape == reference.shape == (3, 224, 224)
        # normalized units (pixel/127.5): mean error under 2.5 grey levels, DCT downscaling included
        assert np.abs(ours - reference).mean() < 0.02, path.name


@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: d.name)
@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_matches_pillow(decoder, orientation):
    exif = Image.Exif()
    exif[0x0112] = orientation
    data = encode(asymmetric_photo(), quality=95, exif=exif)
    expected = PillowFull().decode(data, FULL).pixels
    decoded = decoder.decode(data, FULL)
    assert decoded.pixels.shape == expected.shape
    assert decoded.full_size == (expected.shape[1], expected.shape[0])
    assert np.abs(decoded.pixels.astype(int) - expected).mean() < 4


def test_apply_orientation_inverts_pillow_transpose():
    pixels = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    assert apply_orientation(pixels, 1) is pixels
    assert apply_orientation(pixels, 6).shape == (4, 2, 3)


@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: d.name)
@pytest.mark.parametrize(
    ("image", "fmt"),
    [
        (Image.new("L", (64, 48), 90), "JPEG"),
        (Image.new("CMYK", (64, 48), (0, 255, 255, 0)), "JPEG"),
        (Image.new("RGBA", (64, 48), (10, 20, 30, 128)), "PNG"),
        (Image.new("RGB", (64, 48), (10, 20, 30)), "WEBP"),
    ],
    ids=["grey-jpeg", "cmyk-jpeg", "rgba-png", "webp"],
)
def test_colour_modes_and_formats_become_rgb(decoder, image, fmt):
    decoded = decoder.decode(encode(image, fmt), FULL)
    assert decoded.pixels.shape == (48, 64, 3) and decoded.pixels.dtype == np.uint8
    expected = np.asarray(image.convert("RGB"), dtype=int)
    assert np.abs(decoded.pixels.astype(int) - expected).mean() < 8


@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: d.name)
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "0 bytes"),
        (b"GIF89a but nothing else" * 4, "not a decodable image|corrupt"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 64, "not a decodable image|corrupt"),
        (encode(asymmetric_photo())[:300], "not a decodable image|corrupt|truncated"),
        (png_claiming_size(30_000, 30_000), "too large"),
        (encode(Image.new("I;16", (8, 8)), "PNG"), "16/32-bit"),
    ],
    ids=["empty", "garbage", "jpeg-header-only", "truncated", "bomb", "png16"],
)
def test_bad_input_raises_invalid_input(decoder, data, message):
    with pytest.raises(InvalidInput, match=message):
        decoder.decode(data, 256)


def test_large_jpeg_is_decoded_at_reduced_scale():
    big = Image.new("RGB", (4000, 3000), (120, 130, 140))
    data = encode(big, quality=80)
    decoded = SimpleJpeg().decode(data, 512)
    assert decoded.pixels.shape == (750, 1000, 3)
    assert decoded.full_size == (4000, 3000)
    out = io.BytesIO(data)
    assert Image.open(out).size == (4000, 3000)


@pytest.mark.gpu
def test_nvjpeg_leads_and_matches_the_cpu_decode(settings):
    """On a CUDA machine only (not run here: no GPU): nvJPEG is chosen and decodes like libjpeg-turbo."""
    photo = next(p for p in all_photos(settings) if p.suffix == ".jpg").read_bytes()
    assert choose_decoder().name == "nvjpeg"
    on_gpu = TorchvisionJpeg("cuda").decode(photo, FULL).pixels.astype(int)
    on_cpu = TorchvisionJpeg().decode(photo, FULL).pixels.astype(int)
    assert on_gpu.shape == on_cpu.shape and np.abs(on_gpu - on_cpu).mean() < 2
