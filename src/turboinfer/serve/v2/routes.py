"""The KServe V2 front-end: model metadata and readiness, V2 inference (JSON or binary tensors) and the image
route, each model behind a dynamic batcher (with a canary or shadow when asked). The shared frame of its inference
routes: lookup, admission before the body is read, deadline and priority, answer, errors mapped in one place."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from turboinfer import __version__
from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidInput, InvalidModel, ModelNotFound
from turboinfer.core.types import ImagePreprocess
from turboinfer.models.image_pipeline import ImagePipeline
from turboinfer.models.inputs import index_limits, load_graph
from turboinfer.models.postprocess import softmax_top5
from turboinfer.models.variant import sample_feeds
from turboinfer.runtime.session import Session
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.http import (
    ClientGone,
    deadline_from,
    error,
    failure,
    priority_from,
    read_body,
    unless_disconnected,
)
from turboinfer.serve.logs import access_info
from turboinfer.serve.schema import parse_object
from turboinfer.serve.split_config import SplitConfig
from turboinfer.serve.v2 import codec
from turboinfer.serve.v2.batcher import Batcher, BatcherConfig, BatchReport, Trace
from turboinfer.serve.v2.health import ModelHealth
from turboinfer.serve.v2.metrics import ServerMetrics
from turboinfer.serve.v2.model import Answer, Call, ServedModel
from turboinfer.serve.v2.openapi import v2_paths
from turboinfer.serve.v2.padding import sequence_padding
from turboinfer.serve.v2.traffic import TrafficSplit
from turboinfer.serve.v2.worker import ModelWorker

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class V2Routes:
    """The served tensor models, their batchers and readiness; the V2 and image routes."""

    name = "v2"

    def __init__(
        self, models: dict[str, tuple[ModelCard, Session]], config: ServeConfig, registry: CollectorRegistry,
        splits: dict[str, tuple[ModelCard, Session, SplitConfig]] | None = None,
        batching: dict[str, BatcherConfig] | None = None,
    ) -> None:  # fmt: skip
        self.config = config
        self.metrics = ServerMetrics(registry)
        self.serving = False
        """Loaded and not draining."""
        self._sources = models
        self._splits = splits or {}
        self.batching = batching or {}
        """Per-model batching; models not named use config.batcher."""
        self.models: dict[str, ServedModel] = {}

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
            self.metrics.queue_depth.labels(name).set_function(partial(getattr, batcher, "depth"))
            self.models[name] = model
        self.serving = True

    async def drain(self) -> None:
        """Readiness false at once, then drain every accepted request (and mirrored shadow requests)."""
        self.serving = False
        await asyncio.gather(*(m.split.drain() for m in self.models.values() if m.split))
        await asyncio.gather(*(b.stop() for m in self.models.values() for b in m.batchers))
        for model in self.models.values():
            model.health.stop()
            for worker in model.workers:
                worker.close()

    def is_ready(self, model: ServedModel | None = None) -> bool:
        """Loaded, not draining, and every session (or this model's) able to run."""
        models = [model] if model else list(self.models.values())
        return self.serving and all(m.health.healthy for m in models)

    def ready(self) -> bool:
        """Every model's session able to run."""
        return self.is_ready()

    def states(self) -> dict[str, dict[str, str]]:
        """Each model's state (ready or unavailable) and why it is unavailable."""
        return {n: {"state": "ready", "reason": ""} if self.is_ready(m) else
                {"state": "unavailable", "reason": m.health.reason or "loading or draining"}
                for n, m in self.models.items()}  # fmt: skip

    def alive(self) -> bool:
        """A failed session heals by itself (health re-checks it): never a reason to restart the process."""
        return True

    def paths(self) -> dict[str, Any]:
        """Its part of the OpenAPI document."""
        return v2_paths()

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
        decoded = codec.decode_request(
            call.body,
            call.request.headers.get(codec.HEADER_LENGTH),
            model.card.inputs,
            model.card.outputs,
            model.limits,
        )
        outputs = await self.infer(call, decoded.inputs)
        body, headers = codec.encode_response(model.name, model.version, decoded, outputs)
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

    def routes(self) -> list[BaseRoute]:
        """The V2 and image routes."""

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
            states = self.states()
            rows = [{"name": n, "version": m.version, "state": states[n]["state"].upper(),
                     "reason": states[n]["reason"]} for n, m in self.models.items()]  # fmt: skip
            return JSONResponse([r for r in rows if r["state"] == "READY" or not ready_only])

        async def model_control(request: Request) -> Response:
            return error(400, "models are loaded at start and cannot be loaded or unloaded through the API")

        async def v2_infer(request: Request) -> Response:
            return await self.handle(request, request.path_params["name"], self.v2_answer)

        async def image_infer(request: Request) -> Response:
            return await self.handle(request, request.path_params["name"], self.image_answer)

        return [
            Route("/v2", server_metadata),
            Route("/v2/models/{name}", model_metadata), Route("/v2/models/{name}/versions/{version}", model_metadata),
            Route("/v2/models/{name}/ready", model_ready),
            Route("/v2/models/{name}/versions/{version}/ready", model_ready),
            Route("/v2/models/{name}/infer", v2_infer, methods=["POST"]),
            Route("/v2/models/{name}/versions/{version}/infer", v2_infer, methods=["POST"]),
            Route("/v1/models/{name}/image", image_infer, methods=["POST"]),
            Route("/v2/repository/index", repository_index, methods=["POST"]),
            Route("/v2/repository/models/{name}/{action:str}", model_control, methods=["POST"]),
        ]  # fmt: skip


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
