"""The scheduler and its engine core against a fake engine (no model: each step gives every running request one
word): admission up to the stream limit, text streamed as the result holds it, cancellation mid-stream, requests
refused alone (KV exhaustion, an engine error at add), an engine failure that fails only what ran and restarts,
and a drain that finishes everything accepted. The real engines are served in test_openai*.py."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from tests.support.llm_server import wait_for
from turboinfer.core.errors import InvalidInput
from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult, OnText
from turboinfer.serve.errors import EngineFailed
from turboinfer.serve.openai.engine_process import LocalEngine
from turboinfer.serve.openai.metrics import GenerationMetrics
from turboinfer.serve.openai.scheduler import GenerationScheduler, SchedulerConfig
from turboinfer.serve.openai.ticket import Ticket

STEP_S = 0.005


class FakeEngine:
    """Words for tokens: a request generates "w0 w1 …", one word a step, and a step takes STEP_S. A step waits
    while `gate` is closed and raises `fault` once when it is set; a prompt whose first word is "contaminated" is
    refused at add."""

    engine, context = "fake", 64

    def __init__(self) -> None:
        self._keys = itertools.count()
        self.live: dict[int, tuple[GenerationRequest, list[str], OnText | None]] = {}
        self.done: dict[int, GenerationResult] = {}
        self.cancelled: list[int] = []
        self.most_at_once = 0
        self.gate = threading.Event()
        self.gate.set()
        self.fault: Exception | None = None

    def tokenize(self, text: str) -> list[int]:
        return [len(word) for word in text.split()]

    def chat(self, messages: list[dict[str, str]]) -> str:
        return " ".join(m["content"] for m in messages)

    def add(self, request: GenerationRequest, on_text: OnText | None = None) -> int:
        if request.prompt[0] == len("contaminated"):
            raise ValueError("poisoned prompt")
        key = next(self._keys)
        self.live[key] = (request, [], on_text)
        self.most_at_once = max(self.most_at_once, len(self.live))
        return key

    def step(self) -> list[int]:
        self.gate.wait()
        time.sleep(STEP_S)
        fault, self.fault = self.fault, None
        if fault is not None:
            raise fault
        finished = []
        for key, (request, words, on_text) in list(self.live.items()):
            words.append(f"w{len(words)} ")
            if on_text is not None:
                on_text(words[-1])
            if len(words) == request.max_tokens:
                del self.live[key]
                tokens = list(range(len(words)))
                self.done[key] = GenerationResult(tokens, "".join(words), "length", len(request.prompt), 0.0)
                finished.append(key)
        return finished

    def result(self, key: int) -> GenerationResult:
        return self.done.pop(key)

    def cancel(self, key: int) -> None:
        self.cancelled.append(key)
        self.live.pop(key, None)

    def cache_usage(self) -> float:
        return len(self.live) / 8

    def describe(self) -> dict[str, Any]:
        return {"engine": "fake"}


@pytest.fixture
def fake() -> FakeEngine:
    return FakeEngine()


def scheduling(fake: FakeEngine, **limits: Any) -> tuple[GenerationScheduler, GenerationMetrics]:
    metrics = GenerationMetrics(CollectorRegistry())
    config = SchedulerConfig(**{"max_running": 2, "queue_size": 8, **limits})
    scheduler = GenerationScheduler("fake", LocalEngine(fake), config, metrics)
    scheduler.start()
    wait_for(lambda: scheduler.state == "ready")
    return scheduler, metrics


async def generate(scheduler: GenerationScheduler, prompt: str, tokens: int) -> tuple[str, GenerationResult]:
    """(streamed text, result) of one request."""
    ticket = scheduler.submit(Ticket(GenerationRequest(prompt, max_tokens=tokens), asyncio.get_running_loop()))
    pieces = []
    while True:
        kind, value = await ticket.next()
        if kind == "text":
            pieces.append(value)
        elif kind == "done":
            return "".join(pieces), value
        elif kind == "error":
            raise value


def test_requests_share_the_streams_and_stream_what_their_results_hold(fake):
    scheduler, metrics = scheduling(fake)

    async def many() -> list[tuple[str, GenerationResult]]:
        return await asyncio.gather(*(generate(scheduler, f"prompt {i}", 3 + i) for i in range(5)))

    answers = asyncio.run(many())
    scheduler.stop()
    assert [result.text for _, result in answers] == ["".join(f"w{j} " for j in range(3 + i)) for i in range(5)]
    assert all(streamed == result.text for streamed, result in answers)
    assert fake.most_at_once == 2  # never more than the stream limit in the engine
    assert metrics.prefix_queries.labels("fake")._value.get() == 5 * 2  # two-word prompts, prepared in the core


def test_a_cancelled_stream_leaves_the_engine_and_the_others_finish(fake):
    scheduler, _ = scheduling(fake)

    async def cancel_one() -> str:
        loop = asyncio.get_running_loop()
        doomed = scheduler.submit(Ticket(GenerationRequest("long one", max_tokens=60), loop))
        while (await doomed.next())[0] != "text":
            pass
        scheduler.cancel(doomed)
        return (await generate(scheduler, "short one", 4))[1].text

    assert asyncio.run(cancel_one()) == "w0 w1 w2 w3 "
    wait_for(lambda: scheduler.running == 0)
    scheduler.stop()
    assert len(fake.cancelled) == 1 and not fake.live  # out of the engine, not run to its 60 words


def test_requests_the_limits_or_the_engine_refuse_fail_alone(fake):
    scheduler, _ = scheduling(fake, kv_tokens=16)

    async def refused(prompt: str, tokens: int) -> Exception:
        with pytest.raises(Exception) as raised:
            await generate(scheduler, prompt, tokens)
        return raised.value

    too_long = asyncio.run(refused("a b c d e f", 12))
    assert isinstance(too_long, InvalidInput) and "more than the 16 tokens one request can hold" in str(too_long)
    poisoned = asyncio.run(refused("contaminated words", 2))
    assert isinstance(poisoned, ValueError) and "poisoned prompt" in str(poisoned)
    assert asyncio.run(generate(scheduler, "still fine", 2))[1].text == "w0 w1 "
    scheduler.stop()
    assert scheduler.failures == 0  # none of it counted against the engine


def test_an_engine_failure_fails_what_ran_and_the_queue_runs_on_the_restarted_core(fake):
    scheduler, metrics = scheduling(fake, max_running=1)

    async def fail_one() -> tuple[Exception, str]:
        loop = asyncio.get_running_loop()
        running = scheduler.submit(Ticket(GenerationRequest("first", max_tokens=40), loop))
        while (await running.next())[0] != "text":
            pass
        queued = asyncio.ensure_future(generate(scheduler, "second", 3))
        await asyncio.sleep(0.05)
        fake.fault = RuntimeError("device lost")
        with pytest.raises(EngineFailed) as failed:
            await running.result()
        return failed.value, (await queued)[1].text

    failure, second = asyncio.run(fail_one())
    scheduler.stop()
    assert "device lost" in str(failure) and "restarting, retry" in str(failure)
    assert second == "w0 w1 w2 "  # it waited in the queue and ran after the restart
    assert metrics.engine_restarts.labels("fake")._value.get() == 1


def test_a_drain_finishes_what_was_accepted(fake):
    scheduler, _ = scheduling(fake, max_running=1)

    async def drain() -> list[str]:
        fake.gate.clear()
        jobs = [asyncio.ensure_future(generate(scheduler, f"p {i}", 3)) for i in range(3)]
        await asyncio.sleep(0.05)
        stopper = threading.Thread(target=scheduler.stop)
        stopper.start()
        fake.gate.set()
        texts = [(await job)[1].text for job in jobs]
        stopper.join(10)
        return texts

    start = time.perf_counter()
    assert asyncio.run(drain()) == ["w0 w1 w2 "] * 3
    assert scheduler.state == "stopped" and time.perf_counter() - start < 10
