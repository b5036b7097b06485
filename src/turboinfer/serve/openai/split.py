"""Online A/B for an LLM: a canary answers a share of its requests; a shadow gets a copy of every greedy request
after the primary answered it, and how far their greedy outputs agree is recorded (the share of tokens the two
have in common from the start: 1.0 when identical). A failing or refusing shadow never reaches a client."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

from prometheus_client import CollectorRegistry, Counter, Histogram

from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult
from turboinfer.serve.errors import QueueFull
from turboinfer.serve.openai.scheduler import GenerationScheduler
from turboinfer.serve.openai.ticket import Ticket
from turboinfer.serve.split_config import SplitConfig

AGREEMENT_BUCKETS = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0)


def greedy_agreement(a: list[int], b: list[int]) -> float:
    """Tokens two greedy outputs share from the start, as a share of the longer one (1.0 when both are empty)."""
    longest = max(len(a), len(b))
    if not longest:
        return 1.0
    same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return same / longest


class GenerationSplit:
    """Routes one LLM's requests between its primary scheduler and a second one."""

    def __init__(self, model: str, primary: GenerationScheduler, second: GenerationScheduler, config: SplitConfig,
                 registry: CollectorRegistry, seed: int = 0) -> None:  # fmt: skip
        self.model, self.primary, self.second, self.config = model, primary, second, config
        self._random = random.Random(seed)
        self._shadows: set[asyncio.Task[None]] = set()
        self.routed = Counter("turboinfer_llm_variant_requests", "LLM requests by the variant that answered them "
                              "(primary, canary) or got a copy (shadow).", ["model", "variant"],
                              registry=registry)  # fmt: skip
        self.agreement = Histogram("turboinfer_llm_shadow_agreement", "Greedy outputs of primary and shadow: share "
                                   "of tokens in common from the start.", ["model"], buckets=AGREEMENT_BUCKETS,
                                   registry=registry)  # fmt: skip
        self.shadow_outcomes = Counter("turboinfer_llm_shadow_requests", "Mirrored requests: compared, skipped "
                                       "(sampled, or the shadow's queue full) or failed.", ["model", "outcome"],
                                       registry=registry)  # fmt: skip

    def route(self) -> GenerationScheduler:
        """The scheduler that answers the next request."""
        if self.config.mode == "canary" and self._random.random() < self.config.share:
            self.routed.labels(self.model, "canary").inc()
            return self.second
        self.routed.labels(self.model, "primary").inc()
        return self.primary

    def mirror(self, ticket: Ticket, result: GenerationResult) -> None:
        """Shadow mode: send the answered request to the shadow (greedy ones only) and compare when it ends."""
        if self.config.mode != "shadow":
            return
        if not ticket.request.sampling.greedy:
            self.shadow_outcomes.labels(self.model, "skipped").inc()
            return
        request = replace(ticket.request, max_tokens=max(1, result.completion_tokens))
        task = asyncio.create_task(self.compare(ticket, request, result))
        self._shadows.add(task)
        task.add_done_callback(self._shadows.discard)

    async def compare(self, ticket: Ticket, request: GenerationRequest, result: GenerationResult) -> None:
        """Run the shadow on the same request; record how its greedy output agrees with the primary's."""
        try:
            copy = self.second.submit(Ticket(request, asyncio.get_running_loop(), ticket.messages))
            self.routed.labels(self.model, "shadow").inc()
            shadow = await copy.result()
        except Exception as err:  # a failing shadow is a finding, not an outage
            self.shadow_outcomes.labels(self.model, "skipped" if isinstance(err, QueueFull) else "failed").inc()
            return
        self.shadow_outcomes.labels(self.model, "compared").inc()
        self.agreement.labels(self.model).observe(greedy_agreement(result.tokens, shadow.tokens))

    async def drain(self) -> None:
        """Wait for mirrored requests still in flight."""
        await asyncio.gather(*self._shadows, return_exceptions=True)
