"""Dynamic batcher: a bounded queue, batches closed when full or after a delay, deadlines checked before compute.

Pure asyncio, no HTTP: the caller awaits `submit`, a single loop forms batches and hands them to `run_batch`.
Requests join a batch only when their keys match. An exception from `run_batch` fails that batch's requests only;
no exception ends the loop, and requests whose caller went away are skipped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from turboinfer.serve.errors import DeadlineExceeded, QueueFull, ShuttingDown

log = logging.getLogger("turboinfer.serve")


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
    seq_bucket: int = 32
    """Text models with an attention mask: requests whose token counts round up to the same multiple of this share
    a batch, padded to the longest (0: any lengths share one). See serve.padding."""


@dataclass
class Trace:
    """What happened to one request in the batcher, filled in when its batch ran (for the access log)."""

    queue_s: float = 0.0
    compute_s: float = 0.0
    batch_rows: int = 0


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
    key: Hashable = None
    """Requests share a batch only when their keys are equal (e.g. the shapes of their non-batch dims)."""
    trace: Trace | None = None
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
    """Requests dropped because their deadline passed while they queued."""
    cancelled: int = 0
    """Requests whose caller had gone (client disconnected) before the batch ran: not computed."""
    failed: int = 0
    """Requests of this batch that the engine failed on."""


RunBatch = Callable[[list[Pending]], Awaitable[list[Any]]]
"""Runs a batch: one result per request, in order; an Exception in place of a result fails that request only."""


class Batcher:
    """Forms batches from submitted requests and runs them one at a time per batching loop."""

    def __init__(
        self, config: BatcherConfig, run_batch: RunBatch, on_batch: Callable[[BatchReport], None] | None = None
    ):
        self.config = config
        self._run_batch = run_batch
        self._on_batch = on_batch or (lambda report: None)
        self._queue: asyncio.PriorityQueue[Pending] = asyncio.PriorityQueue()
        self._accepting = True
        self._tasks: list[asyncio.Task[None]] = []
        self.computing = 0
        """Requests in batches being computed now."""

    @property
    def depth(self) -> int:
        """Requests accepted and not yet in a running batch."""
        return self._queue.qsize()

    def start(self) -> None:
        """Start the batching loops (one per instance) on the running event loop."""
        self._tasks = [asyncio.create_task(self._loop(), name=f"batcher-{i}") for i in range(self.config.instances)]

    async def submit(
        self, payload: Any, size: int = 1, deadline: float | None = None, priority: int = 0, key: Hashable = None,
        trace: Trace | None = None,
    ) -> Any:  # fmt: skip
        """Queue one request and wait for its result; QueueFull at once when the queue is at capacity."""
        if not self._accepting:
            raise ShuttingDown("server is shutting down")
        if self._queue.qsize() >= self.config.queue_size:
            raise QueueFull(f"queue full ({self.config.queue_size} requests waiting)")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(Pending(payload, size, deadline, future, priority, key, trace))
        return await future

    async def stop(self) -> None:
        """Stop accepting, compute everything already accepted, then end the loops. Always returns: should a loop
        have ended (it cannot, short of a bug), what is left in the queue fails with ShuttingDown."""
        self._accepting = False
        drained = asyncio.ensure_future(self._queue.join())
        await asyncio.wait([drained, *self._tasks], return_when=asyncio.FIRST_COMPLETED)
        if not drained.done():
            log.error("a batching loop ended early; failing the %d requests left in the queue", self.depth)
            while not self._queue.empty():
                settle(self._queue.get_nowait().future, ShuttingDown("server stopped before this request ran"))
                self._queue.task_done()
            drained.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _next(self, timeout: float | None) -> Pending | None:
        """The next queued request, or None when none arrives within timeout (None: wait forever)."""
        if not self._queue.empty():
            return self._queue.get_nowait()
        if timeout is None:
            return await self._queue.get()
        if timeout <= 0:
            return None
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None

    async def _collect(self) -> tuple[list[Pending], str]:
        """One batch: the first request, then requests with its key that arrive within max_delay_s, up to max_batch
        rows. Requests with another key go back to the queue for a later batch, keeping their place."""
        first = await self._next(None)
        assert first is not None
        batch, rows, others = [first], first.size, []
        close_at = first.enqueued + self.config.max_delay_s
        reason = "full"
        try:
            while rows < self.config.max_batch:
                if rows in self.config.preferred and self._queue.empty():
                    reason = "preferred"
                    break
                remaining = close_at - time.perf_counter() if self._accepting else 0.0
                item = await self._next(remaining if self._queue.empty() else 0.0)
                if item is None:
                    reason = "delay" if self._accepting else "drain"
                    break
                if item.key != first.key:
                    others.append(item)
                    continue
                batch.append(item)
                rows += item.size
        finally:
            for item in others:  # back in the queue before task_done, so that join() never sees it empty early
                self._queue.put_nowait(item)
                self._queue.task_done()
        return batch, reason

    async def _loop(self) -> None:
        """Batch after batch until cancelled; no exception ends it."""
        while True:
            batch, reason = await self._collect()
            try:
                await self._run(batch, reason)
            except Exception:  # a bug in a callback must not end batching for everyone
                log.exception("batch of %d requests failed outside the engine", len(batch))
                for item in batch:
                    settle(item.future, RuntimeError("the batch failed outside the engine"))
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _run(self, batch: list[Pending], reason: str) -> None:
        now = time.perf_counter()
        live, expired = [], 0
        for item in batch:
            if item.future.done():  # the caller went away (cancelled); nothing to compute or answer
                continue
            if item.deadline is not None and now > item.deadline:
                item.future.set_exception(DeadlineExceeded("deadline passed while queued; not computed"))
                expired += 1
            else:
                live.append(item)
        start = time.perf_counter()
        failed = 0
        if live:
            self.computing += len(live)
            try:
                results = await self._run_batch(live)
                if len(results) != len(live):
                    raise RuntimeError(f"the batch gave {len(results)} results for {len(live)} requests")
            except Exception as err:  # isolate: this batch's requests fail, the loop and other batches go on
                results = [err] * len(live)
            finally:
                self.computing -= len(live)
            compute = time.perf_counter() - start
            rows = sum(i.size for i in live)
            for item, result in zip(live, results, strict=True):
                if item.trace is not None:
                    item.trace.queue_s, item.trace.compute_s, item.trace.batch_rows = (
                        start - item.enqueued,
                        compute,
                        rows,
                    )
                failed += isinstance(result, Exception)
                settle(item.future, result)
        self._on_batch(BatchReport(
            size=sum(i.size for i in live), requests=len(live), reason=reason,
            queue_s=tuple(start - i.enqueued for i in live), compute_s=time.perf_counter() - start,
            expired=expired, cancelled=len(batch) - len(live) - expired, failed=failed,
        ))  # fmt: skip


def settle(future: asyncio.Future[Any], result: Any) -> None:
    """Give a waiting caller its result (or exception); a caller that already went away is skipped."""
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)
