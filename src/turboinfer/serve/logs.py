"""Server logs: one access line per request (never its body) and errors with tracebacks, as text or JSON lines.

Records are handed to a queue and formatted and written by a thread of their own, so the event loop never waits
on a write. Nothing is configured at import: the command that starts a server calls configure_logging once.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import logging
import logging.handlers
import os
import queue
import re
import sys
import time
import traceback
from typing import Any, Literal

import orjson
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

ACCESS = logging.getLogger("turboinfer.access")
ERRORS = logging.getLogger("turboinfer.serve")
LogFormat = Literal["text", "json"]
LEVELS = ("debug", "info", "warning", "error")
REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
"""A client's X-Request-Id is echoed only when it is this tame; otherwise the server makes one."""
SERIALS = itertools.count(1)


@functools.cache
def id_prefix() -> str:
    """This process's part of its request ids: its pid and start time (a restart never repeats an id)."""
    return f"{os.getpid():x}{int(time.time()) % 0x10000:04x}"


def new_request_id() -> str:
    """A request id unique to this server process: its prefix and a serial (no random syscall per request)."""
    return f"{id_prefix()}-{next(SERIALS)}"


def traceback_text(record: logging.LogRecord) -> str:
    """The record's traceback as text ("" when it has none)."""
    if record.exc_info:
        return "".join(traceback.format_exception(*record.exc_info))
    return record.exc_text or ""


class JsonLines(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the record's fields, a traceback if any."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage(),
            **getattr(record, "fields", {}),
        }  # fmt: skip
        if record.exc_info or record.exc_text:
            data["traceback"] = traceback_text(record)
        return orjson.dumps(data, default=str).decode()


class Text(logging.Formatter):
    """`time level logger message key=value ...`, then the traceback if any."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", {})
        extra = " ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
        line = self.formatMessage(self._record_with_time(record)) + (f" {extra}" if extra else "")
        trace = traceback_text(record)
        return f"{line}\n{trace.rstrip()}" if trace else line

    def _record_with_time(self, record: logging.LogRecord) -> logging.LogRecord:
        record.message = record.getMessage()
        record.asctime = self.formatTime(record)
        return record


class Deferred(logging.handlers.QueueHandler):
    """Hands records to the writer thread: the message merged and any traceback rendered now, nothing else."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record.exc_text = traceback_text(record) or None
        record.msg, record.args, record.exc_info = record.getMessage(), None, None
        return record


def configure_logging(level: str = "info", fmt: LogFormat = "text") -> None:
    """Send turboinfer's logs (access and errors) to stderr at `level`, as text or JSON lines, written by a thread
    of their own (flushed at exit)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if fmt == "json" else Text())
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    writer = logging.handlers.QueueListener(records, handler)
    writer.start()
    atexit.register(writer.stop)
    root = logging.getLogger("turboinfer")
    root.handlers = [Deferred(records)]
    root.setLevel(level.upper())
    root.propagate = False


def access_info(request: Request) -> dict[str, Any]:
    """The access-log fields of this request, which routes add to (model, queue and compute times, batch)."""
    state = request.scope.setdefault("state", {})
    return state.setdefault("access", {"id": new_request_id()})


class AccessLog:
    """ASGI middleware: a request id (the client's X-Request-Id or a new one, echoed in the response), one access
    line per request, and a 500 JSON answer with the id for any exception that escaped the routes (logged with
    its traceback)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        info: dict[str, Any] = {"id": given if REQUEST_ID.match(given) else new_request_id()}
        scope.setdefault("state", {})["access"] = info
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", info["id"].encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            ERRORS.exception("unhandled error", extra={"fields": {"id": info["id"], "route": scope["path"]}})
            if status == 0:
                body = orjson.dumps({"error": "internal server error", "request_id": info["id"]})
                await send_with_id({"type": "http.response.start", "status": 500,
                                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
                await send({"type": "http.response.body", "body": body})
        finally:
            if ACCESS.isEnabledFor(logging.INFO):
                ms = (time.perf_counter() - start) * 1000
                fields = {"id": info["id"], "method": scope["method"], "route": scope["path"], "status": status,
                          **{k: v for k, v in info.items() if k != "id"}, "total_ms": round(ms, 2)}  # fmt: skip
                ACCESS.info("request", extra={"fields": fields})
