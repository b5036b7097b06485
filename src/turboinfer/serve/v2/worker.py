"""Runs batches on a Session in worker threads, so the event loop never blocks on inference; a failing batch is
retried one request at a time, so that only the requests the engine fails on get an error."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np

from turboinfer.runtime.session import Session
from turboinfer.serve.v2.batcher import Pending
from turboinfer.serve.v2.padding import SequencePadding, exact_key

log = logging.getLogger("turboinfer.serve")

Tensors = dict[str, np.ndarray]


def stack(items: list[Tensors]) -> Tensors:
    """Concatenate each input along the batch axis."""
    return {name: np.concatenate([item[name] for item in items]) for name in items[0]}


def split(outputs: Tensors, sizes: list[int]) -> list[Tensors]:
    """Cut batched outputs back into per-request outputs of the given row counts."""
    bounds = np.cumsum([0, *sizes])
    return [{name: array[lo:hi] for name, array in outputs.items()} for lo, hi in pairwise(bounds)]


def fixed_batch(session: Session) -> int | None:
    """The model's batch size when its graph fixes one (first dim an integer), else None."""
    first = session.inputs[0].shape[0] if session.inputs and session.inputs[0].shape else None
    return first if isinstance(first, int) else None


def run_fixed(session: Session, feeds: Tensors, size: int) -> Tensors:
    """Run a fixed-batch model on any number of rows: chunks of `size`, the last padded with zeros."""
    rows = len(next(iter(feeds.values())))
    parts = []
    for start in range(0, rows, size):
        chunk = {name: array[start : start + size] for name, array in feeds.items()}
        real = len(next(iter(chunk.values())))
        if real < size:
            chunk = {
                name: np.concatenate([a, np.zeros((size - real, *a.shape[1:]), a.dtype)]) for name, a in chunk.items()
            }
        parts.append({name: out[:real] for name, out in session.run(chunk).items()})
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


class ModelWorker:
    """One model's session and the threads that run its batches (sequence padding for text models, chunks for
    fixed-batch models)."""

    def __init__(self, session: Session, instances: int = 1, padding: SequencePadding | None = None) -> None:
        self.session = session
        self.fixed_batch = fixed_batch(session)
        self.padding = padding
        self._executor = ThreadPoolExecutor(max_workers=instances, thread_name_prefix="infer")

    def key(self, inputs: Tensors) -> Hashable:
        """Requests with equal keys may share a batch."""
        return exact_key(inputs) if self.padding is None else self.padding.key(inputs)

    def infer(self, items: list[Tensors]) -> list[Tensors]:
        """Synchronous: pad, stack, run (chunked for a fixed batch), split, cut back (runs in a worker thread)."""
        feeds = stack(items if self.padding is None else self.padding.pad(items))
        outputs = (
            self.session.run(feeds) if self.fixed_batch is None else run_fixed(self.session, feeds, self.fixed_batch)
        )
        answers = split(outputs, [len(next(iter(i.values()))) for i in items])
        if self.padding is not None:
            answers = [self.padding.cut(a, self.padding.length(i)) for a, i in zip(answers, items, strict=True)]
        return answers

    def infer_isolated(self, items: list[Tensors]) -> list[Tensors | Exception]:
        """infer, and when the batch fails, each request alone: one result or exception per request."""
        try:
            return list(self.infer(items))
        except Exception as err:
            if len(items) == 1:
                return [err]
            log.warning("a batch of %d requests failed (%s); running them one at a time", len(items), err)
        results: list[Tensors | Exception] = []
        for item in items:
            try:
                results.extend(self.infer([item]))
            except Exception as err:
                results.append(err)
        return results

    async def run_batch(self, batch: list[Pending]) -> list[Tensors | Exception]:
        """The batcher's run_batch: infer off the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.infer_isolated, [p.payload for p in batch])

    def probe(self, feeds: Tensors) -> Exception | None:
        """Run one sample batch (synchronously): None when the session can run, else the exception."""
        try:
            self.session.run(feeds)
        except Exception as err:
            return err
        return None

    def close(self) -> None:
        """Stop the worker threads."""
        self._executor.shutdown(wait=True)
