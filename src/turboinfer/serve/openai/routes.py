"""OpenAI-compatible routes for the served LLMs: POST /v1/chat/completions, POST /v1/completions and GET
/v1/models (the server's /health reports each engine's state). Streaming is server-sent events (a role chunk,
content deltas that never split a character, a chunk with the finish reason, an optional usage chunk, then
`data: [DONE]`); errors are OpenAI's `{"error": {"message", "type", "param", "code"}}`, inside a stream too.
Admission, body limits, deadlines, priorities, disconnect handling and the error mapping are the V2 routes' own."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio
import orjson
from prometheus_client import CollectorRegistry
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from turboinfer.core.errors import ModelNotFound
from turboinfer.runtime.llm.generate import GenerationResult
from turboinfer.serve.http import (
    ClientGone,
    classify,
    deadline_from,
    log_fault,
    priority_from,
    read_body,
    retry_headers,
    unless_disconnected,
)
from turboinfer.serve.logs import access_info
from turboinfer.serve.openai.engine_process import CoreClient
from turboinfer.serve.openai.metrics import GenerationMetrics
from turboinfer.serve.openai.openapi import openai_paths
from turboinfer.serve.openai.protocol import FIELDS, Completion, ModelLimits, model_of, parse_completion
from turboinfer.serve.openai.scheduler import GenerationScheduler, SchedulerConfig
from turboinfer.serve.openai.split import GenerationSplit
from turboinfer.serve.openai.ticket import Ticket
from turboinfer.serve.schema import parse_object
from turboinfer.serve.split_config import SplitConfig

ERROR_TYPES = {400: "invalid_request_error", 404: "not_found_error", 408: "timeout", 413: "invalid_request_error",
               429: "rate_limit_error", 503: "service_unavailable", 504: "timeout"}  # fmt: skip
FIELD = re.compile(r"^([a-z_]+)(\[\d+\]|\.[a-z_]+)*\b")


def openai_error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """OpenAI's error body, with the status code."""
    return JSONResponse(error_body(status, message), status_code=status, headers=headers)


def error_body(status: int, message: str) -> dict[str, Any]:
    """{"error": {message, type, param, code}}; param is the request field a 400 names, when it names one."""
    named = FIELD.match(message) if status == 400 else None
    param = named.group(0) if named and named.group(1) in FIELDS else None
    code = {404: "model_not_found", 429: "rate_limit_exceeded", 413: "request_too_large"}.get(status)
    return {"error": {"message": message, "type": ERROR_TYPES.get(status, "server_error"), "param": param,
                      "code": code}}  # fmt: skip


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event."""
    return b"data: " + (data.encode() if isinstance(data, str) else orjson.dumps(data)) + b"\n\n"


class EventStream(StreamingResponse):
    """A streaming response that stops (cancelling its iterator) as soon as the client disconnects, whatever the
    ASGI version: a write to a gone client is dropped silently by uvicorn, so waiting for one to fail is no way
    to notice."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:

            async def stream() -> None:
                await self.stream_response(send)
                group.cancel_scope.cancel()

            group.start_soon(stream)
            await self.listen_for_disconnect(receive)
            group.cancel_scope.cancel()


class Limits(Protocol):
    """The server-wide limits the routes share with the V2 routes (ServeConfig has them)."""

    @property
    def max_body_bytes(self) -> int: ...
    @property
    def body_timeout_s(self) -> float: ...
    @property
    def overload_status(self) -> int: ...
    @property
    def retry_after_s(self) -> int: ...


