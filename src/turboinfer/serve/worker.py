"""Runs batches on a Session in worker threads, so the event loop never blocks on inference."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np

from turboinfer.runtime.session import Session
from turboinfer.serve.batcher import Pending

Tensors = dict[str, np.ndarray]


def stack(items: list[Tensors]) -> Tensors:
    """Concatenate each input along the batch axis."""
    return {name: np.concatenate([item[name] for item in items]) for name in items[0]}


def split(outputs: Tensors, sizes: list[int]) -> list[Tensors]:
    """Cut batched outputs back into per-request outputs of the given row counts."""
    bounds = np.cumsum([0, *sizes])
    return [{name: array[lo:hi] for name, array in outputs.items()} for lo, hi in pairwise(bounds)]


class ModelWorker:
    """One model's session and the threads that run its batches."""

    def __init__(self, session: Session, instances: int = 1) -> None:
        self.session = session
        self._executor = ThreadPoolExecutor(max_workers=instances, thread_name_prefix="infer")

    def infer(self, items: list[Tensors]) -> list[Tensors]:
        """Synchronous: stack, run, split (runs in a worker thread)."""
        return split(self.session.run(stack(items)), [len(next(iter(i.values()))) for i in items])

    async def run_batch(self, batch: list[Pending]) -> list[Tensors]:
        """The batcher's run_batch: infer off the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.infer, [p.payload for p in batch])

    def close(self) -> None:
        """Stop the worker threads."""
        self._executor.shutdown(wait=True)
