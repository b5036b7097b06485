"""The HTTP server: KServe V2 routes, an image route, health, metrics; errors mapped to status codes."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from turboinfer import __version__
from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidInput, InvalidModel, ModelNotFound
from turboinfer.core.types import V2_DATATYPES, ImagePreprocess
from turboinfer.models.image_pipeline import ImagePipeline
from turboinfer.models.inputs import index_limits, load_graph
from turboinfer.models.postprocess import softmax_top5
from turboinfer.models.variant import sample_feeds
from turboinfer.runtime.session import Session
from turboinfer.serve import v2
from turboinfer.serve.batcher import (
    Batcher,
    BatcherConfig,
    BatchReport,
    Trace,
)
from turboinfer.serve.errors import QueueFull
from turboinfer.serve.health import ModelHealth
from turboinfer.serve.http import (
    ClientGone,
    deadline_from,
    error,
    failure,
    priority_from,
    read_body,
    unless_disconnected,
)
from turboinfer.serve.logs import AccessLog, access_info
from turboinfer.serve.metrics import ServerMetrics
from turboinfer.serve.openai.routes import OpenAiRoutes
from turboinfer.serve.openai.scheduler import Engine, SchedulerConfig
from turboinfer.serve.openapi import openapi
from turboinfer.serve.padding import sequence_padding
from turboinfer.serve.schema import parse_object
from turboinfer.serve.split_config import SplitConfig
from turboinfer.serve.traffic import TrafficSplit
from turboinfer.serve.worker import ModelWorker

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class ServeConfig:
    """Server-wide limits and behaviour."""

    batcher: BatcherConfig = field(default_factory=BatcherConfig)
    max_body_bytes: int = 16 * 2**20
    overload_status: int = 429
    """429 (client backs off) or 503 when the queue is full."""
    retry_after_s: int = 1
    body_timeout_s: float = 10.0
    """A body that takes longer than this to arrive is cut off with 408 (slow-loris protection)."""
    health_interval_s: float = 1.0
    """After an engine failure, how often a model's session is re-checked while it cannot run."""


@dataclass
class ServedModel:
    """One loaded model with its batcher."""

    name: str
    card: ModelCard
    workers: list[ModelWorker]
    batchers: list[Batcher]
    """The primary's first; a canary's or shadow's second."""
    pipeline: ImagePipeline | None
    health: ModelHealth
    limits: dict[str, int] = field(default_factory=dict)
    """Index inputs (token ids) → the size of the table they index."""
    split: TrafficSplit | None = None
    version: str = "1"
    admitted: int = 0
    """Image requests being decoded (admitted, not yet queued)."""

    @property
    def batcher(self) -> Batcher:
        """The primary's batcher."""
        return self.batchers[0]

    def check_room(self) -> None:
        """QueueFull at once when the queue (requests waiting or being decoded) is at capacity."""
        if self.admitted + self.batcher.depth >= self.batcher.config.queue_size:
            raise QueueFull(f"queue full ({self.batcher.config.queue_size} requests waiting or decoding)")

    @contextmanager
    def admission(self) -> Iterator[None]:
        """Admit an image request before its photo is decoded, or raise QueueFull at once: decoding requests that
        the queue would refuse anyway only steals the cores from the ones already accepted."""
        self.check_room()
        self.admitted += 1
        try:
            yield
        finally:
            self.admitted -= 1

    def metadata(self) -> dict[str, Any]:
        """V2 model metadata."""

        def tensors(specs: tuple) -> list[dict[str, Any]]:
            return [{"name": s.name, "datatype": V2_DATATYPES.get(s.dtype, s.dtype),
                     "shape": [d if isinstance(d, int) else -1 for d in s.shape]} for s in specs]  # fmt: skip

        return {"name": self.name, "versions": [self.version], "platform": "onnx", "inputs": tensors(self.card.inputs),
                "outputs": tensors(self.card.outputs)}  # fmt: skip


@dataclass(frozen=True)
class Call:
    """One inference request as the answering function sees it: body read, deadline and priority parsed."""

    request: Request
    model: ServedModel
    body: bytes
    deadline: float | None
    priority: int
    trace: Trace = field(default_factory=Trace)
    """Filled in by the batcher: queue and compute time, batch rows (for the access log)."""


