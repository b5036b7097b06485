"""Start the server: load variants, build the app, run uvicorn until SIGTERM (then drain and exit 0)."""

from __future__ import annotations

import uvicorn

from turboinfer.models.variant import Variant
from turboinfer.serve.app import ServeConfig, Server, check_servable

DRAIN_TIMEOUT_S = 25
"""Graceful-shutdown budget: under Kubernetes' default 30 s termination grace period."""


def build_server(variants: list[Variant], config: ServeConfig) -> Server:
    """A Server for these variants, each served under its model name."""
    models = {}
    for variant in variants:
        check_servable(variant.card)
        models[variant.card.name] = (variant.card, variant.open())
    return Server(models, config)


def run_server(variants: list[Variant], config: ServeConfig, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve until interrupted; uvicorn turns SIGTERM into the app's shutdown, which drains accepted requests."""
    server = build_server(variants, config)
    uvicorn.run(server.app(), host=host, port=port, log_level="warning", timeout_graceful_shutdown=DRAIN_TIMEOUT_S)
