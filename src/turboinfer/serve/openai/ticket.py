"""One generation request's handle between the event loop that serves it and the scheduler's thread that runs it:
its request, deadline and priority, and the events (accepted, text pieces, done or error) that reach its loop in
order."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult


@dataclass(eq=False)
class Ticket:
    """One request from arrival to its last event. Events reach the request's event loop in order: ("accepted",
    None), ("text", piece)…, then ("done", GenerationResult) or ("error", exception)."""

    request: GenerationRequest
    loop: asyncio.AbstractEventLoop
    messages: list[dict[str, str]] | None = None
    """A chat: the prompt is rendered by the model's template in the engine thread."""
    fit_max_tokens: bool = False
    """max_tokens was not given: generate the default, or what still fits the context."""
    priority: int = 0
    deadline: float | None = None
    arrived: float = field(default_factory=time.perf_counter)
    events: asyncio.Queue[tuple[str, Any]] = field(default_factory=asyncio.Queue)
    key: int | None = None
    admitted: float | None = None
    finished: bool = False
    cancelled: bool = False

    def post(self, kind: str, value: Any = None) -> None:
        """Hand one event to the request's event loop (from any thread); dropped once the loop is closed."""
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.events.put_nowait, (kind, value))

    def text(self, piece: str) -> None:
        """The engine's streaming callback: a final piece of text."""
        self.post("text", piece)

    async def next(self) -> tuple[str, Any]:
        """The next event."""
        return await self.events.get()

    async def result(self) -> GenerationResult:
        """Wait for the generation's end: its result, or its error raised (text events are passed over; the
        result holds the whole text)."""
        while True:
            kind, value = await self.next()
            if kind == "done":
                return value
            if kind == "error":
                raise value
