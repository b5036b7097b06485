"""Many streams on a step-wise engine (ONNX Runtime GenAI, transformers), which decodes one sequence per call:
requests join and leave between steps and each step advances every running stream by one token, one after the
other. Continuous, not batched: the engine computes one sequence at a time, so aggregate throughput stays that
of one stream. OpenVINO GenAI schedules its own batch and needs none of this."""

from __future__ import annotations

import itertools
import time
from typing import Any

from turboinfer.runtime.llm.generate import Decoding, GenerationRequest, GenerationResult, OnText, prompt_ids


class Interleaved:
    """The scheduler's engine interface (add / step / result / cancel) over a Generator with `start`."""

    def __init__(self, generator: Any, prefills_per_step: int = 1) -> None:
        self.generator = generator
        self.engine, self.context = generator.engine, generator.context
        self.prefills_per_step = prefills_per_step
        """New prompts prefilled per step: bounds how long a new request stalls the running streams."""
        self._ids = itertools.count()
        self._waiting: dict[int, tuple[GenerationRequest, list[int], float, OnText | None]] = {}
        self.live: dict[int, Decoding] = {}
        self._done: dict[int, Decoding] = {}

    def tokenize(self, text: str) -> list[int]:
        """Token ids of text."""
        return list(self.generator.tokenize(text))

    def chat(self, messages: list[dict[str, str]]) -> str:
        """The model's chat template applied."""
        return str(self.generator.chat(messages))

    def add(self, request: GenerationRequest, on_text: OnText | None = None) -> int:
        """Queue a request (checked first); its id."""
        ids = prompt_ids(self.generator, request)
        key = next(self._ids)
        self._waiting[key] = (request, ids, time.perf_counter(), on_text)
        return key

    def step(self) -> list[int]:
        """Prefill up to prefills_per_step waiting prompts, then one token for every running stream; the ids of
        the requests that finished."""
        for key in list(self._waiting)[: self.prefills_per_step]:
            request, ids, begin, on_text = self._waiting.pop(key)
            stream = self.generator.start(ids)
            self.live[key] = Decoding(self.generator, stream, request, len(ids), begin, on_text)
        done = []
        for key, decoding in list(self.live.items()):
            if decoding.advance():
                self._done[key] = self.live.pop(key)
                done.append(key)
        return done

    def result(self, key: int) -> GenerationResult:
        """A finished request's result."""
        return self._done.pop(key).result()

    def cancel(self, key: int) -> None:
        """Drop a request (its stream and cache are released)."""
        self._waiting.pop(key, None)
        self.live.pop(key, None)

    def ping(self) -> None:
        """In this process: alive while the caller is."""

    def restart(self) -> None:
        """Forget every request (their streams and caches released): the generator itself stays loaded."""
        self._waiting.clear()
        self.live.clear()
        self._done.clear()

    def cache_usage(self) -> float:
        """Share of the KV cache in use: each stream owns its cache, so nothing is shared to report."""
        return 0.0

    def describe(self) -> dict[str, Any]:
        """The wrapped generator's description, and how streams are interleaved."""
        return {**self.generator.describe(), "scheduling": "interleaved, one sequence per engine call"}