Answer = Callable[[Call], Awaitable[Response]]


class Server:
    """Owns the served models, readiness and metrics; builds the Starlette app."""

    def __init__(
        self, models: dict[str, tuple[ModelCard, Session]], config: ServeConfig,
        splits: dict[str, tuple[ModelCard, Session, SplitConfig]] | None = None,
        batching: dict[str, BatcherConfig] | None = None,
        generators: dict[str, tuple[Engine, SchedulerConfig]] | None = None,
        generator_splits: dict[str, tuple[Engine, SchedulerConfig, SplitConfig]] | None = None,
    ) -> None:  # fmt: skip
        self.config = config
        self.metrics = ServerMetrics()
        self.ready = False
        self._sources = models
        self._splits = splits or {}
        self.batching = batching or {}
        """Per-model batching; models not named use config.batcher."""
        self.models: dict[str, ServedModel] = {}
        self.llm = OpenAiRoutes(generators, self.metrics.registry, config, generator_splits) if generators else None
        """The OpenAI routes over the served LLMs (their engines warm up in the background after the start)."""

    async def runner(
        self, label: str, card: ModelCard, session: Session, batching: BatcherConfig, health: ModelHealth
    ) -> tuple[ModelWorker, Batcher]:
        """A warmed-up worker and a started batcher for one session (batch metrics under `label`; a batch the
        engine failed on makes `health` check whether the session still runs)."""
        worker = ModelWorker(session, batching.instances, sequence_padding(card, batching.seq_bucket))
        batcher = Batcher(batching, worker.run_batch, partial(self.on_batch, label, health, worker))
        for rows in sorted({1, batching.max_batch}):
            await asyncio.to_thread(worker.infer, [sample_feeds(card, rows)])
        batcher.start()
        return worker, batcher

    def on_batch(self, label: str, health: ModelHealth, worker: ModelWorker, report: BatchReport) -> None:
        """Record a computed batch; after engine failures, check the session."""
        self.metrics.on_batch(label, report)
        if report.failed:
            health.check(worker)

    async def load(self) -> None:
        """Build workers and batchers, warm up at the served batch sizes (and the image pipeline), then turn ready."""
        for name, (card, session) in self._sources.items():
            batching = self.batching.get(name, self.config.batcher)
            health = ModelHealth(name, sample_feeds(card, 1), self.config.health_interval_s)
            worker, batcher = await self.runner(name, card, session, batching, health)
            pipeline = ImagePipeline(card.preprocess) if isinstance(card.preprocess, ImagePreprocess) else None
            if pipeline is not None:
                await asyncio.to_thread(pipeline.warm_up)
            limits = index_limits(load_graph(card.onnx_path)) if card.onnx_path.suffix == ".onnx" else {}
            model = ServedModel(name, card, [worker], [batcher], pipeline, health, limits)
            if name in self._splits:
                other_card, other_session, split = self._splits[name]
                other_worker, other_batcher = await self.runner(
                    f"{name}:{split.mode}", other_card, other_session, batching, health
                )
                model.workers.append(other_worker)
                model.batchers.append(other_batcher)
                model.split = TrafficSplit(name, card.task, batcher, other_batcher, split, self.metrics)
            self.models[name] = model
        for scheduler in self.llm.every_scheduler() if self.llm else ():
            scheduler.start()
        self.ready = True

    async def shutdown(self) -> None:
        """Readiness false at once, then drain every accepted request (and mirrored shadow requests)."""
        self.ready = False
        await asyncio.gather(*(m.split.drain() for m in self.models.values() if m.split))
        await asyncio.gather(*(b.stop() for m in self.models.values() for b in m.batchers))
        if self.llm:
            await self.llm.drain()
        for model in self.models.values():
            model.health.stop()
            for worker in model.workers:
                worker.close()

    def is_ready(self, model: ServedModel | None = None) -> bool:
        """Loaded, not draining, and every session (or this model's) able to run."""
        models = [model] if model else list(self.models.values())
        llm_ready = model is not None or self.llm is None or self.llm.ready()
        return self.ready and llm_ready and all(m.health.healthy for m in models)

    def model(self, name: str) -> ServedModel:
        """A served model by name; unknown or malformed names are 404 (never a path)."""
        if not NAME.match(name) or name not in self.models:
            raise ModelNotFound(f"unknown model {name!r}" if NAME.match(name) else "unknown model")
        return self.models[name]

    async def body(self, request: Request) -> bytes:
        """The request body, under the size limit and the body timeout."""
        return await read_body(request, self.config.max_body_bytes, self.config.body_timeout_s)

    def failure(self, err: Exception, request_id: str) -> tuple[str, Response]:
        """The metric outcome and the {"error"} response for a failed request; server faults are logged."""
        return failure(err, request_id, self.config.overload_status, self.config.retry_after_s)

    async def infer(self, call: Call, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Through the batcher (with the requests its shapes can share a batch with), with metrics."""
        model = call.model
        self.metrics.queue_depth.labels(model.name).set(model.batcher.depth)
        rows = len(next(iter(inputs.values())))
        key = model.workers[0].key(inputs)
        if model.split is not None:
            return await model.split.infer(inputs, rows, call.deadline, call.priority, key, call.trace)
        return await model.batcher.submit(inputs, rows, call.deadline, call.priority, key, call.trace)

    async def handle(self, request: Request, name: str, answer: Answer) -> Response:
        """Shared frame of the inference routes: lookup, body, deadline and priority, answer, map errors. A client
        that disconnects before its answer is ready has its work dropped."""
        start = time.perf_counter()
        outcome = "ok"
        info = access_info(request)
        info["model"] = name
        trace = Trace()
        try:
            model = self.model(name)
            model.check_room()  # before reading a body that the queue would refuse anyway
            self.metrics.in_flight.labels(name).inc()
            try:
                raw = await self.body(request)
                call = Call(request, model, raw, deadline_from(request, start), priority_from(request), trace)
                response = await unless_disconnected(request, answer(call))
            finally:
                self.metrics.in_flight.labels(name).dec()
                self.metrics.request_duration.labels(name).observe(time.perf_counter() - start)
        except ClientGone:
            outcome, response = "cancelled", Response(status_code=499)
        except Exception as err:  # the one place errors become answers: client mistakes 4xx, the rest 500
            outcome, response = self.failure(err, info["id"])
        finally:
            self.metrics.requests.labels(name if name in self.models else "unknown", outcome).inc()
        if trace.batch_rows:
            info.update(queue_ms=round(trace.queue_s * 1000, 2), compute_ms=round(trace.compute_s * 1000, 2),
                        batch=trace.batch_rows)  # fmt: skip
        return response

    async def v2_answer(self, call: Call) -> Response:
        """KServe V2 inference: decode the JSON/binary request, infer, encode."""
        model = call.model
        decoded = v2.decode_request(
            call.body, call.request.headers.get(v2.HEADER_LENGTH), model.card.inputs, model.card.outputs, model.limits
        )
        outputs = await self.infer(call, decoded.inputs)
        body, headers = v2.encode_response(model.name, model.version, decoded, outputs)
        return Response(body, headers=headers)

    async def preprocess(
        self, model: ServedModel, raw: bytes, pipeline: Callable[[bytes], np.ndarray] | None = None
    ) -> np.ndarray:
        """Image bytes → one model input, admitted first and decoded in a thread (the model's pipeline by default)."""
        if model.pipeline is None:
            raise InvalidInput(f"model {model.name!r} does not take images")
        with model.admission():
            return await asyncio.to_thread(pipeline or model.pipeline, raw)

    async def image_answer(self, call: Call) -> Response:
        """The image route: decode with the model's pipeline, infer, top-5 classes or the embedding."""
        tensor = await self.preprocess(call.model, call.body)
        outputs = await self.infer(call, {call.model.card.inputs[0].name: tensor[None]})
        return JSONResponse(image_json(call.model.card, outputs))

    def app(self, extra_routes: Sequence[BaseRoute] = ()) -> Starlette:
        """The ASGI app with its routes (and an application's extra ones) and lifespan."""

        @asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            await self.load()
            yield
            await self.shutdown()

        async def live(request: Request) -> Response:
            ok = self.llm is None or self.llm.alive()  # a dead engine loop: restart the process
            return JSONResponse({"live": ok}, status_code=200 if ok else 503)

        async def ready(request: Request) -> Response:
            ok = self.is_ready()
            return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

        async def server_metadata(request: Request) -> Response:
            return JSONResponse({"name": "turboinfer", "version": __version__, "extensions": ["binary_tensor_data"]})

        async def model_metadata(request: Request) -> Response:
            try:
                return JSONResponse(self.model(request.path_params["name"]).metadata())
            except ModelNotFound as err:
                return error(404, str(err))

        async def model_ready(request: Request) -> Response:
            try:
                ok = self.is_ready(self.model(request.path_params["name"]))
            except ModelNotFound as err:
                return error(404, str(err))
            return JSONResponse({"name": request.path_params["name"], "ready": ok}, status_code=200 if ok else 503)

        async def repository_index(request: Request) -> Response:
            try:
                raw = await self.body(request)
                ready_only = raw.strip() and parse_object(raw, "request body").boolean("ready")
            except Exception as err:
                return self.failure(err, access_info(request)["id"])[1]
            rows = [{"name": n, "version": m.version, "state": "READY" if self.is_ready(m) else "UNAVAILABLE",
                     "reason": "" if self.is_ready(m) else m.health.reason or "loading or draining"}
                    for n, m in self.models.items()]  # fmt: skip
            return JSONResponse([r for r in rows if r["state"] == "READY" or not ready_only])

        async def model_control(request: Request) -> Response:
            return error(400, "models are loaded at start and cannot be loaded or unloaded through the API")

        async def v2_infer(request: Request) -> Response:
            return await self.handle(request, request.path_params["name"], self.v2_answer)

        async def image_infer(request: Request) -> Response:
            return await self.handle(request, request.path_params["name"], self.image_answer)

        async def metrics(request: Request) -> Response:
            for name, model in self.models.items():
                self.metrics.queue_depth.labels(name).set(model.batcher.depth)
            return Response(self.metrics.render(), media_type="text/plain; version=0.0.4")

        routes = [
            Route("/v2/health/live", live), Route("/v2/health/ready", ready), Route("/v2", server_metadata),
            Route("/v2/models/{name}", model_metadata), Route("/v2/models/{name}/versions/{version}", model_metadata),
            Route("/v2/models/{name}/ready", model_ready),
            Route("/v2/models/{name}/versions/{version}/ready", model_ready),
            Route("/v2/models/{name}/infer", v2_infer, methods=["POST"]),
            Route("/v2/models/{name}/versions/{version}/infer", v2_infer, methods=["POST"]),
            Route("/v1/models/{name}/image", image_infer, methods=["POST"]),
            Route("/v2/repository/index", repository_index, methods=["POST"]),
            Route("/v2/repository/models/{name}/{action:str}", model_control, methods=["POST"]),
            Route("/metrics", metrics),
            Route("/openapi.json", lambda request: JSONResponse(openapi())), *(self.llm.routes() if self.llm else []),
            *extra_routes,
        ]  # fmt: skip

        async def http_error(request: Request, exc: Exception) -> Response:
            status = getattr(exc, "status_code", 500)
            return error(status, "not found" if status == 404 else str(getattr(exc, "detail", "error")))

        return Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(AccessLog)],
                         exception_handlers={404: http_error, 405: http_error})  # fmt: skip


def image_json(card: ModelCard, outputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """JSON for the image route: top-5 classes for classifiers, the embedding for embedders."""
    if card.task == "classify":
        top5 = [{"class": c, "probability": p} for c, p in softmax_top5(outputs)]
        return {"model": card.name, "top5": top5}
    return {"model": card.name, "embedding": next(iter(outputs.values()))[0].astype(np.float64).tolist()}


def check_servable(card: ModelCard) -> None:
    """Refuse models the server cannot batch: no inputs, or inputs without a leading batch dimension."""
    if not card.inputs or any(not s.shape for s in card.inputs):
        raise InvalidModel(f"{card.name}: every input needs a leading batch dimension to be served")
