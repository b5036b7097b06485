"""Request plumbing shared by every route: the body under its limits, the deadline and priority headers, the
watch for a client that goes away, and the one mapping of errors to status codes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from turboinfer.core.errors import InvalidInput, ModelNotFound, TurboinferError
from turboinfer.serve.errors import DeadlineExceeded, EngineFailed, EngineStopped, QueueFull, ShuttingDown
from turboinfer.serve.logs import ERRORS

T = TypeVar("T")


class SlowBody(TurboinferError):
    """The request body did not arrive within the body timeout (408)."""


class BodyTooLarge(TurboinferError):
    """The request body is over the size limit (413)."""


class ClientGone(TurboinferError):
    """The client disconnected before its answer was ready: its work was dropped (logged as 499)."""


FAILURES_TABLE: tuple[tuple[type[Exception], int, str], ...] = (
    (ModelNotFound, 404, "not_found"),
    (BodyTooLarge, 413, "too_large"),
    (SlowBody, 408, "timeout"),
    (InvalidInput, 400, "invalid"),
    (QueueFull, 429, "queue_full"),  # or 503, per ServeConfig.overload_status
    (ShuttingDown, 503, "unavailable"),
    (EngineStopped, 503, "engine_stopped"),
    (EngineFailed, 503, "engine_failed"),
    (DeadlineExceeded, 504, "deadline"),
)
"""Client-side exceptions → status code and the `outcome` label of turboinfer_requests_total; anything else is a
500 with outcome "error", logged with its traceback."""


def error(status: int, message: str, headers: dict[str, str] | None = None, request_id: str = "") -> JSONResponse:
    """Every non-200 answer: {"error": "..."} (and the request id, when known)."""
    body = {"error": message, "request_id": request_id} if request_id else {"error": message}
    return JSONResponse(body, status_code=status, headers=headers)


async def read_body(request: Request, max_bytes: int, timeout_s: float) -> bytes:
    """The request body, refused past the size limit (413) or when it arrives too slowly (408)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLarge(f"body of {declared} bytes is over the {max_bytes}-byte limit")
    chunks, size = [], 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise BodyTooLarge(f"body is over the {max_bytes}-byte limit")
                chunks.append(chunk)
    except TimeoutError:
        raise SlowBody(f"request body took longer than {timeout_s:g} s to arrive") from None
    except ClientDisconnect:
        raise ClientGone("the client disconnected while sending its body") from None
    return b"".join(chunks)


def classify(err: Exception, overload_status: int = 429) -> tuple[int, str]:
    """Status code and metric outcome of a failed request: client-side exceptions by FAILURES_TABLE, anything
    else a server fault (500, "error")."""
    for kind, status, outcome in FAILURES_TABLE:
        if isinstance(err, kind):
            return (overload_status if kind is QueueFull else status), outcome
    return 500, "error"


def log_fault(err: Exception, request_id: str) -> str:
    """Log a server fault with its traceback; the message for the client (no internals in it)."""
    ERRORS.error("request failed", exc_info=err, extra={"fields": {"id": request_id}})
    return f"internal error ({type(err).__name__}); the server log has the details under request id {request_id}"


def retry_headers(err: Exception, retry_after_s: int) -> dict[str, str] | None:
    """Retry-After for a refusal of a full queue or a request an engine failure lost (the client may come back
    then), nothing otherwise."""
    return {"Retry-After": str(retry_after_s)} if isinstance(err, QueueFull | EngineFailed) else None


def failure(
    err: Exception, request_id: str, overload_status: int = 429, retry_after_s: int = 1
) -> tuple[str, Response]:
    """The metric outcome and the {"error"} response for a failed request; server faults are logged."""
    status, outcome = classify(err, overload_status)
    if status == 500:
        return outcome, error(500, log_fault(err, request_id), request_id=request_id)
    return outcome, error(status, str(err), retry_headers(err, retry_after_s))


async def unless_disconnected(request: Request, work: Awaitable[T]) -> T:
    """work's response; ClientGone, with work cancelled (and its batch slot skipped), if the client goes first.
    One watcher task per request, which cancels this one when the disconnect arrives."""
    current = asyncio.current_task()
    assert current is not None
    left = finished = False

    async def watch() -> None:
        nonlocal left
        await disconnected(request)
        if not finished:  # (an answer that is ready goes out; the loop runs one task at a time)
            left = True
            current.cancel()

    watcher = asyncio.create_task(watch())
    try:
        response = await work
        finished = True
        return response
    except asyncio.CancelledError:
        if not left:
            raise
        current.uncancel()
        raise ClientGone("the client disconnected before its answer was ready") from None
    finally:
        watcher.cancel()


async def disconnected(request: Request) -> None:
    """Return when the client disconnects (after its body was read, the next ASGI message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def deadline_from(request: Request, start: float) -> float | None:
    """Absolute deadline from the X-Request-Timeout-Ms header, if any."""
    raw = request.headers.get("x-request-timeout-ms")
    if raw is None:
        return None
    try:
        return start + float(raw) / 1000
    except ValueError:
        raise InvalidInput("X-Request-Timeout-Ms must be a number of milliseconds") from None


def priority_from(request: Request) -> int:
    """Priority from the X-Request-Priority header (lower runs first; default 0)."""
    raw = request.headers.get("x-request-priority", "0")
    try:
        return int(raw)
    except ValueError:
        raise InvalidInput("X-Request-Priority must be an integer") from None
