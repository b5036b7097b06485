"""The engine core, as vLLM's: the loop that owns a batch engine — jobs in, step outputs out. It runs in the
engine's own process (engine_process.py), or in a thread beside an engine built in this process; either way it
talks over a multiprocessing Connection and nobody waits on it: the scheduler sends jobs and cancellations when it
likes, and the core steps the engine as long as anything runs, sending each step's text, admissions and finished
results back as one message. A request is prepared here, next to the tokenizer (chat template, tokens, max_tokens
fitted, the prefix books), so an admission costs no round-trip either.

What the core sends: ("ready", facts) once the engine is built; ("output", StepOutput) after each round that has
news; ("pong", None) for a ping; ("failed", error) when the engine itself failed (the core ends: the scheduler
restarts it)."""

from __future__ import annotations

import contextlib
import pickle
import traceback
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from typing import Any, Protocol

from turboinfer.core.errors import InvalidInput, TurboinferError
from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult, OnText
from turboinfer.serve.openai.prefix import PrefixBook


class Engine(Protocol):
    """What the core drives: requests added, stepped together, collected or cancelled."""

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


class EngineCallFailed(TurboinferError):
    """An engine error that cannot cross the pipe as itself (its traceback's end is kept)."""


@dataclass(frozen=True)
class Job:
    """One request as the scheduler hands it to the core, with the limits it is fitted to."""

    key: int
    request: GenerationRequest
    messages: list[dict[str, str]] | None = None
    """A chat: rendered by the model's template here."""
    fit_max_tokens: bool = False
    """max_tokens was not given: generate default_max_tokens, or what still fits."""
    default_max_tokens: int = 512
    kv_tokens: int = 0
    """Tokens the KV cache holds in all (0: unknown)."""


@dataclass
class StepOutput:
    """What one round of the core produced, each entry under its job's key, in the order it happened."""

    accepted: list[tuple[int, int, int]] = field(default_factory=list)
    """(key, prompt tokens, of them already cached as a prefix) of each job now in the engine."""
    pieces: list[tuple[int, str]] = field(default_factory=list)
    """Final text, as the engine streamed it."""
    finished: list[tuple[int, GenerationResult]] = field(default_factory=list)
    failed: list[tuple[int, Exception]] = field(default_factory=list)
    """Jobs the engine refused (at add or at the end), each failing alone."""
    cache_usage: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.accepted or self.pieces or self.finished or self.failed)


