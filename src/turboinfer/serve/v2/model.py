"""One model served over KServe V2: its workers, batchers, image pipeline, health and limits; and one request as
the answering function sees it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from turboinfer.core.card import ModelCard
from turboinfer.core.types import V2_DATATYPES
from turboinfer.models.image_pipeline import ImagePipeline
from turboinfer.serve.errors import QueueFull
from turboinfer.serve.v2.batcher import Batcher, Trace
from turboinfer.serve.v2.health import ModelHealth
from turboinfer.serve.v2.traffic import TrafficSplit
from turboinfer.serve.v2.worker import ModelWorker


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
