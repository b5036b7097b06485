"""The LLM scheduler: the server's side of an engine core (engine_core.py, in the engine's own process). Requests
wait here in a bounded priority queue with their deadlines; while the core has room they are handed to it, which
prepares each one, adds it to the running batch between engine steps (continuous batching; the engine chunks long
prefills) and steps as long as anything runs. Nothing waits on the core per step or per admission: its outputs
(admissions, text as it becomes final, results) arrive as messages, and this thread routes them to each request's
event loop. Requests leave when they finish, pass their deadline or lose their client (cancelled in the core's
next round).

Failures are contained where they happen: a request the engine refuses to add fails alone (400 for a value the
client sent, 500 otherwise). An engine that fails a step, dies or stops answering (an idle engine is pinged every
HEARTBEAT_S) fails the requests inside it with EngineFailed (503: retry), and is restarted with back-off while
the state says "restarting" (health not ready); the queue waits for it, and serving resumes by itself. Every
request has a deadline (its own, or the server's request_timeout_s), so none waits forever."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Literal

from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult
from turboinfer.serve.errors import DeadlineExceeded, EngineFailed, EngineStopped, QueueFull, ShuttingDown
from turboinfer.serve.openai.admission import FirstTokenForecast
from turboinfer.serve.openai.engine_core import Job, StepOutput
from turboinfer.serve.openai.engine_process import CoreClient
from turboinfer.serve.openai.metrics import GenerationMetrics
from turboinfer.serve.openai.ticket import Ticket

log = logging.getLogger("turboinfer.serve")
State = Literal["loading", "ready", "restarting", "dead", "stopped"]
WARM_UP = GenerationRequest("Hello", max_tokens=4, ignore_eos=True)
HEARTBEAT_S = 2.0
"""An idle engine is pinged this often (a dead or hung engine process is found before a request needs it)."""
TICK_S = 0.1
"""The longest the scheduler waits for the core's messages while it owes some (deadlines are checked between)."""
BACKOFF_S = (0.5, 30.0)
"""The first wait before restarting a failed engine, and the longest (doubling while restarts keep failing)."""
MAX_FAILURES = 8
"""Engine failures in a row (no request finished in between) after which the engine is given up: dead, liveness
red, so the orchestrator restarts the whole process."""


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
    """Runs one engine core's requests from a thread of its own; `submit` and `cancel` are called from the event
    loop."""

    def __init__(self, name: str, engine: CoreClient, config: SchedulerConfig, metrics: GenerationMetrics) -> None:
        self.name, self.engine, self.config, self.metrics = name, engine, config, metrics
        self.state: State = "loading"
        self.reason = "loading and warming up"
        self._cond = threading.Condition()
        self._waiting: list[tuple[int, int, Ticket]] = []
        self._order = itertools.count()
        self._keys = itertools.count()
        self._cancels: list[Ticket] = []
        self._sent: dict[int, Ticket] = {}
        """Requests handed to the core that it has not admitted yet."""
        self._running: dict[int, Ticket] = {}
        self._unstarted: set[int] = set()
        """Keys of running requests without their first token yet (their prompts still to prefill)."""
        self.forecast = FirstTokenForecast()
        self._stopping = False
        self._pinged = False
        """A ping is out, its pong not back."""
        self._heard = 0.0
        """When the core last sent anything, or was pinged."""
        self._cache_usage = 0.0
        self.failures = 0
        """Engine failures since a request last finished (the restart back-off doubles with each)."""
        self._thread = threading.Thread(target=self._run, name=f"engine-{name}", daemon=True)

    @property
    def waiting(self) -> int:
        """Requests queued for a slot."""
        return len(self._waiting)

    @property
    def running(self) -> int:
        """Requests in the engine's batch, or handed to it."""
        return len(self._running) + len(self._sent)

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
        wait = self.forecast.wait_s(self.waiting + len(self._sent) + len(self._unstarted))
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
        self.engine.wake()
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        """Drop a ticket whose client is gone: out of the queue, or out of the engine in the core's next round."""
        with self._cond:
            if not ticket.finished and not ticket.cancelled:
                ticket.cancelled = True
                self._cancels.append(ticket)
                self._cond.notify()
        self.engine.wake()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Finish what was accepted (running and waiting), then end the thread and the engine's core."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self.engine.wake()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self.engine.close()
        if self.state != "dead":
            self.state, self.reason = "stopped", "stopped"

    def _run(self) -> None:
        try:
            while True:
                try:
                    self.engine.open()
                    self._warm_up()
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
        """After an engine failure: fail the requests inside it (those handed to it but not admitted queue again),
        wait the back-off, restart it; False when the server stops meanwhile (the queue is failed then)."""
        self.failures += 1
        self.metrics.engine_failures.labels(self.name).inc()
        cause = f"{type(err).__name__}: {str(err)[:200]}"
        log.error("the %s engine failed (%s); restarting it", self.name, cause, exc_info=err)
        self.state, self.reason = "restarting", f"restarting after {cause}"
        lost, self._running = list(self._running.values()), {}
        unsent, self._sent = list(self._sent.values()), {}
        self._unstarted.clear()
        self._pinged = False
        for ticket in unsent:
            self._waiting_again(ticket)  # not its fault: it runs on the restarted engine
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
                self._cond.wait(min(left, TICK_S))
                cancels, self._cancels = self._cancels, []
            for ticket in cancels:
                ticket.finished = True
            self._expire(time.perf_counter())
        return not self._stopping

    def _warm_up(self) -> None:
        """One short generation through the core before the engine is called ready (its failure raised)."""
        key = next(self._keys)
        self.engine.add(Job(key, WARM_UP))
        while True:
            for kind, value in self.engine.receive(HEARTBEAT_S, expecting=True):
                output = self._output(kind, value)
                if output is None:
                    continue
                for failed, err in output.failed:
                    if failed == key:
                        raise err
                if any(done == key for done, _ in output.finished):
                    return

    def _work(self) -> bool:
        """One round: cancellations, expired deadlines, admissions, then the core's messages (or a heartbeat).
        False once drained."""
        with self._cond:
            if self._stopping and not self._waiting and not self.running:
                return False
            cancels, self._cancels = self._cancels, []
        for ticket in cancels:
            self._drop(ticket)
        self._expire(time.perf_counter())
        self._admit()
        expecting = bool(self.running) or self._pinged
        messages = self.engine.receive(TICK_S if expecting else HEARTBEAT_S, expecting)
        for kind, value in messages:
            output = self._output(kind, value)
            if output is not None:
                self._absorb(output)
        now = time.perf_counter()
        if messages:
            self._heard = now
        elif not expecting and now - self._heard >= HEARTBEAT_S:  # idle: is the core still there?
            self._pinged, self._heard = True, now
            self.engine.ping()
        self.metrics.gauges(self.name, self.running, self.waiting, self._cache_usage)
        return True

    def _output(self, kind: str, value: Any) -> StepOutput | None:
        """A step's output, None for a pong; an engine that failed or is gone raises."""
        if kind in ("failed", "gone"):
            raise value
        if kind == "pong":
            self._pinged = False
            return None
        assert isinstance(value, StepOutput)
        self._cache_usage = value.cache_usage
        return value

    def _absorb(self, output: StepOutput) -> None:
        """Route a step's output to its requests (those cancelled or expired meanwhile are no longer here)."""
        for key, prompt_tokens, cached in output.accepted:
            self._accepted(key, prompt_tokens, cached)
        for key, piece in output.pieces:
            self._text(key, piece)
        for key, err in output.failed:
            if (ticket := self._forget(key)) is not None:
                self._fail(ticket, err)
        for key, result in output.finished:
            self._finish(key, result)

    def _drop(self, ticket: Ticket) -> None:
        if ticket.key is not None and self._forget(ticket.key) is not None:
            self.engine.cancel(ticket.key)
        ticket.finished = True

    def _forget(self, key: int) -> Ticket | None:
        """Take a request off the books (handed over or running); its ticket."""
        self._unstarted.discard(key)
        return self._sent.pop(key, None) or self._running.pop(key, None)

    def _expire(self, now: float) -> None:
        """Fail the requests whose deadline passed: in the engine (dropped from it) or still queued."""
        for key, ticket in [*self._sent.items(), *self._running.items()]:
            if ticket.deadline is not None and now > ticket.deadline:
                self._forget(key)
                self.engine.cancel(key)
                self._fail(ticket, DeadlineExceeded("the request's deadline passed while it was generating"))
        with self._cond:
            late = [t for _, _, t in self._waiting if t.deadline is not None and now > t.deadline]
            if late:
                self._waiting = [entry for entry in self._waiting if entry[2] not in late]
                heapq.heapify(self._waiting)
        for ticket in late:
            self._fail(ticket, DeadlineExceeded("the request's deadline passed while it waited in the queue"))

    def _admit(self) -> None:
        """Hand queued requests to the core while it has streams free (no answer awaited)."""
        while self.running < self.config.max_running:
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
            ticket.key, ticket.admitted = next(self._keys), time.perf_counter()
            self._sent[ticket.key] = ticket
            config = self.config
            self.engine.add(Job(ticket.key, ticket.request, ticket.messages, ticket.fit_max_tokens,
                                config.default_max_tokens, config.kv_tokens))  # fmt: skip

    def _accepted(self, key: int, prompt_tokens: int, cached: int) -> None:
        """The core admitted a request into the engine's batch."""
        ticket = self._sent.pop(key, None)
        if ticket is None:
            return
        self._running[key] = ticket
        self._unstarted.add(key)
        self.metrics.prefix(self.name, prompt_tokens, cached)
        assert ticket.admitted is not None
        self.metrics.queue_time.labels(self.name).observe(ticket.admitted - ticket.arrived)
        ticket.post("accepted")

    def _waiting_again(self, ticket: Ticket) -> None:
        """Put a ticket back at the head of the queue."""
        ticket.key = ticket.admitted = None
        with self._cond:
            heapq.heappush(self._waiting, (-(2**62), next(self._order), ticket))

    def _text(self, key: int, piece: str) -> None:
        """A piece of a request's text: the first one ends its prefill (the forecast learns)."""
        ticket = self._running.get(key)
        if ticket is None:
            return
        if key in self._unstarted:
            self._unstarted.discard(key)
            assert ticket.admitted is not None
            self.forecast.first_token(ticket.admitted, time.perf_counter())
        ticket.text(piece)

    def _finish(self, key: int, result: GenerationResult) -> None:
        ticket = self._forget(key)
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
            tickets = [t for _, _, t in self._waiting] + list(self._sent.values()) + list(self._running.values())
            self._waiting.clear()
            self._sent.clear()
            self._running.clear()
            self._unstarted.clear()
        for ticket in tickets:
            self._fail(ticket, EngineStopped(f"the {self.name} engine has stopped: {self.reason}"))
