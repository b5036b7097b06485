"""The LLM scheduler: one thread owns a generator engine and runs its loop. Requests wait in a bounded priority
queue, join the running batch between engine steps (continuous batching; the engine chunks long prefills) and
leave it when they finish, pass their deadline or lose their client (cancelled within one step). Text streams
back to each request's event loop as it becomes final.

Failures are contained where they happen: a request the engine refuses to add fails alone (400 for a value the
client sent, 500 otherwise). An engine that fails a step, dies or stops answering (an idle engine is pinged every
HEARTBEAT_S) fails the requests inside it with EngineFailed (503: retry), and is restarted with back-off while
the state says "restarting" (health not ready); the queue waits for it, and serving resumes by itself. Every
request has a deadline (its own, or the server's request_timeout_s), so none waits forever."""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from turboinfer.core.errors import InvalidInput
from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult, OnText
from turboinfer.serve.errors import DeadlineExceeded, EngineFailed, EngineStopped, QueueFull, ShuttingDown
from turboinfer.serve.openai.admission import FirstTokenForecast
from turboinfer.serve.openai.engine_process import EngineGone
from turboinfer.serve.openai.metrics import GenerationMetrics
from turboinfer.serve.openai.prefix import PrefixBook
from turboinfer.serve.openai.ticket import Ticket

log = logging.getLogger("turboinfer.serve")
State = Literal["loading", "ready", "restarting", "dead", "stopped"]
WARM_UP = GenerationRequest("Hello", max_tokens=4, ignore_eos=True)
HEARTBEAT_S = 2.0
"""An idle engine is pinged this often (a dead or hung engine process is found before a request needs it)."""
BACKOFF_S = (0.5, 30.0)
"""The first wait before restarting a failed engine, and the longest (doubling while restarts keep failing)."""
MAX_FAILURES = 8
"""Engine failures in a row (no request finished in between) after which the engine is given up: dead, liveness
red, so the orchestrator restarts the whole process."""


class Engine(Protocol):
    """What the scheduler drives: requests added, stepped together, collected or cancelled."""

    engine: str
    context: int

    def tokenize(self, text: str) -> list[int]: ...
    def chat(self, messages: list[dict[str, str]]) -> str: ...
    def add(self, request: GenerationRequest, on_text: OnText | None = None) -> int: ...
    def step(self) -> list[int]: ...
    def result(self, key: int) -> GenerationResult: ...
    def cancel(self, key: int) -> None: ...
    def cache_usage(self) -> float: ...
    def describe(self) -> dict[str, Any]: ...
    def ping(self) -> None: ...
    def restart(self) -> None: ...


@dataclass(frozen=True)
class SchedulerConfig:
    """How many streams run at once, how many may wait, and the limits of one request."""

    max_running: int = 16
    """Streams in the engine's batch at once; more wait in the queue."""
    queue_size: int = 64
    """Requests waiting for a stream when every stream is busy; beyond this, refused at once (429 or 503)."""
    max_new_tokens: int = 2048
    """The most tokens one request may ask for."""
    default_max_tokens: int = 512
    """Tokens generated when a request does not say (or fewer, to fit the context)."""
    kv_tokens: int = 0
    """Tokens the KV cache holds in all (0: unknown); a request that alone would not fit is refused."""
    ttft_target_s: float = 0.0
    """Refuse at once a request predicted to wait longer than this for its first token — or to wait for a stream
    at all (0: off; admission by queue size alone)."""
    request_timeout_s: float = 600.0
    """The deadline of a request that sets none (X-Request-Timeout-Ms), from its arrival: queue, prefill and
    generation included (504 past it)."""
    vocab: int = 0
    """Token ids a prompt may hold are 0..vocab - 1 (0: unknown, unchecked)."""


