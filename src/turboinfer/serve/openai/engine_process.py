"""The engine in a process of its own. OpenVINO GenAI's `step` holds Python's GIL for the whole step (40–60 ms at
16 streams), which starved the server's event loop: refusals took 84 ms and text left in bursts once per step.
Here the scheduler's thread calls the engine over a pipe and waits on it with the GIL released; the child
process owns the engine and runs each call, and the text pieces a step produced come back with its result.

The child is started with `spawn` (a fresh interpreter: no copy of the server's threads or event loop) and
builds the engine itself from a picklable spec. Every call waits at most a timeout: a child that dies, or that
does not answer in time (hung: it is killed), makes the call raise EngineGone, and the scheduler restarts the
engine (`restart`: a fresh child from the same spec). Only this server's own child is ever unpickled."""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import signal
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from turboinfer.core.errors import TurboinferError
from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult, OnText

START_TIMEOUT_S = 300.0
CALL_TIMEOUT_S = 120.0
"""The longest one call (an engine step: a decode step for every stream plus a chunk of prefill) may take before
the child is taken for hung and killed."""


class EngineGone(TurboinferError):
    """The engine's process died, or did not answer a call in time (and was killed)."""


class EngineCallFailed(TurboinferError):
    """A call failed in the child with an exception that cannot cross the pipe (its traceback's end is kept)."""


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


def build_engine(spec: EngineSpec) -> Any:
    """The engine a spec names: one that batches itself (OpenVINO GenAI, llama.cpp), or a step-wise engine
    interleaved."""
    from turboinfer.core.settings import Settings
    from turboinfer.llm.variant import open_generator
    from turboinfer.serve.openai.interleave import Interleaved

    generator = open_generator(spec.variant, Settings(spec.cache_dir), spec.shape, spec.card)
    return generator if hasattr(generator, "add") else Interleaved(generator)


def child_main(connection: Connection, spec: EngineSpec) -> None:
    """The child: build the engine, say what it is, then answer calls until told to stop or the pipe closes.
    SIGINT and SIGTERM are ignored: a signal to the whole process group (Ctrl-C, a group kill) must not end the
    engine under the server's drain; the server closes it afterwards, and a dead server closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        engine = build_engine(spec)
    except Exception as err:  # reported to the parent, which raises it where the server is being built
        connection.send(("error", err))
        return
    pieces: list[tuple[int, str]] = []
    facts = {"engine": engine.engine, "context": engine.context, "describe": engine.describe()}
    connection.send(("ready", facts))
    while True:
        try:
            method, args = connection.recv()
        except EOFError:
            return
        if method == "close":
            return
        try:
            reply = add(engine, pieces, *args) if method == "add" else call(engine, method, args)
            connection.send(("ok", reply, pieces))
        except Exception as err:  # the parent re-raises it (its type kept) in the scheduler's thread
            failure = err if is_picklable(err) else EngineCallFailed(traceback.format_exc()[-500:])
            connection.send(("error", failure, pieces))
        pieces.clear()  # in place: the engine's callbacks hold this list


def add(engine: Any, pieces: list[tuple[int, str]], request: GenerationRequest, streams: bool) -> int:
    """Add a request in the child; its text pieces are collected under its key for the parent."""
    key = [-1]
    key[0] = engine.add(request, (lambda piece: pieces.append((key[0], piece))) if streams else None)
    return key[0]


def call(engine: Any, method: str, args: tuple[Any, ...]) -> Any:
    """One of the Engine protocol's methods (a ping answers None: the child is alive and not stuck); a step answers
    its finished requests with the KV cache's use after it, so a step costs one round-trip."""
    if method == "ping":
        return None
    if method == "step":
        return engine.step(), engine.cache_usage()
    if method not in CALLS:
        raise EngineCallFailed(f"no engine call {method!r}")
    return getattr(engine, method)(*args)


