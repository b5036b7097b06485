"""Online A/B: a canary gets a share of a model's traffic; a shadow gets a copy of all of it, and its outputs are
compared with the primary's (top-1 agreement for classifiers, cosine for embedders) as metrics."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Hashable
from typing import Any, Literal

import numpy as np

from turboinfer.serve.split_config import SplitConfig
from turboinfer.serve.v2.batcher import Batcher, Trace
from turboinfer.serve.v2.metrics import ServerMetrics

Tensors = dict[str, np.ndarray]


def agreement(task: str, primary: Tensors, secondary: Tensors) -> tuple[float, float]:
    """(top-1 agreement, mean cosine) of the first output of two answers to the same request."""
    a = next(iter(primary.values())).reshape(len(next(iter(primary.values()))), -1).astype(np.float64)
    b = next(iter(secondary.values())).reshape(a.shape[0], -1).astype(np.float64)
    cosine = np.sum(a * b, axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    top1 = float(np.mean(a.argmax(1) == b.argmax(1))) if task == "classify" else float("nan")
    return top1, float(cosine.mean())


class TrafficSplit:
    """Routes one model's requests between its primary and a second variant, recording per-variant latency."""

    def __init__(self, model: str, task: str, primary: Batcher, secondary: Batcher, config: SplitConfig,
                 metrics: ServerMetrics, seed: int = 0) -> None:  # fmt: skip
        self.model, self.task, self.config, self.metrics = model, task, config, metrics
        self.primary, self.secondary = primary, secondary
        self._random = random.Random(seed)
        self._shadows: set[asyncio.Task[None]] = set()

    async def timed(self, variant: Literal["primary", "canary", "shadow"], batcher: Batcher, *args: Any) -> Tensors:
        """One submit, its latency recorded under the variant label."""
        start = time.perf_counter()
        result: Tensors = await batcher.submit(*args)
        self.metrics.variant_duration.labels(self.model, variant).observe(time.perf_counter() - start)
        return result

    async def infer(self, inputs: Tensors, rows: int, deadline: float | None, priority: int, key: Hashable = None,
                    trace: Trace | None = None) -> Tensors:  # fmt: skip
        """Answer from the primary or the canary; mirror to the shadow without making the client wait for it."""
        args = (inputs, rows, deadline, priority, key)
        if self.config.mode == "canary":
            if self._random.random() < self.config.share:
                return await self.timed("canary", self.secondary, *args, trace)
            return await self.timed("primary", self.primary, *args, trace)
        answer = await self.timed("primary", self.primary, *args, trace)
        task = asyncio.create_task(self.compare(args, answer))
        self._shadows.add(task)
        task.add_done_callback(self._shadows.discard)
        return answer

    async def compare(self, args: tuple, answer: Tensors) -> None:
        """Run the shadow on the same request and record how it agrees; its failures never reach the client."""
        try:
            shadow = await self.timed("shadow", self.secondary, *args)
        except Exception:  # a failing shadow is a finding, not an outage
            self.metrics.shadow_errors.labels(self.model).inc()
            return
        top1, cosine = agreement(self.task, answer, shadow)
        if self.task == "classify":
            self.metrics.shadow_top1.labels(self.model, "true" if top1 == 1.0 else "false").inc()
        self.metrics.shadow_cosine.labels(self.model).observe(cosine)

    async def drain(self) -> None:
        """Wait for mirrored requests still in flight."""
        await asyncio.gather(*self._shadows, return_exceptions=True)
