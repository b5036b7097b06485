"""llama.cpp as an engine (the `xllamacpp` wheel: llama.cpp prebuilt, its server's scheduler in-process): the GGUF
as shipped, every K-quant, continuous batching over its slots with one KV cache they share. turboinfer's scheduler
keeps admission, deadlines, cancellation and metrics; llama.cpp schedules the admitted requests itself. Each
request runs in a thread of its own (the call releases the GIL while llama.cpp decodes); its streamed pieces wait in
a queue until `step` hands them over, so text callbacks run on the caller's thread only."""

from __future__ import annotations

import itertools
import json
import os
import queue
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turboinfer.core.errors import InvalidInput, InvalidModel, TurboinferError, optional_import
from turboinfer.runtime.llm.batching import BatchEngine
from turboinfer.runtime.llm.generate import (
    FinishReason,
    GenerationRequest,
    GenerationResult,
    OnText,
    prompt_ids,
)

STEP_WAIT_S = 0.05
"""The longest `step` waits for the first piece of any request."""
GATHER_S = 0.004
"""After the first piece, how long `step` gathers more: llama.cpp answers every slot of a decode iteration in a
burst, and one step per burst (not per piece) leaves the two cores to its threads."""


@dataclass(frozen=True)
class LlamaCppConfig:
    """llama.cpp's knobs: threads, slots (streams at once) and the KV cache they share."""

    threads: int = 0
    """0: every usable core."""
    slots: int = 1
    kv_tokens: int = 4096
    """Tokens the shared KV cache holds (f16), all slots together."""


@dataclass
class Live:
    """One request inside llama.cpp: what it produced so far, and whether its client still wants it."""

    request: GenerationRequest
    prompt_tokens: int
    begin: float
    on_text: OnText | None
    tokens: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    finish: FinishReason | None = None
    error: Exception | None = None
    cancelled: bool = False