CALLS = frozenset({"tokenize", "chat", "result", "cancel", "describe"})


def is_picklable(err: Exception) -> bool:
    """Whether an exception survives the pipe (most do; some carry engine objects)."""
    try:
        pickle.dumps(err)
    except Exception:
        return False
    return True


class ProcessEngine:
    """The scheduler's engine interface, each call run by the child process."""

    def __init__(self, spec: EngineSpec, call_timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.spec, self.call_timeout_s = spec, call_timeout_s
        self._streams: dict[int, OnText] = {}
        self._cache_usage = 0.0
        self._start()

    def _start(self) -> None:
        """Spawn the child and wait until its engine is built (its error raised here when it cannot be)."""
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(target=child_main, args=(child, self.spec), daemon=True,
                                        name="turboinfer-engine")  # fmt: skip
        self._process.start()
        child.close()
        kind, value = self._receive(START_TIMEOUT_S)[:2]
        if kind == "error":
            self._process.join(5)
            raise value
        self.engine, self.context, self._describe = value["engine"], value["context"], value["describe"]

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        return self._process.pid

    def _receive(self, timeout_s: float) -> tuple[Any, ...]:
        try:
            if not self._connection.poll(timeout_s):
                self._process.kill()
                raise EngineGone(f"the engine process did not answer in {timeout_s:g} s (hung); it was killed")
            return tuple(self._connection.recv())
        except (EOFError, OSError):
            self._process.join(1)
            raise EngineGone(f"the engine process died (exit code {self._process.exitcode})") from None

    def _call(self, method: str, *args: Any) -> Any:
        try:
            self._connection.send((method, args))
        except (BrokenPipeError, OSError):
            raise EngineGone(f"the engine process died (exit code {self._process.exitcode})") from None
        kind, value, pieces = self._receive(self.call_timeout_s)
        for key, piece in pieces:  # text the call produced, in order, before its result
            stream = self._streams.get(key)
            if stream is not None:
                stream(piece)
        if kind == "error":
            raise value
        return value

    def tokenize(self, text: str) -> list[int]:
        """Token ids of text."""
        return list(self._call("tokenize", text))

    def chat(self, messages: list[dict[str, str]]) -> str:
        """The model's chat template applied."""
        return str(self._call("chat", messages))

    def add(self, request: GenerationRequest, on_text: OnText | None = None) -> int:
        """Queue a request in the engine; its text pieces reach on_text after the steps that made them."""
        key = int(self._call("add", request, on_text is not None))
        if on_text is not None:
            self._streams[key] = on_text
        return key

    def step(self) -> list[int]:
        """One engine step in the child (this thread waits without the GIL); the finished requests' ids."""
        finished, self._cache_usage = self._call("step")
        return list(finished)

    def result(self, key: int) -> GenerationResult:
        """A finished request's result (pieces held back for a stop string are streamed first)."""
        result: GenerationResult = self._call("result", key)
        self._streams.pop(key, None)
        return result

    def cancel(self, key: int) -> None:
        """Drop a request."""
        self._streams.pop(key, None)
        self._call("cancel", key)

    def cache_usage(self) -> float:
        """Share of the KV cache in use after the last step (no call of its own)."""
        return float(self._cache_usage)

    def ping(self) -> None:
        """EngineGone unless the child answers within the call timeout (the idle scheduler's heartbeat)."""
        self._call("ping")

    def restart(self) -> None:
        """A fresh child from the same spec, its requests forgotten (the old one killed if it still runs)."""
        self.close()
        self._streams.clear()
        self._cache_usage = 0.0
        self._start()

    def describe(self) -> dict[str, Any]:
        """The child engine's description."""
        return {**self._describe, "process": "engine in a child process"}

    def close(self) -> None:
        """Stop the child."""
        if self._process.is_alive():
            with contextlib.suppress(OSError):
                self._connection.send(("close", ()))
            self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._connection.close()