class OpenAiRoutes:
    """The routes over the served generators (one scheduler per model name)."""

    name = "openai"

    def __init__(self, engines: dict[str, tuple[CoreClient, SchedulerConfig]], registry: CollectorRegistry,
                 limits: Limits, splits: dict[str, tuple[CoreClient, SchedulerConfig, SplitConfig]] | None = None,
                 ) -> None:  # fmt: skip
        self.metrics = GenerationMetrics(registry)
        self.schedulers = {n: GenerationScheduler(n, e, c, self.metrics) for n, (e, c) in engines.items()}
        self.splits = {
            n: GenerationSplit(n, self.schedulers[n], GenerationScheduler(f"{n}:{s.mode}", e, c, self.metrics), s,
                               registry) for n, (e, c, s) in (splits or {}).items()
        }  # fmt: skip
        self.max_body_bytes, self.body_timeout_s = limits.max_body_bytes, limits.body_timeout_s
        self.overload_status, self.retry_after_s = limits.overload_status, limits.retry_after_s
        self.created = int(time.time())

    def routes(self) -> list[BaseRoute]:
        """The Starlette routes."""

        async def chat(request: Request) -> Response:
            return await self.handle(request, chat=True)

        async def completions(request: Request) -> Response:
            return await self.handle(request, chat=False)

        return [Route("/v1/chat/completions", chat, methods=["POST"]),
                Route("/v1/completions", completions, methods=["POST"]),
                Route("/v1/models", self.models)]  # fmt: skip

    def every_scheduler(self) -> list[GenerationScheduler]:
        """The served models' schedulers and their canaries' or shadows'."""
        return [*self.schedulers.values(), *(split.second for split in self.splits.values())]

    async def load(self) -> None:
        """Start every engine's scheduler (each warms its engine up in the background: ready() says when)."""
        for scheduler in self.every_scheduler():
            scheduler.start()

    def paths(self) -> dict[str, Any]:
        """Its part of the OpenAPI document."""
        return openai_paths()

    def ready(self) -> bool:
        """Every engine warmed up and running."""
        return all(s.state == "ready" for s in self.every_scheduler())

    def alive(self) -> bool:
        """No engine loop has died."""
        return all(s.state != "dead" for s in self.every_scheduler())

    async def drain(self) -> None:
        """Wait for mirrored requests, then finish what every engine accepted."""
        await asyncio.gather(*(split.drain() for split in self.splits.values()))
        for scheduler in self.every_scheduler():
            await asyncio.to_thread(scheduler.stop)

    def states(self) -> dict[str, dict[str, str]]:
        """Each engine's state (loading, ready, restarting, dead, stopped) and the reason of its last failure."""
        return {s.name: {"state": s.state, "reason": s.reason} for s in self.every_scheduler()}

    async def models(self, request: Request) -> Response:
        """The served LLMs, as OpenAI lists models."""
        data = [{"id": n, "object": "model", "created": self.created, "owned_by": "turboinfer",
                 "max_model_len": s.engine.context} for n, s in self.schedulers.items()]  # fmt: skip
        return JSONResponse({"object": "list", "data": data})

    def limits(self, name: str) -> ModelLimits:
        """What a served model takes (a canary or shadow takes the same requests)."""
        scheduler = self.schedulers[name]
        config = scheduler.config
        return ModelLimits(name, scheduler.engine.context, config.max_new_tokens, config.vocab)

    def scheduler(self, name: str) -> GenerationScheduler:
        """The scheduler answering a request for a model name (its canary's, for a share of them); ModelNotFound
        (404) for names not served."""
        if name not in self.schedulers:
            raise ModelNotFound(f"the model {name!r} does not exist; served: {', '.join(self.schedulers)}")
        return self.splits[name].route() if name in self.splits else self.schedulers[name]

    def answered(self, name: str, ticket: Ticket, result: GenerationResult) -> None:
        """A request finished: its copy goes to the shadow, when there is one."""
        if name in self.splits:
            self.splits[name].mirror(ticket, result)

    def failure(self, err: Exception, request_id: str, model: str, info: dict[str, Any]) -> tuple[str, int, str]:
        """Outcome, status and message of a failed request: server faults logged, client errors counted by the
        field they name; both in the access log."""
        status, outcome = classify(err, self.overload_status)
        message = log_fault(err, request_id) if status == 500 else str(err)
        info["outcome"] = outcome
        if 400 <= status < 500:
            param = error_body(status, message)["error"]["param"] or ""
            self.metrics.client_errors.labels(model, param).inc()
            info["param"] = param or None
        return outcome, status, message

    async def handle(self, request: Request, chat: bool) -> Response:
        """Admit, read and parse the body, queue the request, then answer it whole or as a stream."""
        start, info = time.perf_counter(), access_info(request)
        name, outcome, ticket, handed_over = "unknown", "ok", None, False
        try:
            if len(self.schedulers) == 1:  # the only model: refuse before reading a body it would not take
                next(iter(self.schedulers.values())).check_room()
            raw = await read_body(request, self.max_body_bytes, self.body_timeout_s)
            body = parse_object(raw, "request body")
            scheduler = self.scheduler(model_of(body))
            name = info["model"] = model_of(body)
            completion = parse_completion(body, chat, self.limits(name))
            ticket = scheduler.submit(Ticket(completion.request, asyncio.get_running_loop(), completion.messages,
                                             completion.fit_max_tokens, priority_from(request),
                                             deadline_from(request, start)))  # fmt: skip
            kind, value = await unless_disconnected(request, ticket.next())
            if kind == "error":
                raise value
            rid = f"{'chatcmpl' if chat else 'cmpl'}-{info['id']}"
            if completion.stream:
                handed_over = True  # the stream owns the ticket (and its outcome) from here
                stream = self.stream(completion, scheduler, ticket, rid)
                return EventStream(stream, media_type="text/event-stream",
                                   headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})  # fmt: skip
            result = await unless_disconnected(request, ticket.result())
            outcome = result.finish_reason
            self.answered(name, ticket, result)
            info["tokens"] = result.completion_tokens
            return JSONResponse(completion_body(completion, rid, result))
        except ClientGone:
            outcome = "cancelled"
            return Response(status_code=499)
        except Exception as err:  # the one place errors become answers: client mistakes 4xx, the rest 500
            outcome, status, message = self.failure(err, info["id"], name, info)
            return openai_error(status, message, retry_headers(err, self.retry_after_s))
        finally:
            if not handed_over:
                if ticket is not None and not ticket.finished:
                    scheduler.cancel(ticket)
                self.metrics.requests.labels(name, outcome).inc()

    async def stream(self, completion: Completion, scheduler: GenerationScheduler, ticket: Ticket,
                     rid: str) -> AsyncIterator[bytes]:  # fmt: skip
        """The SSE body of an accepted request; the client going away cancels it in the engine."""
        outcome = "cancelled"
        try:
            yield sse(chunk(completion, rid, {"role": "assistant", "content": ""} if completion.chat else ""))
            while True:
                kind, value = await ticket.next()
                if kind == "text":
                    yield sse(chunk(completion, rid, {"content": value} if completion.chat else value))
                elif kind == "done":
                    outcome = value.finish_reason
                    self.answered(completion.model, ticket, value)
                    yield sse(chunk(completion, rid, {} if completion.chat else "", value.finish_reason))
                    if completion.include_usage:
                        yield sse({**envelope(completion, rid, True), "choices": [], "usage": usage(value)})
                    break
                else:
                    outcome, status, message = self.failure(value, rid, completion.model, {})
                    yield sse(error_body(status, message))
                    break
            yield sse("[DONE]")
        finally:
            if not ticket.finished:
                scheduler.cancel(ticket)
            self.metrics.requests.labels(completion.model, outcome).inc()


