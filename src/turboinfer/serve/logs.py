"""Server logs: one access line per request (never its body) and errors with tracebacks, as text or JSON lines.

Nothing is configured at import: the command that starts a server calls configure_logging once.
"""

from __future__ import annotations

import logging
import re
import sys
import time
import traceback
import uuid
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


class JsonLines(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the record's fields, a traceback if any."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage(),
            **getattr(record, "fields", {}),
        }  # fmt: skip
        if record.exc_info:
            data["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        return orjson.dumps(data, default=str).decode()


class Text(logging.Formatter):
    """`time level logger message key=value ...`, then the traceback if any."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = getattr(record, "fields", {})
        extra = " ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
        if not extra:
            return line
        head, _, tail = line.partition("\n")
        return f"{head} {extra}" + (f"\n{tail}" if tail else "")


def configure_logging(level: str = "info", fmt: LogFormat = "text") -> None:
    """Send turboinfer's logs (access and errors) to stderr at `level`, as text or JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if fmt == "json" else Text())
    root = logging.getLogger("turboinfer")
    root.handlers = [handler]
    root.setLevel(level.upper())
    root.propagate = False


def access_info(request: Request) -> dict[str, Any]:
    """The access-log fields of this request, which routes add to (model, queue and compute times, batch)."""
    state = request.scope.setdefault("state", {})
    return state.setdefault("access", {"id": uuid.uuid4().hex})


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
        info: dict[str, Any] = {"id": given if REQUEST_ID.match(given) else uuid.uuid4().hex}
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
