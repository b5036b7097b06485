"""Start the server: load variants, build the app, run uvicorn until SIGTERM, drain, and exit 0."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import uvicorn
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette

from turboinfer.core.card import ModelCard, file_sha256
from turboinfer.core.errors import InvalidInput, InvalidModel
from turboinfer.core.settings import Settings
from turboinfer.hardware.probe import available_memory_bytes
from turboinfer.llm.card import build_llm
from turboinfer.llm.engines import ServeShape, engine_entry
from turboinfer.llm.overrides import overrides_path
from turboinfer.llm.variant import parse_generator
from turboinfer.runtime.llm.generate import KV_VALUE_BYTES, check_kv_capacity
from turboinfer.runtime.session import Session
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.openai.engine_process import CoreClient, EngineSpec, ProcessEngine
from turboinfer.serve.openai.routes import OpenAiRoutes
from turboinfer.serve.openai.scheduler import SchedulerConfig
from turboinfer.serve.server import FrontEnd, Server
from turboinfer.serve.split_config import SplitConfig
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import ModelServing
from turboinfer.serve.v2.routes import V2Routes, check_servable

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
        self.app_server.loaded = False
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


@dataclass(frozen=True)
class LlmServing:
    """One served LLM: its engine (loaded, not yet warmed up), its scheduler's limits, and the KV arithmetic."""

    name: str
    engine: CoreClient
    scheduler: SchedulerConfig
    kv_plan: str
    """One line: KV bytes per token, the cache, what fits in it."""
    facts: str = ""
    """One line: what the model file is."""
    second: LlmServing | None = None
    """A canary or shadow, per split."""
    split: SplitConfig | None = None


def llm_serving(text: str, env: Settings, scheduler: SchedulerConfig, threads: int = 0, cache_gb: float = 1.0,
                max_batched_tokens: int = 256, prompt_lookup: int = 0) -> LlmServing:  # fmt: skip
    """Open an LLM for serving, its engine in a process of its own: the KV cache its streams need is computed first
    and refused when it does not fit in memory (before anything is allocated); step-wise engines are interleaved.
    prompt_lookup > 0 turns prompt-lookup decoding on (OpenVINO GenAI)."""
    variant = parse_generator(text, env, threads)
    if prompt_lookup:
        variant = replace(variant, prompt_lookup=prompt_lookup, kv_cache="f32").checked()
    card = build_llm(variant.model, env)
    entry = engine_entry(variant.engine)
    refusal = entry.refusal(card)
    if refusal:
        raise InvalidModel(f"{card.name}: {refusal}")
    streams = scheduler.max_running
    per_token = card.kv_values_per_token() * KV_VALUE_BYTES[variant.kv_cache]
    if entry.shared_kv:  # one cache the streams share
        cache = check_kv_capacity(per_token, 1, round(cache_gb * 2**30 / per_token), available_memory_bytes())
        tokens = int(cache // per_token)
        kind = f"{variant.kv_cache}, shared by {streams} streams"
    else:  # one cache per stream, allocated for the whole context
        try:
            cache = check_kv_capacity(per_token, streams, card.context, available_memory_bytes())
        except InvalidInput as err:
            raise InvalidInput(
                f"{card.name}: {err}: serve fewer --streams, or cap the context in "
                f'{overrides_path(card.source)} ({{"context": N}})'
            ) from None
        tokens, kind = streams * card.context, f"{variant.kv_cache}, {streams} streams × {card.context} tokens"
    shape = ServeShape(streams, tokens, max_batched_tokens)
    engine = ProcessEngine(EngineSpec(variant, env.cache_dir, shape, card))
    plan = (f"KV cache {cache / 2**30:.2f} GiB ({kind}): {per_token / 1024:.1f} KiB per token, {tokens:,} tokens "
            f"= {tokens // streams:,} per stream at {streams} streams; context {card.context:,}")  # fmt: skip
    limits = replace(scheduler, kv_tokens=tokens, vocab=card.vocab)
    return LlmServing(card.name, engine, limits, plan, card.line())


def build_server(served: list[ModelServing], config: ServeConfig, llms: list[LlmServing] | None = None) -> Server:
    """A Server for these models, each under its model name, with its own batching and optional second variant,
    and for these LLMs; every model file is checked and opened here, before anything listens."""
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
    generators = {llm.name: (llm.engine, llm.scheduler) for llm in llms or []}
    generator_splits = {llm.name: (llm.second.engine, llm.second.scheduler, llm.split) for llm in llms or []
                        if llm.second is not None and llm.split is not None}  # fmt: skip
    return compose(config, V2Models(models, splits, batching), OpenAiModels(generators, generator_splits))


@dataclass(frozen=True)
class V2Models:
    """The tensor models a server serves over KServe V2: sessions, second variants, per-model batching."""

    models: dict[str, tuple[ModelCard, Session]] = field(default_factory=dict)
    splits: dict[str, tuple[ModelCard, Session, SplitConfig]] = field(default_factory=dict)
    batching: dict[str, BatcherConfig] = field(default_factory=dict)


@dataclass(frozen=True)
class OpenAiModels:
    """The LLMs a server serves over the OpenAI API: engines with their scheduler limits, second variants."""

    engines: dict[str, tuple[CoreClient, SchedulerConfig]] = field(default_factory=dict)
    splits: dict[str, tuple[CoreClient, SchedulerConfig, SplitConfig]] = field(default_factory=dict)


def compose(config: ServeConfig, v2: V2Models | None = None, openai: OpenAiModels | None = None) -> Server:
    """One server: KServe V2 always (its server metadata, repository index and model routes answer even with no
    tensor model), OpenAI when it serves LLMs; both under one metrics registry."""
    registry = CollectorRegistry()
    v2 = v2 or V2Models()
    frontends: list[FrontEnd] = [V2Routes(v2.models, config, registry, v2.splits, v2.batching)]
    if openai is not None and openai.engines:
        frontends.append(OpenAiRoutes(openai.engines, registry, config, openai.splits))
    return Server(frontends, registry)


def run_app(server: Server, app: Starlette, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve app (built on server) until SIGTERM/SIGINT; readiness turns false, accepted requests are drained."""
    uvicorn_config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=DRAIN_TIMEOUT_S
    )
    DrainingServer(uvicorn_config, server).run()
