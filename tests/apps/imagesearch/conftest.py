"""A small real gallery (whole photos from installed packages) and an index over it, built once per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.conftest import running
from turboinfer.apps.imagesearch.gallery import write_gallery
from turboinfer.apps.imagesearch.index import GalleryIndex, IndexConfig, build_index
from turboinfer.apps.imagesearch.service import search_server
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import parse_variant
from turboinfer.serve.app import ServeConfig
from turboinfer.serve.batcher import BatcherConfig

GALLERY_PHOTOS = 24
PCA = 8


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
