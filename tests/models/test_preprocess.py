import numpy as np
import pytest
from PIL import Image

from tests.support.images import encode, png_claiming_size
from turboinfer.core.errors import InvalidInput
from turboinfer.core.types import ImagePreprocess
from turboinfer.models.preprocess import decode_image, image_tensor, normalize, resize_and_crop

SPEC = ImagePreprocess()


def test_tensor_shape_dtype_and_values():
    tensor = image_tensor(encode(Image.new("RGB", (640, 480), (255, 0, 128))), SPEC)
    assert tensor.shape == (3, 224, 224) and tensor.dtype == np.float32
    expected = (np.array([255, 0, 128]) / 255 - np.array(SPEC.mean)) / np.array(SPEC.std)
    np.testing.assert_allclose(tensor[:, 100, 100], expected, atol=0.05)


def test_uint8_nhwc_input_skips_normalization():
    spec = ImagePreprocess(layout="NHWC", input_dtype="uint8")
    pixels = np.full((300, 400, 3), 7, np.uint8)
    out = normalize(resize_and_crop(pixels, spec), spec)
    assert out.shape == (224, 224, 3) and out.dtype == np.uint8 and out.max() == 7


@pytest.mark.parametrize("mode", ["L", "RGBA", "CMYK", "P"])
def test_modes_become_rgb(mode):
    image = Image.new("RGB", (50, 40), (10, 200, 30)).convert(mode)
    fmt = "JPEG" if mode in ("L", "CMYK") else "PNG"
    assert decode_image(encode(image, fmt)).shape == (40, 50, 3)


def test_exif_orientation_is_applied():
    image = Image.new("RGB", (60, 20))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise on display
    assert decode_image(encode(image, exif=exif)).shape == (60, 20, 3)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "0 bytes"),
        (b"hello, definitely not an image" * 10, "not a decodable image"),
        (encode(Image.new("RGB", (300, 300), (1, 2, 3)))[:400], "corrupt or truncated"),
        (png_claiming_size(30_000, 30_000), "too large"),
        (png_claiming_size(12_000, 10_000), "120 MP, over the 100 MP limit"),
        (encode(Image.new("I;16", (8, 8)), "PNG"), "16/32-bit"),
    ],
)
def test_bad_images_raise_invalid_input(data, message):
    with pytest.raises(InvalidInput, match=message):
        decode_image(data)
