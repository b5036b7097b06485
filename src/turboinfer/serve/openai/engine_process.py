"""The scheduler's end of an engine core (engine_core.py): the core in a process of its own (`ProcessEngine`, what
the server runs) or in a thread beside an engine built in this process (`LocalEngine`: an engine a caller built
and keeps, as the tests' fault-injecting wrappers). Sending never waits; `receive` waits for the core's messages
with the GIL released.

Why a process: OpenVINO GenAI's `step` holds Python's GIL for the whole step (40–60 ms at 16 streams), which
starved the server's event loop: refusals took 84 ms and text left in bursts once per step. The child is started
with `spawn` (a fresh interpreter: no copy of the server's threads or event loop) and builds the engine itself
from a picklable spec. Every wait is bounded: a core that dies, or that owes an answer and sends nothing for
call_timeout_s (hung: a child is killed), is reported as ("gone", EngineGone), and the scheduler restarts it.
Only this server's own child is ever unpickled."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from turboinfer.core.errors import TurboinferError
from turboinfer.serve.openai.engine_core import Engine, Job, portable, run_core

START_TIMEOUT_S = 300.0
CALL_TIMEOUT_S = 120.0
"""The longest a core that owes an answer (a step of running requests, a ping) may stay silent before it is taken
for hung."""


class EngineGone(TurboinferError):
    """The engine's core died, or did not answer in time (a process is killed then)."""


@dataclass(frozen=True)
class EngineSpec:
    """How the child builds its engine: the generator variant, the cache folder, what the server sized it for, the
    model's card."""

    variant: Any
    """A llm.variant.GeneratorVariant."""
    cache_dir: Path
    shape: Any = None
    """A llm.engines.ServeShape."""
    card: Any = None
    """The llm.card.LlmCard the server resolved (None: the child builds or finds it)."""


def build_engine(spec: EngineSpec) -> Engine:
    """The engine a spec names: one that batches itself (OpenVINO GenAI, llama.cpp), or a step-wise engine
    interleaved."""
    from turboinfer.core.settings import Settings
    from turboinfer.llm.variant import open_generator
    from turboinfer.serve.openai.interleave import Interleaved

    generator = open_generator(spec.variant, Settings(spec.cache_dir), spec.shape, spec.card)
    return generator if hasattr(generator, "add") else Interleaved(generator)


def child_main(connection: Connection, spec: EngineSpec) -> None:
    """The child: build the engine, then serve its core until told to stop or the pipe closes. SIGINT and SIGTERM
    are ignored: a signal to the whole process group (Ctrl-C, a group kill) must not end the engine under the
    server's drain; the server closes it afterwards, and a dead server closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        engine = build_engine(spec)
    except Exception as err:  # reported to the parent, which raises it where the server is being built
        connection.send(("error", portable(err)))
        return
    run_core(engine, connection)


class CoreClient(ABC):
    """Jobs, cancellations and pings to a core; its messages back."""

    engine: str
    context: int
    where = ""
    """Where the core runs, for `describe`."""

    def __init__(self, call_timeout_s: float) -> None:
        self.call_timeout_s = call_timeout_s
        self._connection: Connection | None = None
        self._describe: dict[str, Any] = {}
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self._heard = time.monotonic()

    @abstractmethod
    def open(self) -> None:
        """Start a core unless one runs (its engine's error raised here when it cannot be built)."""

    @abstractmethod
    def _gone(self) -> str:
        """Why the core's connection closed."""

    @abstractmethod
    def _hung(self) -> str:
        """Deal with a core that stays silent (kill it where that can be done); what to tell its requests."""

    @abstractmethod
    def close(self) -> None:
        """Stop the core."""

    def _started(self, connection: Connection) -> None:
        """Wait for a new core's "ready" (or its build error, raised)."""
        if not connection.poll(START_TIMEOUT_S):
            raise EngineGone(f"the engine was not ready in {START_TIMEOUT_S:g} s")
        try:
            kind, value = connection.recv()
        except (EOFError, OSError):
            raise EngineGone(self._gone()) from None
        if kind == "error":
            raise value
        self._connection, self._heard = connection, time.monotonic()
        self.engine, self.context, self._describe = value["engine"], value["context"], value["describe"]

    def restart(self) -> None:
        """A fresh core, its requests forgotten (the old one ended first)."""
        self.close()
        self.open()

    def describe(self) -> dict[str, Any]:
        """The engine's description, and where its core runs."""
        return {**self._describe, "process": self.where}

    def add(self, job: Job) -> None:
        """Hand a job to the core (its admission, text and result come back in its outputs)."""
        self._send("add", job)

    def cancel(self, key: int) -> None:
        """Drop a job from the core."""
        self._send("cancel", key)

    def ping(self) -> None:
        """Ask the core for a ("pong", None): an idle core that does not answer in call_timeout_s is hung."""
        self._send("ping", None)

    def _send(self, kind: str, value: Any) -> None:
        if self._connection is None:
            raise EngineGone("the engine has no core running")
        try:
            self._connection.send((kind, value))
        except (OSError, ValueError):
            raise EngineGone(self._gone()) from None

    def wake(self) -> None:
        """Make a `receive` waiting in another thread return now (new work arrived)."""
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_write, b"!")

    def receive(self, timeout_s: float, expecting: bool) -> list[tuple[str, Any]]:
        """The core's messages, waiting up to timeout_s for the first or for a wake. `expecting`: the core owes an
        answer (requests run, a ping is out), so silence past call_timeout_s makes it hung. A core that is gone
        ends the list with ("gone", EngineGone)."""
        if self._connection is None:
            return [("gone", EngineGone("the engine has no core running"))]
        if not expecting:
            self._heard = time.monotonic()
        ready = wait([self._connection, self._wake_read], timeout_s)
        if self._wake_read in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(self._wake_read, 4096)
        messages: list[tuple[str, Any]] = []
        try:
            while self._connection.poll(0):
                messages.append(self._connection.recv())
        except (EOFError, OSError):
            messages.append(("gone", EngineGone(self._gone())))
        if messages:
            self._heard = time.monotonic()
        elif expecting and time.monotonic() - self._heard > self.call_timeout_s:
            messages.append(("gone", EngineGone(self._hung())))
        return messages


