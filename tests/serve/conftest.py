"""A real server on a real socket: uvicorn in a thread, serving EfficientNet-Lite0; ready before tests run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.http import TEST_LIMIT, running
from turboinfer.models.variant import parse_variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.run import build_server
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import ModelServing


@pytest.fixture(scope="module")
def served(effnet, settings) -> Iterator[tuple[str, object]]:
    """(base URL, Server) of a running server."""
    batching = BatcherConfig(max_batch=4, max_delay_s=0.005)
    server = build_server(
        [ModelServing(parse_variant("efficientnet-lite0", settings), batching)],
        ServeConfig(batching, max_body_bytes=TEST_LIMIT, body_timeout_s=1.0),
    )
    with running(server) as base:
        yield base, server
