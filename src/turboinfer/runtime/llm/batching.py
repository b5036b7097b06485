"""What every engine that batches itself shares: one request, or many at once, through `add`, `step` and
`result` (OpenVINO GenAI's continuous batching, llama.cpp's slots)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult, OnText


class BatchEngine(ABC):
    """An engine that runs many requests at once: added, stepped together, collected."""

    @abstractmethod
    def add(self, request: GenerationRequest, on_text: OnText | None = None) -> int:
        """Start a request (checked first); its id."""

    @abstractmethod
    def step(self) -> list[int]:
        """Advance every running request; the ids of those that finished."""

    @abstractmethod
    def result(self, key: int) -> GenerationResult:
        """A finished request's result (removed from the engine's books)."""

    def generate(self, request: GenerationRequest, on_text: OnText | None = None) -> GenerationResult:
        """One request through the engine."""
        return self.generate_many([request], [on_text])[0]

    def generate_many(
        self, requests: list[GenerationRequest], on_text: list[OnText | None] | None = None
    ) -> list[GenerationResult]:
        """Every request added at once and stepped until all have finished (continuous batching); each result in
        order."""
        keys = [self.add(r, (on_text or [None] * len(requests))[i]) for i, r in enumerate(requests)]
        pending = set(keys)
        while pending:
            pending -= set(self.step())
        return [self.result(key) for key in keys]