class ProcessEngine(CoreClient):
    """An engine core in a child process built from a spec (started here: a model that cannot be opened fails
    before the server listens)."""

    where = "engine in a child process"

    def __init__(self, spec: EngineSpec, call_timeout_s: float = CALL_TIMEOUT_S) -> None:
        super().__init__(call_timeout_s)
        self.spec = spec
        self._process: multiprocessing.process.BaseProcess | None = None
        self.open()

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        return self._process.pid if self._process is not None else None

    def open(self) -> None:
        """Spawn the child unless it runs, and wait until its engine is built."""
        if self._process is not None and self._process.is_alive():
            return
        context = multiprocessing.get_context("spawn")
        ours, child = context.Pipe()
        self._process = context.Process(target=child_main, args=(child, self.spec), daemon=True,
                                        name="turboinfer-engine")  # fmt: skip
        self._process.start()
        child.close()
        try:
            self._started(ours)
        except Exception:
            self._process.join(5)
            raise

    def _gone(self) -> str:
        if self._process is not None:
            self._process.join(1)
        return f"the engine process died (exit code {self._process.exitcode if self._process else None})"

    def _hung(self) -> str:
        if self._process is not None:
            self._process.kill()
        return f"the engine process did not answer in {self.call_timeout_s:g} s (hung); it was killed"

    def close(self) -> None:
        """Stop the child (killed if it does not end)."""
        process, connection, self._connection = self._process, self._connection, None
        if process is None:
            return
        if process.is_alive() and connection is not None:
            with contextlib.suppress(OSError):
                connection.send(("close", None))
            process.join(10)
        if process.is_alive():
            process.kill()
            process.join(5)
        if connection is not None:
            connection.close()


class LocalEngine(CoreClient):
    """An engine core in a thread of this process over an engine the caller built (and closes): each `open` after
    a `close` or a failure starts a fresh core over the same engine. A hung core's thread cannot be killed; it is
    left behind."""

    where = "engine core in a thread of the server's process"

    def __init__(self, engine: Engine, call_timeout_s: float = CALL_TIMEOUT_S) -> None:
        super().__init__(call_timeout_s)
        self.inner = engine
        self._thread: threading.Thread | None = None

    def open(self) -> None:
        """Start a core thread unless one runs."""
        if self._thread is not None and self._thread.is_alive() and self._connection is not None:
            return
        ours, theirs = multiprocessing.Pipe()
        self._thread = threading.Thread(target=run_core, args=(self.inner, theirs), daemon=True,
                                        name="turboinfer-engine-core")  # fmt: skip
        self._thread.start()
        self._started(ours)

    def _gone(self) -> str:
        return "the engine core's thread ended"

    def _hung(self) -> str:
        return f"the engine core did not answer in {self.call_timeout_s:g} s (hung)"

    def close(self) -> None:
        """End the core's thread (the engine itself stays open)."""
        thread, connection, self._connection = self._thread, self._connection, None
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.send(("close", None))
            connection.close()
        if thread is not None:
            thread.join(10)