class GenerationScheduler:
    """Runs one engine in a thread of its own; `submit` and `cancel` are called from the event loop."""

    def __init__(self, name: str, engine: Engine, config: SchedulerConfig, metrics: GenerationMetrics) -> None:
        self.name, self.engine, self.config, self.metrics = name, engine, config, metrics
        self.state: State = "loading"
        self.reason = "loading and warming up"
        self._cond = threading.Condition()
        self._waiting: list[tuple[int, int, Ticket]] = []
        self._order = itertools.count()
        self._cancels: list[Ticket] = []
        self._running: dict[int, Ticket] = {}
        self._unstarted: set[int] = set()
        """Keys of running requests without their first token yet (their prompts still to prefill)."""
        self.forecast = FirstTokenForecast()
        self._stopping = False
        self.failures = 0
        """Engine failures since a request last finished (the restart back-off doubles with each)."""
        self._thread = threading.Thread(target=self._run, name=f"engine-{name}", daemon=True)
        self.prefixes = PrefixBook(max_tokens=max(config.kv_tokens, 65536))

    @property
    def waiting(self) -> int:
        """Requests queued for a slot."""
        return len(self._waiting)

    @property
    def running(self) -> int:
        """Requests in the engine's batch."""
        return len(self._running)

    def start(self) -> None:
        """Start the engine thread: a warm-up generation, then ready."""
        self._thread.start()

    def check_room(self) -> None:
        """Refuse at once (before a body is read) when the queue is full, the engine died or the server drains.
        While the engine restarts, requests queue for it."""
        if self.state == "dead":
            raise EngineStopped(f"the {self.name} engine has stopped: {self.reason}")
        if self._stopping:
            raise ShuttingDown("the server is shutting down")
        free = max(0, self.config.max_running - self.running)  # arrivals about to take a free stream
        if self.waiting >= self.config.queue_size + free:
            raise QueueFull(f"queue full ({self.config.queue_size} requests waiting for one of "
                            f"{self.config.max_running} streams)")  # fmt: skip
        if self.config.ttft_target_s:
            self.check_first_token(free)

    def check_first_token(self, free: int) -> None:
        """QueueFull when a new request would miss the TTFT target: it would wait for a stream (a whole generation
        to end), or the prompts ahead of it would take too long to prefill."""
        target_ms = self.config.ttft_target_s * 1e3
        if self.waiting >= free:
            raise QueueFull(f"every stream is busy; waiting for one would miss the {target_ms:.0f} ms TTFT target")
        wait = self.forecast.wait_s(self.waiting + len(self._unstarted))
        if wait > self.config.ttft_target_s:
            raise QueueFull(f"a first token would take about {wait * 1e3:.0f} ms (prompts ahead of it to prefill), "
                            f"over the {target_ms:.0f} ms TTFT target")  # fmt: skip

    def submit(self, ticket: Ticket) -> Ticket:
        """Queue a ticket for the engine (its events follow on its loop); its deadline is at most the server's."""
        latest = ticket.arrived + self.config.request_timeout_s
        ticket.deadline = latest if ticket.deadline is None else min(ticket.deadline, latest)
        with self._cond:
            self.check_room()
            heapq.heappush(self._waiting, (ticket.priority, next(self._order), ticket))
            self._cond.notify()
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        """Drop a ticket whose client is gone: out of the queue, or out of the engine at its next step."""
        with self._cond:
            if not ticket.finished and not ticket.cancelled:
                ticket.cancelled = True
                self._cancels.append(ticket)
                self._cond.notify()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Finish what was accepted (running and waiting), then end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        close = getattr(self.engine, "close", None)  # an engine in a process of its own ends with the scheduler
        if close is not None:
            close()
        if self.state != "dead":
            self.state, self.reason = "stopped", "stopped"

    def _run(self) -> None:
        try:
            while True:
                try:
                    self._generate_once(WARM_UP)
                    self.state, self.reason = "ready", ""
                    log.info("%s ready (%s)", self.name, self.engine.engine)
                    while self._work():
                        pass
                    return
                except Exception as err:  # the engine failed: its requests fail, it restarts, the queue waits
                    if not self._restart(err):
                        return
        except Exception as err:  # this loop itself broke: fail everything, turn unhealthy
            self._die(err)

    def _restart(self, err: Exception) -> bool:
        """After an engine failure: fail the requests inside it, wait the back-off, restart it; False when the
        server stops meanwhile (the queue is failed then)."""
        self.failures += 1
        self.metrics.engine_failures.labels(self.name).inc()
        cause = f"{type(err).__name__}: {str(err)[:200]}"
        log.error("the %s engine failed (%s); restarting it", self.name, cause, exc_info=err)
        self.state, self.reason = "restarting", f"restarting after {cause}"
        lost, self._running = list(self._running.values()), {}
        self._unstarted.clear()
        for ticket in lost:
            self._fail(ticket, EngineFailed(f"the {self.name} engine failed while generating this request "
                                            f"({cause}); it is restarting, retry"))  # fmt: skip
        if self.failures > MAX_FAILURES:
            self._die(err)
            return False
        delay = BACKOFF_S[0] * 2 ** min(self.failures - 1, 10)
        while self._pause(min(delay, BACKOFF_S[1])):
            try:
                self.engine.restart()
                self.metrics.engine_restarts.labels(self.name).inc()
                return True
            except Exception as again:
                self.reason = f"restarting; the last try failed: {type(again).__name__}: {str(again)[:200]}"
                log.error("restarting the %s engine failed", self.name, exc_info=again)
                delay *= 2
        self._die(EngineStopped(f"the server stopped while the {self.name} engine was restarting"))
        return False

    def _pause(self, seconds: float) -> bool:
        """Wait (queued requests still expire and may be cancelled); False when the server stops meanwhile."""
        end = time.perf_counter() + seconds
        while (left := end - time.perf_counter()) > 0:
            with self._cond:
                if self._stopping:
                    return False
                self._cond.wait(min(left, 0.1))
                cancels, self._cancels = self._cancels, []
            for ticket in cancels:
                ticket.finished = True
            self._expire(time.perf_counter())
        return not self._stopping

    def _generate_once(self, request: GenerationRequest) -> None:
        key = self.engine.add(request)
        while key not in self.engine.step():
            pass
        self.engine.result(key)

    def _work(self) -> bool:
        """One round: cancellations, expired deadlines, admissions, one engine step. False once drained."""
        with self._cond:
            busy = self._cond.wait_for(lambda: self._cancels or self._waiting or self._running or self._stopping,
                                       HEARTBEAT_S)  # fmt: skip
            if self._stopping and not self._waiting and not self._running:
                return False
            cancels, self._cancels = self._cancels, []
        if not busy:
            self.engine.ping()
            return True
        for ticket in cancels:
            self._drop(ticket)
        self._expire(time.perf_counter())
        self._admit()
        if self._running:
            for key in self.engine.step():
                self._finish(key)
        self.metrics.gauges(self.name, self.running, self.waiting, self.engine.cache_usage())
        return True

    def _drop(self, ticket: Ticket) -> None:
        if ticket.key is not None and self._running.pop(ticket.key, None) is not None:
            self._unstarted.discard(ticket.key)
            self.engine.cancel(ticket.key)
        ticket.finished = True

    def _expire(self, now: float) -> None:
        """Fail the requests whose deadline passed: generating (dropped from the engine) or still queued."""
        for key, ticket in list(self._running.items()):
            if ticket.deadline is not None and now > ticket.deadline:
                self.engine.cancel(key)
                del self._running[key]
                self._unstarted.discard(key)
                self._fail(ticket, DeadlineExceeded("the request's deadline passed while it was generating"))
        with self._cond:
            late = [t for _, _, t in self._waiting if t.deadline is not None and now > t.deadline]
            if late:
                self._waiting = [entry for entry in self._waiting if entry[2] not in late]
                heapq.heapify(self._waiting)
        for ticket in late:
            self._fail(ticket, DeadlineExceeded("the request's deadline passed while it waited in the queue"))

    def _admit(self) -> None:
        while len(self._running) < self.config.max_running:
            with self._cond:
                if not self._waiting:
                    return
                ticket = heapq.heappop(self._waiting)[2]
            if ticket.cancelled:
                ticket.finished = True
                continue
            if ticket.deadline is not None and time.perf_counter() > ticket.deadline:
                self._fail(ticket, DeadlineExceeded("the request's deadline passed while it waited in the queue"))
                continue
            try:
                request = self._prepare(ticket)
                ticket.admitted = time.perf_counter()
                ticket.key = self.engine.add(request, functools.partial(self._text, ticket))
            except EngineGone:
                self._waiting_again(ticket)  # not its fault: it runs on the restarted engine
                raise
            except Exception as err:  # this request's fault (400) or a fault of the engine with it alone (500)
                self._fail(ticket, err)
                continue
            self._running[ticket.key] = ticket
            self._unstarted.add(ticket.key)
            self.metrics.queue_time.labels(self.name).observe(ticket.admitted - ticket.arrived)
            ticket.post("accepted")

    def _waiting_again(self, ticket: Ticket) -> None:
        """Put a ticket back at the head of the queue."""
        ticket.key = ticket.admitted = None
        with self._cond:
            heapq.heappush(self._waiting, (-(2**62), next(self._order), ticket))

    def _text(self, ticket: Ticket, piece: str) -> None:
        """A piece of a request's text from the engine: the first one ends its prefill (the forecast learns)."""
        if ticket.key in self._unstarted:
            self._unstarted.discard(ticket.key)
            assert ticket.admitted is not None
            self.forecast.first_token(ticket.admitted, time.perf_counter())
        ticket.text(piece)

    def _prepare(self, ticket: Ticket) -> GenerationRequest:
        """The request as the engine gets it: the chat rendered, the prompt tokenized, max_tokens fitted."""
        request = ticket.request
        prompt = self._chat(ticket.messages) if ticket.messages is not None else request.prompt
        ids = tuple(self.engine.tokenize(prompt)) if isinstance(prompt, str) else tuple(prompt)
        if not ids:
            raise InvalidInput("the prompt is empty")
        room = self.engine.context - len(ids)
        if self.config.kv_tokens:
            room = min(room, self.config.kv_tokens - len(ids))
        tokens = min(self.config.default_max_tokens, room) if ticket.fit_max_tokens else request.max_tokens
        if room < 1 or tokens > room:
            limit = min(self.engine.context, self.config.kv_tokens or self.engine.context)
            raise InvalidInput(f"the prompt is {len(ids)} tokens and max_tokens {tokens}: more than the "
                               f"{limit} tokens one request can hold")  # fmt: skip
        self.metrics.prefix(self.name, len(ids), self.prefixes.observe(ids))
        return replace(request, prompt=ids, max_tokens=tokens)

    def _chat(self, messages: list[dict[str, str]]) -> str:
        """The chat rendered by the model's template; a template that refuses these messages is a 400."""
        try:
            return self.engine.chat(messages)
        except EngineGone:
            raise
        except Exception as err:
            raise InvalidInput(f"messages: the model's chat template refused them: {str(err)[:200]}") from None

    def _finish(self, key: int) -> None:
        ticket = self._running.pop(key, None)
        self._unstarted.discard(key)
        try:
            result = self.engine.result(key)
        except EngineGone:
            raise
        except Exception as err:  # the engine refused this request alone (llama.cpp answers some refusals late)
            if ticket is not None:
                self._fail(ticket, err)
            return
        if ticket is None:
            return
        ticket.finished = True
        self.failures = 0
        assert ticket.admitted is not None
        self.metrics.finished(self.name, result, ticket.admitted - ticket.arrived)
        self.metrics.gauges(self.name, self.running, self.waiting)  # before the client can read them
        ticket.post("done", result)

    def _fail(self, ticket: Ticket, err: Exception) -> None:
        ticket.finished = True
        ticket.post("error", err)

    def _die(self, err: Exception) -> None:
        log.error("the %s engine loop died; refusing requests", self.name, exc_info=err)
        self.state, self.reason = "dead", f"{type(err).__name__}: {str(err)[:200]}"
        with self._cond:
            tickets = [t for _, _, t in self._waiting] + list(self._running.values())
            self._waiting.clear()
            self._running.clear()
            self._unstarted.clear()
        for ticket in tickets:
            self._fail(ticket, EngineStopped(f"the {self.name} engine has stopped: {self.reason}"))