def envelope(completion: Completion, rid: str, streaming: bool) -> dict[str, Any]:
    """The fields every response and chunk starts with."""
    kind = "chat.completion" if completion.chat else "text_completion"
    return {"id": rid, "object": f"{kind}.chunk" if streaming and completion.chat else kind,
            "created": int(time.time()), "model": completion.model}  # fmt: skip


def chunk(completion: Completion, rid: str, delta: dict[str, str] | str, finish: str | None = None) -> dict[str, Any]:
    """One streamed chunk: a chat delta or a piece of completion text."""
    choice: dict[str, Any] = {"index": 0, "delta": delta} if completion.chat else {"index": 0, "text": delta}
    return {**envelope(completion, rid, True), "choices": [{**choice, "logprobs": None, "finish_reason": finish}]}


def usage(result: GenerationResult) -> dict[str, int]:
    """Token counts of a finished request."""
    return {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "total_tokens": result.prompt_tokens + result.completion_tokens}  # fmt: skip


def completion_body(completion: Completion, rid: str, result: GenerationResult) -> dict[str, Any]:
    """The whole answer of a request that did not stream."""
    choice: dict[str, Any] = (
        {"message": {"role": "assistant", "content": result.text}} if completion.chat else {"text": result.text}
    )
    choices = [{"index": 0, **choice, "logprobs": None, "finish_reason": result.finish_reason}]
    return {**envelope(completion, rid, False), "choices": choices, "usage": usage(result)}
