"""What can happen to an accepted or refused request in either front-end, apart from its own fault: mapped to
statuses by serve/http.py."""

from __future__ import annotations

from turboinfer.core.errors import TurboinferError


class QueueFull(TurboinferError):
    """The queue is at capacity: the request was not accepted (429 or 503 with Retry-After)."""


class DeadlineExceeded(TurboinferError):
    """The request's deadline passed before compute started (504)."""


class ShuttingDown(TurboinferError):
    """The server stopped accepting requests (503)."""


class EngineStopped(TurboinferError):
    """An engine loop has died; requests are refused (503) until the process is restarted."""


class EngineFailed(TurboinferError):
    """The engine failed while a request was in it; the request is lost, the engine restarts (503: retry)."""
