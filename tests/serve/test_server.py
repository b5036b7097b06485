"""One server composing front-ends: its OpenAPI document covers every route of both."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry

from turboinfer.serve.config import ServeConfig
from turboinfer.serve.openai.routes import OpenAiRoutes
from turboinfer.serve.run import compose
from turboinfer.serve.server import Server
from turboinfer.serve.v2.routes import V2Routes


def test_the_openapi_document_describes_every_route_of_both_front_ends():
    registry = CollectorRegistry()
    server = Server([V2Routes({}, ServeConfig(), registry), OpenAiRoutes({}, registry, ServeConfig())], registry)
    routes = {re.sub(r":\w+}", "}", route.path) for route in server.app().routes}
    documented = set(server.openapi()["paths"])
    assert routes - documented == set()
    assert {"/v1/chat/completions", "/v2/models/{name}/infer", "/metrics", "/health"} <= routes


def test_the_v2_routes_are_there_without_a_tensor_model():
    """A server of LLMs alone still answers KServe V2's server metadata and repository index (as before the split)."""
    server = compose(ServeConfig())
    paths = {route.path for route in server.app().routes}
    assert list(server.frontends) == ["v2"] and {"/v2", "/v2/repository/index"} <= paths
