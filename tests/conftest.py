"""Shared fixtures: the real zoo (built once into the user's cache), real photos, a tiny real ONNX model, a real
gallery with an index and a search server over it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.support.gallery import GALLERY_PHOTOS, PCA
from tests.support.http import running
from turboinfer.apps.imagesearch.gallery import write_gallery
from turboinfer.apps.imagesearch.index import GalleryIndex, IndexConfig, build_index
from turboinfer.apps.imagesearch.service import search_server
from turboinfer.core.card import ModelCard
from turboinfer.core.settings import Settings
from turboinfer.models.catalog import build_zoo_model
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import parse_variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.v2.batcher import BatcherConfig


@pytest.fixture(scope="session")
def settings() -> Settings:
    """The same cache `make demo` uses, so the zoo is built once per machine."""
    return Settings.from_env(os.environ)


@pytest.fixture(scope="session")
def effnet(settings: Settings) -> ModelCard:
    return build_zoo_model("efficientnet-lite0", settings)


@pytest.fixture(scope="session")
def mobilenet(settings: Settings) -> ModelCard:
    return build_zoo_model("mobilenetv2", settings)


@pytest.fixture(scope="session")
def minilm(settings: Settings) -> ModelCard:
    return build_zoo_model("minilm-l6", settings)


def write_tiny_model(path: Path) -> Path:
    """y = relu(x @ W + b), x: [batch, 4] float32 → y: [batch, 3]; a real ONNX file for fast runtime tests."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "W")
    bias = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["z"]),
        helper.make_node("Relu", ["z"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        initializer=[weight, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


@pytest.fixture()
def tiny_model(tmp_path: Path) -> Path:
    return write_tiny_model(tmp_path / "tiny.onnx")


@pytest.fixture(scope="session")
def user_models(tmp_path_factory) -> dict[str, Path]:
    """ONNX models that are not in the zoo, exported the way a user would (random weights, seeded): a torchvision
    image classifier, a recurrent text classifier over token ids, and an MLP over generic tensors."""
    from tests.support.user_models import mlp, recurrent_classifier, torchvision_classifier

    folder = tmp_path_factory.mktemp("user-models")
    return {"image": torchvision_classifier("mobilenet_v3_small", folder / "mobilenet_v3_small.onnx", classes=10),
            "text": recurrent_classifier(folder / "gru_text.onnx"), "tensor": mlp(folder / "mlp.onnx")}  # fmt: skip


@pytest.fixture(scope="session")
def own_llms(tmp_path_factory):
    """Tiny random-weight LLMs of each architecture family, as folders and GGUFs (tests/llm_models.py)."""
    from tests.support.llm_models import OwnLlms

    return OwnLlms(tmp_path_factory.mktemp("own-llms"))


@pytest.fixture(scope="module")
def gallery(tmp_path_factory, settings) -> Path:
    """24 real photos, whole (no tiles), as JPEGs."""
    folder = tmp_path_factory.mktemp("gallery")
    write_gallery(all_photos(settings)[:GALLERY_PHOTOS], folder, grid=1)
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory, gallery, effnet, settings) -> Path:
    """An index of the gallery with EfficientNet-Lite0 features, PCA to 8 dims, flat."""
    out = tmp_path_factory.mktemp("index")
    build_index(gallery, out, parse_variant("efficientnet-lite0", settings), IndexConfig(pca=PCA))
    return out


@pytest.fixture(scope="module")
def search_url(built, settings) -> Iterator[str]:
    """Base URL of a search server over `built` (1 MiB body limit), on a real loopback socket."""
    batching = BatcherConfig(max_batch=4, max_delay_s=0.002)
    server, service = search_server(GalleryIndex(built), parse_variant("efficientnet-lite0", settings),
                                    ServeConfig(batching, max_body_bytes=2**20), batching)  # fmt: skip
    with running(server, server.app(service.routes())) as base:
        yield base
