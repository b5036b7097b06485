"""OpenVINO GenAI's continuous-batching pipeline: paged KV cache, prefix caching, chunked prefill, many streams in
one engine loop. The engine runs its own decode loop; requests join it with `add` and advance with `step`, so one
request (`generate`), many at once (`generate_many`) and a server's scheduler drive it the same way."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.errors import InvalidModel, MissingExtra
from turboinfer.runtime.llm.batching import BatchEngine
from turboinfer.runtime.llm.generate import (
    FinishReason,
    GenerationRequest,
    GenerationResult,
    OnText,
    TextAssembler,
    prompt_ids,
)

KV_PRECISIONS = ("u8", "f16", "bf16", "f32")
PROMPT_LOOKUP_NGRAM = 3
"""Longest n-gram matched against the prompt when drafting (OpenVINO GenAI's max_ngram_size)."""


def import_openvino_genai() -> Any:
    """The openvino_genai module, or MissingExtra naming the extra."""
    try:
        import openvino_genai
    except ImportError:
        raise MissingExtra("openvino-genai", "llm") from None
    return openvino_genai


@dataclass(frozen=True)
class EngineConfig:
    """The continuous-batching engine's knobs."""

    threads: int = 0
    """Inference threads; 0 = all usable cores."""
    kv_precision: str = "u8"
    """KV cache element type: u8 (OpenVINO's CPU default), f16, bf16 or f32 (f32 also computes in f32, without
    dynamic activation quantization)."""
    cache_gb: float = 1.0
    """KV cache size, GiB: streams × context that fit."""
    prefix_caching: bool = True
    """Reuse the KV blocks of a prompt prefix another request already computed."""
    max_batched_tokens: int = 256
    """Tokens per engine step: bounds how long a new prompt's prefill stalls running streams (chunked prefill)."""
    max_streams: int = 64
    """Sequences scheduled together at most."""
    prompt_lookup: int = 0
    """Prompt-lookup decoding: tokens drafted per step from the n-grams (up to PROMPT_LOOKUP_NGRAM tokens) of the
    prompt and text so far, verified in one pass (0: off). Run with kv_precision f32: with OpenVINO's default u8 KV
    cache and dynamic quantization the verifying pass rounds differently from one-token steps, and greedy output
    left plain decoding's in 3 of 4 copy prompts (docs/llm.md)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


@dataclass
class Live:
    """One request inside the engine: its handle and what it produced so far."""

    handle: Any
    request: GenerationRequest
    prompt_tokens: int
    begin: float
    text: TextAssembler
    on_text: OnText | None = None
    tokens: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    finish: FinishReason | None = None
    steps: int = 0
    """Engine steps that gave this request tokens (fewer than its tokens when drafts are accepted)."""


class OpenVinoGenAiGenerator(BatchEngine):
    """A Generator on OpenVINO GenAI's ContinuousBatchingPipeline (a GGUF file, or an IR folder)."""

    engine = "openvino-genai"

    def __init__(self, model: Path, context: int, config: EngineConfig | None = None) -> None:
        self.og = import_openvino_genai()
        import openvino

        self.ov = openvino
        self.config = config or EngineConfig()
        if self.config.kv_precision not in KV_PRECISIONS:
            raise InvalidModel(
                f"KV cache precision is one of {', '.join(KV_PRECISIONS)}, got {self.config.kv_precision!r}"
            )
        scheduler = self.og.SchedulerConfig()
        scheduler.cache_size = max(1, round(self.config.cache_gb))
        scheduler.enable_prefix_caching = self.config.prefix_caching
        scheduler.max_num_batched_tokens = self.config.max_batched_tokens
        scheduler.max_num_seqs = self.config.max_streams
        scheduler.dynamic_split_fuse = True
        properties: dict[str, Any] = {"KV_CACHE_PRECISION": self.config.kv_precision}
        if self.config.kv_precision == "f32":  # f32 throughout: what keeps prompt lookup's greedy output exact
            properties |= {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}
        if self.config.threads:
            properties["INFERENCE_NUM_THREADS"] = self.config.threads
        if self.config.prompt_lookup:
            properties["prompt_lookup"] = True
        start = time.perf_counter()
        try:
            self.pipe = self.og.ContinuousBatchingPipeline(str(model), scheduler, "CPU", properties)
        except RuntimeError as err:
            raise InvalidModel(
                f"OpenVINO GenAI cannot load {model}: {str(err).strip().splitlines()[-1][:200]}"
            ) from None
        self.load_s = time.perf_counter() - start
        self.tokenizer = self.pipe.get_tokenizer()
        self.model, self.context = model, context
        self.eos = frozenset([int(self.tokenizer.get_eos_token_id())])
        self._ids = itertools.count()
        self.live: dict[int, Live] = {}

    def tokenize(self, text: str) -> list[int]:
        """Token ids of text."""
        return [int(t) for t in self.tokenizer.encode(text).input_ids.data[0]]

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of token ids."""
        return str(self.tokenizer.decode(list(tokens), skip_special_tokens=True))

    def chat(self, messages: list[dict[str, str]]) -> str:
        """A conversation rendered by the model's chat template, ready for the assistant's turn."""
        return str(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True))

    def generation_config(self, request: GenerationRequest) -> Any:
        """The engine's GenerationConfig for a request."""
        c, s = self.og.GenerationConfig(), request.sampling
        c.max_new_tokens, c.ignore_eos = request.max_tokens, request.ignore_eos
        c.do_sample = not s.greedy
        c.presence_penalty, c.frequency_penalty = s.presence_penalty, s.frequency_penalty
        if c.do_sample:
            c.temperature, c.top_p, c.top_k = s.temperature, s.top_p, s.top_k or 0
            c.rng_seed = s.seed if s.seed is not None else 0
        if self.config.prompt_lookup:
            c.num_assistant_tokens, c.max_ngram_size = self.config.prompt_lookup, PROMPT_LOOKUP_NGRAM
        if request.stop:
            c.stop_strings = set(request.stop)
            c.include_stop_str_in_output = True  # the TextAssembler cuts the text at the stop string itself
        return c

    def add(self, request: GenerationRequest, on_text: OnText | None = None) -> int:
        """Queue a request in the engine (checked first); its id."""
        ids = prompt_ids(self, request)
        key = next(self._ids)
        tensor = self.ov.Tensor(np.asarray([ids], dtype=np.int64))
        handle = self.pipe.add_request(key, tensor, self.generation_config(request))
        text = TextAssembler(self.detokenize, request.stop)
        self.live[key] = Live(handle, request, len(ids), time.perf_counter(), text, on_text)
        return key

    def step(self) -> list[int]:
        """One engine step (a decode step for every running stream, plus a chunk of waiting prefill); the ids of
        the requests that finished in it."""
        self.pipe.step()
        now = time.perf_counter()
        done = []
        for key, live in list(self.live.items()):
            if live.handle.can_read():
                live.steps += 1
                for output in live.handle.read().values():
                    self.absorb(live, output, now)
            if live.finish is not None or str(live.handle.get_status()).endswith(("FINISHED", "STOP", "CANCEL")):
                live.finish = live.finish or "length"
                done.append(key)
        return done

    def absorb(self, live: Live, output: Any, now: float) -> None:
        """New tokens of one request from an engine step: timed, streamed, ended at EOS or a stop string."""
        for token in output.generated_ids:
            if live.finish is not None:
                return
            live.times.append(now - live.begin)
            if token in self.eos and not live.request.ignore_eos:
                live.finish = "stop"
                return
            live.tokens.append(int(token))
            piece = live.text.add(int(token))
            if piece and live.on_text:
                live.on_text(piece)
            if live.text.stopped:
                live.finish = "stop"
                live.handle.stop()
        if str(output.finish_reason).endswith("STOP") and live.finish is None:
            live.finish = "stop"

    def result(self, key: int) -> GenerationResult:
        """The finished request's result (removed from the engine's books)."""
        live = self.live.pop(key)
        rest = live.text.finish()
        if rest and live.on_text:
            live.on_text(rest)
        total = time.perf_counter() - live.begin
        ttft = live.times[0] if live.times else total
        return GenerationResult(live.tokens, live.text.sent, live.finish or "length", live.prompt_tokens, ttft,
                                live.times, total, live.steps)  # fmt: skip

    def cancel(self, key: int) -> None:
        """Drop a request: its KV blocks are freed at the next step."""
        live = self.live.pop(key, None)
        if live is not None:
            live.handle.stop()

    def cache_usage(self) -> float:
        """Share of the KV cache in use, 0..1 (the engine reports percent)."""
        return float(self.pipe.get_metrics().cache_usage) / 100

    def describe(self) -> dict[str, Any]:
        """Engine, weights, KV cache, scheduler."""
        return {
            "engine": self.engine,
            "weights": self.model.name,
            "kv_cache": self.config.kv_precision,
            **self.config.to_dict(),
        }