class LlamaCppGenerator(BatchEngine):
    """A Generator and a batch Engine on llama.cpp's in-process server."""

    engine = "llama.cpp"

    def __init__(self, gguf: Path, context: int, config: LlamaCppConfig | None = None) -> None:
        xllamacpp: Any = optional_import("xllamacpp", "llm")
        self.config = config or LlamaCppConfig()
        params = xllamacpp.CommonParams()
        params.model.path = str(gguf)
        params.n_parallel, params.n_ctx, params.kv_unified = self.config.slots, self.config.kv_tokens, True
        threads = self.config.threads or len(os.sched_getaffinity(0))
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
        params.cont_batching, params.use_jinja, params.warmup = True, True, True
        params.hostnames = ["127.0.0.1"]  # its HTTP side answers tokenize and chat templates, on loopback only
        start = time.perf_counter()
        try:
            self.server = xllamacpp.Server(params)
        except RuntimeError as err:
            raise InvalidModel(f"llama.cpp cannot load {gguf}: {str(err)[:200]}") from None
        self.load_s = time.perf_counter() - start
        self.model, self.context = gguf, min(context, self.config.kv_tokens)
        self.eos: frozenset[int] = frozenset()
        """Extra tokens that end a request (a model's overrides); llama.cpp ends at the model's own by itself."""
        self._base = self.server.listening_address
        self._ids = itertools.count()
        self._events: queue.Queue[tuple[int, dict[str, Any], float]] = queue.Queue()
        """(request, chunk, arrival) from the requests' threads."""
        self.live: dict[int, Live] = {}
        self._pieces: dict[int, str] = {}
        self.retokenized = 0
        """Chunks whose ids were tokenized again (held-back text)."""

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(f"{self._base}{path}", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def tokenize(self, text: str) -> list[int]:
        """Token ids of text, by llama.cpp's own tokenizer (special tokens as the model adds them)."""
        return [int(t) for t in self._post("/tokenize", {"content": text, "add_special": True})["tokens"]]

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of token ids."""
        return str(self._post("/detokenize", {"tokens": [int(t) for t in tokens]})["content"])

    def chat(self, messages: list[dict[str, str]]) -> str:
        """A conversation rendered by the GGUF's chat template (jinja), ready for the assistant's turn."""
        return str(self._post("/apply-template", {"messages": messages})["prompt"])

    def body(self, request: GenerationRequest, ids: list[int]) -> dict[str, Any]:
        """The completion request llama.cpp gets: token ids, sampling, stops; each piece with its token id (the
        sampled token's probability after sampling: free, where `logprobs` costs a softmax over the vocabulary,
        ~1 ms a token on Gemma 3's 262 k)."""
        s = request.sampling
        body = {"prompt": ids, "max_tokens": request.max_tokens, "stream": True, "n_probs": 1,
                "post_sampling_probs": True, "temperature": 0.0 if s.greedy else s.temperature, "top_p": s.top_p,
                "top_k": max(s.top_k, 0),
                "presence_penalty": s.presence_penalty, "frequency_penalty": s.frequency_penalty,
                "stop": list(request.stop), "ignore_eos": request.ignore_eos, "cache_prompt": True}  # fmt: skip
        if s.seed is not None:
            body["seed"] = s.seed % (2**32 - 1)  # llama.cpp's seed is 32-bit, and 2**32 - 1 means "random"
        return body

    def add(self, request: GenerationRequest, on_text: OnText | None = None) -> int:
        """Start a request (checked first); its id."""
        ids = prompt_ids(self, request)
        key = next(self._ids)
        live = Live(request, len(ids), time.perf_counter(), on_text)
        self.live[key] = live
        body = json.dumps(self.body(request, ids))
        threading.Thread(target=self._run, args=(key, live, body), daemon=True, name=f"llama.cpp-{key}").start()
        return key

    def _run(self, key: int, live: Live, body: str) -> None:
        """One request's thread: llama.cpp's stream, each chunk queued for `step` (True stops the stream)."""

        def chunk(text: str) -> bool:
            self._events.put((key, json.loads(text), time.perf_counter()))
            return live.cancelled

        try:
            self.server.handle_completions(body, chunk)
        except Exception as err:  # reported through the queue: the request fails alone
            failure = {"error": {"message": f"{type(err).__name__}: {err}", "code": 500}}
            self._events.put((key, failure, time.perf_counter()))
        self._events.put((key, {"end": True}, time.perf_counter()))

    def step(self) -> list[int]:
        """Hand over what arrived (waiting up to STEP_WAIT_S for the first piece); the ids that finished."""
        done: list[int] = []
        try:
            events = [self._events.get(timeout=STEP_WAIT_S)]
        except queue.Empty:
            return done
        end = time.perf_counter() + GATHER_S
        while (left := end - time.perf_counter()) > 0:
            try:
                events.append(self._events.get(timeout=left))
            except queue.Empty:
                break
        for key, event, arrived in events:
            live = self.live.get(key)
            if live is not None and self.absorb(live, event, arrived):
                done.append(key)
        return done

    def absorb(self, live: Live, event: dict[str, Any], arrived: float) -> bool:
        """One chunk of a request: tokens timed, text streamed; True when the request has ended."""
        if "end" in event:
            if live.finish is None and live.error is None:
                live.error = TurboinferError("llama.cpp ended the request without a finish reason")
            return True
        if "error" in event:
            error = event["error"]
            message = f"llama.cpp refused the request: {error.get('message', error)}"
            live.error = InvalidInput(message) if error.get("code") == 400 else TurboinferError(message)
            return False
        choice = event["choices"][0]
        for token in self.chunk_tokens(choice):
            if token in self.eos and not live.request.ignore_eos:
                live.finish, live.cancelled = "stop", True
                return False
            live.tokens.append(token)
            live.times.append(arrived - live.begin)
        if live.cancelled:
            return False
        if choice.get("text"):
            live.text.append(choice["text"])
            if live.on_text:
                live.on_text(choice["text"])
        if choice.get("finish_reason"):
            live.finish = "stop" if choice["finish_reason"] == "stop" else "length"
        return False

    def chunk_tokens(self, choice: dict[str, Any]) -> list[int]:
        """The token ids of one streamed chunk. llama.cpp names only the last token of a chunk whose text it held
        back (a character split over several byte tokens, a partial stop string): such a chunk's text is tokenized
        again (its canonical ids, which byte tokens have)."""
        ids = [int(t["id"]) for t in (choice.get("logprobs") or {}).get("content") or ()]
        text = choice.get("text") or ""
        if "".join(self.piece(i) for i in ids) == text:
            return ids
        self.retokenized += 1
        return [int(t) for t in self._post("/tokenize", {"content": text, "add_special": False})["tokens"]]

    def piece(self, token: int) -> str:
        """One token's text (asked once per token id)."""
        if token not in self._pieces:
            self._pieces[token] = self.detokenize([token])
        return self._pieces[token]

    def result(self, key: int) -> GenerationResult:
        """The finished request's result (removed from the engine's books); its error raised if it failed."""
        live = self.live.pop(key)
        if live.error is not None:
            raise live.error
        total = time.perf_counter() - live.begin
        ttft = live.times[0] if live.times else total
        return GenerationResult(live.tokens, "".join(live.text), live.finish or "length", live.prompt_tokens, ttft,
                                live.times, total)  # fmt: skip

    def cancel(self, key: int) -> None:
        """Drop a request: its stream stops at the next chunk, and llama.cpp frees its slot."""
        live = self.live.pop(key, None)
        if live is not None:
            live.cancelled = True

    def cache_usage(self) -> float:
        """Share of the shared KV cache the running requests hold, 0..1."""
        held = sum(live.prompt_tokens + len(live.tokens) for live in self.live.values())
        return min(1.0, held / self.config.kv_tokens)

    def describe(self) -> dict[str, Any]:
        """Engine, weights, KV cache, slots."""
        return {"engine": self.engine, "weights": self.model.name, "kv_cache": "f16", **self.config.__dict__}
