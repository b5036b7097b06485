"""Dynamic batcher: a bounded queue, batches closed when full or after a delay, deadlines checked before compute.

Pure asyncio, no HTTP: the caller awaits `submit`, a single loop forms batches and hands them to `run_batch`.
An exception from `run_batch` fails that batch's requests only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from turboinfer.core.errors import TurboinferError


class QueueFull(TurboinferError):
    """The queue is at capacity: the request was not accepted (429 or 503 with Retry-After)."""


class DeadlineExceeded(TurboinferError):
    """The request's deadline passed before compute started (504)."""


class ShuttingDown(TurboinferError):
    """The server stopped accepting requests (503)."""


@dataclass(frozen=True)
class BatcherConfig:
    """Batching knobs (per model)."""

    max_batch: int = 8
    max_delay_s: float = 0.002
    """How long the first request of a batch may wait for company, seconds."""
    queue_size: int = 256
    """Requests accepted but not yet computed; beyond it, submit raises QueueFull."""
    instances: int = 1
    """Batches computed at the same time (one batching loop each)."""
    preferred: tuple[int, ...] = ()
    """Batch sizes worth closing at without waiting out the delay (e.g. sizes the model was tuned for)."""


@dataclass
class Pending:
    """One accepted request waiting for its batch."""

    payload: Any
    size: int
    """Rows it contributes to the batch (its own batch dimension)."""
    deadline: float | None
    future: asyncio.Future[Any]
    priority: int = 0
    """Lower runs first; equal priorities keep arrival order."""
    enqueued: float = field(default_factory=time.perf_counter)

    def __lt__(self, other: Pending) -> bool:
        return (self.priority, self.enqueued) < (other.priority, other.enqueued)


@dataclass(frozen=True)
class BatchReport:
    """What one batch was: its size, why it closed, how long its requests queued, how long compute took."""

    size: int
    requests: int
    reason: str
    """"full", "preferred", "delay" or "drain"."""
    queue_s: tuple[float, ...]
    compute_s: float
    expired: int


RunBatch = Callable[[list[Pending]], Awaitable[list[Any]]]


class Batcher:
    """Forms batches from submitted requests and runs them one at a time per batcher."""

    def __init__(
        self, config: BatcherConfig, run_batch: RunBatch, on_batch: Callable[[BatchReport], None] | None = None
    ):
        self.config = config
        self._run_batch = run_batch
        self._on_batch = on_batch or (lambda report: None)
        self._queue: asyncio.PriorityQueue[Pending] = asyncio.PriorityQueue()
        self._accepting = True
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def depth(self) -> int:
        """Requests accepted and not yet in a running batch."""
        return self._queue.qsize()

    def start(self) -> None:
        """Start the batching loops (one per instance) on the running event loop."""
        self._tasks = [asyncio.create_task(self._loop(), name=f"batcher-{i}") for i in range(self.config.instances)]

    async def submit(self, payload: Any, size: int = 1, deadline: float | None = None, priority: int = 0) -> Any:
        """Queue one request and wait for its result; QueueFull at once when the queue is at capacity."""
        if not self._accepting:
            raise ShuttingDown("server is shutting down")
        if self._queue.qsize() >= self.config.queue_size:
            raise QueueFull(f"queue full ({self.config.queue_size} requests waiting)")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(Pending(payload, size, deadline, future, priority))
        return await future

    async def stop(self) -> None:
        """Stop accepting, compute everything already accepted, then end the loop."""
        self._accepting = False
        await self._queue.join()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _collect(self) -> tuple[list[Pending], str]:
        """One batch: the first request, then whatever arrives within max_delay_s, up to max_batch rows."""
        first = await self._queue.get()
        batch, rows = [first], first.size
        close_at = first.enqueued + self.config.max_delay_s
        while rows < self.config.max_batch:
            if rows in self.config.preferred and self._queue.empty():
                return batch, "preferred"
            if not self._queue.empty():
                item = self._queue.get_nowait()
            else:
                remaining = close_at - time.perf_counter()
                if remaining <= 0 or not self._accepting:
                    return batch, "delay" if self._accepting else "drain"
                try:
                    item = await asyncio.wait_for(self._queue.get(), remaining)
                except TimeoutError:
                    return batch, "delay"
            batch.append(item)
            rows += item.size
        return batch, "full"

    async def _loop(self) -> None:
        while True:
            batch, reason = await self._collect()
            try:
                await self._run(batch, reason)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _run(self, batch: list[Pending], reason: str) -> None:
        now = time.perf_counter()
        live = []
        for item in batch:
            if item.deadline is not None and now > item.deadline:
                item.future.set_exception(DeadlineExceeded("deadline passed while queued; not computed"))
            elif not item.future.cancelled():
                live.append(item)
        start = time.perf_counter()
        if live:
            try:
                results = await self._run_batch(live)
            except Exception as err:  # isolate: this batch's requests fail, the loop and other batches go on
                for item in live:
                    if not item.future.done():
                        item.future.set_exception(err)
            else:
                for item, result in zip(live, results, strict=True):
                    if not item.future.done():
                        item.future.set_result(result)
        self._on_batch(BatchReport(
            size=sum(i.size for i in live), requests=len(live), reason=reason,
            queue_s=tuple(start - i.enqueued for i in live), compute_s=time.perf_counter() - start,
            expired=len(batch) - len(live),
        ))  # fmt: skip
