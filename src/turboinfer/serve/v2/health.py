"""Whether a served model's sessions can still run: after a batch the engine failed on, a sample batch is run;
while it fails the model is not ready (readiness 503, so load balancers send traffic elsewhere), and it is tried
again every interval until it runs."""

from __future__ import annotations

import asyncio
import logging

import numpy as np

from turboinfer.serve.v2.worker import ModelWorker

log = logging.getLogger("turboinfer.serve")


class ModelHealth:
    """One model's health, checked on demand by running `feeds` (a sample batch) on a worker's session."""

    def __init__(self, model: str, feeds: dict[str, np.ndarray], interval_s: float = 1.0) -> None:
        self.model, self.feeds, self.interval_s = model, feeds, interval_s
        self.healthy = True
        self.reason = ""
        """Why the model is not ready (the last probe's error), empty while healthy."""
        self._task: asyncio.Task[None] | None = None

    def check(self, worker: ModelWorker) -> None:
        """Start checking the worker's session (once at a time), on the running event loop."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._probe(worker), name=f"health-{self.model}")

    async def _probe(self, worker: ModelWorker) -> None:
        while True:
            err = await asyncio.to_thread(worker.probe, self.feeds)
            if err is None:
                if not self.healthy:
                    log.warning("model %s runs again; ready", self.model)
                self.healthy, self.reason = True, ""
                return
            if self.healthy:
                log.error("model %s cannot run a sample batch (%s); not ready until it can", self.model, err)
            self.healthy, self.reason = False, f"the session cannot run: {type(err).__name__}"
            await asyncio.sleep(self.interval_s)

    def stop(self) -> None:
        """Stop checking (at shutdown)."""
        if self._task is not None:
            self._task.cancel()
