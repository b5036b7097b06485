"""Server-wide limits both front-ends keep (body size and timeout, the answer to a full queue) and the V2
batcher's defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from turboinfer.serve.v2.batcher import BatcherConfig


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
