"""The three runtimes compute the same EfficientNet-Lite0 on real photos."""

import numpy as np
import pytest

from turboinfer.models.catalog import open_eager
from turboinfer.models.photos import labelled_imagenet_photos
from turboinfer.models.preprocess import image_batch
from turboinfer.runtime.session import SessionOptions, open_session


@pytest.fixture(scope="module")
def photo_batch(effnet):
    photos = [path.read_bytes() for path, _ in labelled_imagenet_photos()[:8]]
    return image_batch(photos, effnet.preprocess)


def test_ort_openvino_and_torch_agree_on_efficientnet(effnet, photo_batch):
    options = SessionOptions(intra_threads=2)
    feeds = {"image": photo_batch}
    outputs = {
        "ort": open_session(effnet.onnx_path, "ort", options).run(feeds),
        "openvino": open_session(effnet.onnx_path, "openvino", options).run(feeds),
        "torch": open_eager(effnet, options).run(feeds),
    }
    reference = outputs["torch"]
    for name, out in outputs.items():
        assert set(out) == {"logits", "features"}, name
        assert out["logits"].shape == (8, 1000)
        np.testing.assert_allclose(out["logits"], reference["logits"], atol=2e-3, rtol=1e-3, err_msg=name)
        np.testing.assert_array_equal(out["logits"].argmax(1), reference["logits"].argmax(1), err_msg=name)
        np.testing.assert_allclose(out["features"], reference["features"], atol=2e-3, rtol=1e-3, err_msg=name)
