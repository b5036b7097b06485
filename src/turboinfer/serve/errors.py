"""What can happen to an accepted or refused request in either front-end, before any model sees it: mapped to
statuses by serve/http.py."""

from __future__ import annotations

from turboinfer.core.errors import TurboinferError


class QueueFull(TurboinferError):
    """The queue is at capacity: the request was not accepted (429 or 503 with Retry-After)."""


class DeadlineExceeded(TurboinferError):
    """The request's deadline passed before compute started (504)."""


class ShuttingDown(TurboinferError):
    """The server stopped accepting requests (503)."""