class EngineCore:
    """The loop over one engine; `serve` runs it on a connection until told to close or the other end goes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.jobs: dict[int, int] = {}
        """Engine key of each running job."""
        self._keys: dict[int, int] = {}
        """Job key of each engine key."""
        self._out = StepOutput()
        self.prefixes: PrefixBook | None = None
        """Sized by the first job to about what the engine's KV cache holds."""

    def facts(self) -> dict[str, Any]:
        """What the scheduler needs of the engine: its name, context and description."""
        return {"engine": self.engine.engine, "context": self.engine.context, "describe": self.engine.describe()}

    def serve(self, connection: Connection) -> None:
        """Answer messages and step while anything runs; returns on ("close",) or when the connection closes.
        An engine failure propagates (the caller reports it)."""
        while True:
            try:
                messages = [connection.recv()] if not self.jobs else []
                while connection.poll(0):
                    messages.append(connection.recv())
            except (EOFError, OSError):
                return
            for kind, value in messages:
                if kind == "close":
                    return
                if kind == "ping":
                    connection.send(("pong", None))
                elif kind == "cancel":
                    self.cancel(value)
                elif kind == "add":
                    self.admit(value)
            if self._out.accepted:  # the client hears of its admission before a long step
                self._flush(connection)
            if self.jobs:
                self.step()
                self._flush(connection, always=True)
            elif self._out:
                self._flush(connection)

    def _flush(self, connection: Connection, always: bool = False) -> None:
        if always or self._out:
            self._out.cache_usage = self.engine.cache_usage()
            connection.send(("output", self._out))
            self._out = StepOutput()

    def admit(self, job: Job) -> None:
        """Prepare a job and add it to the engine; a job the engine or its limits refuse fails alone."""
        try:
            request = self.prepare(job)
            key = self.engine.add(request, lambda piece: self._out.pieces.append((job.key, piece)))
        except Exception as err:  # this request's fault (400) or the engine's with it alone (500)
            self._out.failed.append((job.key, portable(err)))
            return
        self.jobs[job.key], self._keys[key] = key, job.key
        if self.prefixes is None:
            self.prefixes = PrefixBook(max_tokens=max(job.kv_tokens, 65536))
        prompt = request.prompt
        assert not isinstance(prompt, str)
        self._out.accepted.append((job.key, len(prompt), self.prefixes.observe(prompt)))

    def cancel(self, key: int) -> None:
        """Drop a job (one already finished, or never admitted, is no longer here)."""
        engine_key = self.jobs.pop(key, None)
        if engine_key is not None:
            del self._keys[engine_key]
            self.engine.cancel(engine_key)

    def step(self) -> None:
        """One engine step; the finished jobs' results collected."""
        for engine_key in self.engine.step():
            key = self._keys.pop(engine_key, None)
            if key is None:
                continue
            del self.jobs[key]
            try:
                self._out.finished.append((key, self.engine.result(engine_key)))
            except Exception as err:  # the engine refused this request alone (llama.cpp answers some refusals late)
                self._out.failed.append((key, portable(err)))

    def drop_all(self) -> None:
        """Cancel every job still in the engine (a core that ends leaves the engine clean for the next one)."""
        for key in list(self.jobs):
            self.cancel(key)

    def prepare(self, job: Job) -> GenerationRequest:
        """The request as the engine gets it: the chat rendered, the prompt tokenized, max_tokens fitted."""
        request = job.request
        prompt = self.render(job.messages) if job.messages is not None else request.prompt
        ids = tuple(self.engine.tokenize(prompt)) if isinstance(prompt, str) else tuple(prompt)
        if not ids:
            raise InvalidInput("the prompt is empty")
        context = self.engine.context
        room = context - len(ids)
        if job.kv_tokens:
            room = min(room, job.kv_tokens - len(ids))
        tokens = min(job.default_max_tokens, room) if job.fit_max_tokens else request.max_tokens
        if room < 1 or tokens > room:
            limit = min(context, job.kv_tokens or context)
            raise InvalidInput(f"the prompt is {len(ids)} tokens and max_tokens {tokens}: more than the "
                               f"{limit} tokens one request can hold")  # fmt: skip
        return replace(request, prompt=ids, max_tokens=tokens)

    def render(self, messages: list[dict[str, str]]) -> str:
        """The chat rendered by the model's template; a template that refuses these messages is a 400."""
        try:
            return self.engine.chat(messages)
        except Exception as err:
            raise InvalidInput(f"messages: the model's chat template refused them: {str(err)[:200]}") from None


def run_core(engine: Engine, connection: Connection) -> None:
    """Serve an engine's core on a connection: "ready" first, then the loop; an engine failure is sent as
    ("failed", error) and ends it."""
    core = EngineCore(engine)
    try:
        connection.send(("ready", core.facts()))
        core.serve(connection)
    except Exception as err:  # the engine failed: the scheduler fails its requests and restarts it
        with contextlib.suppress(OSError):
            connection.send(("failed", portable(err)))
    finally:
        with contextlib.suppress(Exception):  # an engine that failed may fail its cancels too
            core.drop_all()


def portable(err: Exception) -> Exception:
    """The exception itself where it survives the pipe (most do; some carry engine objects), else its traceback's
    end."""
    try:
        pickle.dumps(err)
    except Exception:
        return EngineCallFailed(traceback.format_exc()[-500:])
    return err
