"""Start the server: load variants, build the app, run uvicorn until SIGTERM, drain, and exit 0."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette

from turboinfer.core.card import ModelCard, file_sha256
from turboinfer.core.errors import InvalidInput, InvalidModel
from turboinfer.serve.app import ServeConfig, Server, check_servable
from turboinfer.serve.repository import ModelServing

DRAIN_TIMEOUT_S = 25
"""Graceful-shutdown budget: under Kubernetes' default 30 s termination grace period."""


class DrainingServer(uvicorn.Server):
    """uvicorn that treats SIGTERM/SIGINT as "stop accepting, finish what was accepted, exit 0".

    (Stock uvicorn re-raises the signal after shutting down, so the process would die by SIGTERM.)
    """

    def __init__(self, config: uvicorn.Config, app_server: Server) -> None:
        super().__init__(config)
        self.app_server = app_server

    def stop_on_signal(self, sig: int, frame: object) -> None:
        """Readiness false at once (load balancers stop sending), then uvicorn's graceful exit."""
        self.app_server.ready = False
        self.handle_exit(sig, None)

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.stop_on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def check_file(card: ModelCard) -> None:
    """InvalidModel when the card records a hash and the ONNX file no longer matches it (corrupt or replaced)."""
    if card.onnx_sha256 and file_sha256(card.onnx_path) != card.onnx_sha256:
        raise InvalidModel(f"{card.onnx_path} does not match the sha256 in its card (corrupt or replaced); rebuild it")


def build_server(served: list[ModelServing], config: ServeConfig) -> Server:
    """A Server for these models, each under its model name, with its own batching and optional second variant;
    every model file is checked and opened here, before anything listens."""
    models, splits, batching = {}, {}, {}
    for entry in served:
        card = entry.variant.card
        check_servable(card)
        check_file(card)
        models[card.name] = (card, entry.variant.open())
        batching[card.name] = entry.batcher
        if entry.second is not None and entry.split is not None:
            if [s.name for s in entry.second.card.inputs] != [s.name for s in card.inputs]:
                raise InvalidInput(
                    f"{entry.second.label} takes different inputs than {card.name}; it cannot share its traffic"
                )
            check_file(entry.second.card)
            splits[card.name] = (entry.second.card, entry.second.open(), entry.split)
    return Server(models, config, splits, batching)


def run_app(server: Server, app: Starlette, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve app (built on server) until SIGTERM/SIGINT; readiness turns false, accepted requests are drained."""
    uvicorn_config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=DRAIN_TIMEOUT_S
    )
    DrainingServer(uvicorn_config, server).run()
