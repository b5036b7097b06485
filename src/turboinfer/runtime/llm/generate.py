"""The Generator protocol every decoder-LLM engine speaks, beside Session: a prompt in, tokens out through a KV
cache, with streaming, stop conditions, sampling and per-request timings.

An engine that exposes its decode loop (transformers, ONNX Runtime GenAI) implements `start` (prefill) and the
shared `decode` loop drives its `Stream.step`; an engine that runs its own loop (OpenVINO GenAI) implements
`generate` directly. Either way callers see one `generate(request, on_text)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from turboinfer.core.errors import InvalidInput

FinishReason = Literal["stop", "length"]
MAX_STOP_STRINGS = 16
MAX_STOP_LENGTH = 256
MIN_TEMPERATURE = 1e-4
"""Temperatures below this sample as temperature 0 (greedy, their limit): OpenVINO GenAI computes in float32,
where 1e-300 is 0 and fails its `temperature > 0` check."""
MIN_TOP_P = 1e-6
"""A top_p below this keeps only the most likely token: greedy, for the same reason."""
SEED_MODULUS = 2**64
"""Seeds are taken modulo this (the engines' seeds are unsigned 64-bit): -1 and 2**64 - 1 sample alike."""


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen: greedy at temperature 0, else sampled (seeded) with top-k / top-p."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    """0 = no top-k cut."""
    seed: int | None = None
    presence_penalty: float = 0.0
    """Subtracted from the score of every token already generated (OpenAI's definition, -2..2)."""
    frequency_penalty: float = 0.0
    """Subtracted from a token's score once per time it was generated (-2..2)."""

    @classmethod
    def engine_safe(cls, temperature: float, top_p: float, top_k: int, seed: int | None, presence_penalty: float = 0.0,
                    frequency_penalty: float = 0.0) -> Sampling:  # fmt: skip
        """Sampling every engine takes, for values a client may send: a temperature under MIN_TEMPERATURE or a
        top_p under MIN_TOP_P is greedy, the seed is taken modulo SEED_MODULUS; then checked."""
        if temperature < MIN_TEMPERATURE or top_p < MIN_TOP_P:
            temperature, top_p = 0.0, 1.0
        seed = None if seed is None else seed % SEED_MODULUS
        return cls(temperature, top_p, top_k, seed, presence_penalty, frequency_penalty).check()

    def check(self) -> Sampling:
        """self, or InvalidInput naming the bad field."""
        if not (isinstance(self.temperature, int | float) and 0 <= self.temperature <= 100):
            raise InvalidInput(f"temperature must be a number in 0..100, got {self.temperature!r}")
        if not (isinstance(self.top_p, int | float) and 0 < self.top_p <= 1):
            raise InvalidInput(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not (isinstance(self.top_k, int) and not isinstance(self.top_k, bool) and self.top_k >= 0):
            raise InvalidInput(f"top_k must be a non-negative integer, got {self.top_k!r}")
        if self.seed is not None and not (isinstance(self.seed, int) and not isinstance(self.seed, bool)):
            raise InvalidInput(f"seed must be an integer, got {self.seed!r}")
        if self.seed is not None and not 0 <= self.seed < SEED_MODULUS:
            raise InvalidInput(f"seed must be in 0..2**64 - 1, got {self.seed}")
        for name in ("presence_penalty", "frequency_penalty"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and -2 <= value <= 2):
                raise InvalidInput(f"{name} must be a number in -2..2, got {value!r}")
        return self

    @property
    def penalized(self) -> bool:
        """True when generated tokens' scores are lowered."""
        return bool(self.presence_penalty or self.frequency_penalty)

    @property
    def greedy(self) -> bool:
        """True when the most likely token is always chosen."""
        return self.temperature == 0 or self.top_k == 1


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt and how to continue it."""

    prompt: str | tuple[int, ...]
    """Text (tokenized by the engine) or token ids."""
    max_tokens: int = 128
    sampling: Sampling = field(default_factory=Sampling)
    stop: tuple[str, ...] = ()
    """Generation ends before any of these strings; they are not part of the text."""
    ignore_eos: bool = False
    """Generate max_tokens whatever the model says (benchmarks)."""


@dataclass
class GenerationResult:
    """What came out, why it ended, and when each token arrived."""

    tokens: list[int]
    text: str
    finish_reason: FinishReason
    prompt_tokens: int
    ttft_s: float
    """Request start to the first generated token, seconds (prefill included)."""
    token_times_s: list[float] = field(default_factory=list)
    """Request start to each generated token, seconds."""
    total_s: float = 0.0
    steps: int = 0
    """Decode steps that produced the tokens (0: one per token, the engine does not say)."""

    @property
    def completion_tokens(self) -> int:
        """Generated tokens."""
        return len(self.tokens)

    @property
    def tpot_s(self) -> float | None:
        """Time per output token after the first (vLLM's TPOT): (total − TTFT) / (tokens − 1)."""
        if len(self.token_times_s) < 2:
            return None
        return (self.token_times_s[-1] - self.ttft_s) / (len(self.token_times_s) - 1)

    @property
    def decode_rate(self) -> float:
        """Decode tokens/s: generated tokens after the first over the time they took (TTFT excluded)."""
        times = self.token_times_s
        if len(times) < 2 or times[-1] <= times[0]:
            raise InvalidInput("a decode rate needs at least two generated tokens")
        return (len(times) - 1) / (times[-1] - times[0])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"text": self.text, "tokens": self.tokens, "finish_reason": self.finish_reason,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "total_s": self.total_s,
                "steps": self.steps or self.completion_tokens}  # fmt: skip


OnText = Callable[[str], None]
"""Streaming callback: called with each new piece of text as soon as it is complete (never half a character)."""


class Stream(Protocol):
    """One sequence in a step-wise engine: the prefill is done; each step appends a token and returns the next
    token's logits."""

    def logits(self) -> np.ndarray:
        """Scores [vocab] of the next token."""
        ...

    def append(self, token: int) -> None:
        """Feed one token through the cache."""
        ...


class Generator(Protocol):
    """A loaded decoder LLM."""

    engine: str
    context: int
    """Longest prompt + generation in tokens."""
    eos: frozenset[int]

    def tokenize(self, text: str) -> list[int]:
        """Token ids of text (special tokens as the model's template writes them)."""
        ...

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of token ids."""
        ...

    def generate(self, request: GenerationRequest, on_text: OnText | None = None) -> GenerationResult:
        """Continue the prompt; stream text pieces to on_text as they are final."""
        ...

    def describe(self) -> dict[str, Any]:
        """What runs: engine, weights and KV precision, threads."""
        ...


def prompt_ids(generator: Generator, request: GenerationRequest) -> list[int]:
    """The request's prompt as token ids, checked: not empty, inside the context with room for max_tokens."""
    if isinstance(request.prompt, str):
        if not request.prompt:
            raise InvalidInput("the prompt is empty")
        try:
            request.prompt.encode("utf-8")
        except UnicodeEncodeError as err:
            raise InvalidInput(f"the prompt is not valid UTF-8 text ({err.reason} at {err.start})") from None
        ids = generator.tokenize(request.prompt)
    else:
        ids = list(request.prompt)
    if not ids:
        raise InvalidInput("the prompt is empty")
    check_request(request, len(ids), generator.context)
    return ids


def check_request(request: GenerationRequest, prompt_tokens: int, context: int) -> None:
    """InvalidInput unless max_tokens, the stop strings and the sampling are valid and the prompt plus max_tokens
    fit the context."""
    tokens = request.max_tokens
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        raise InvalidInput(f"max_tokens must be a positive integer, got {tokens!r}")
    if prompt_tokens >= context:
        raise InvalidInput(f"the prompt is {prompt_tokens} tokens; the context holds {context}")
    if prompt_tokens + tokens > context:
        raise InvalidInput(
            f"prompt ({prompt_tokens} tokens) + max_tokens ({tokens}) exceeds the {context}-token context"
        )
    check_stops(request.stop)
    request.sampling.check()


def check_stops(stops: object) -> tuple[str, ...]:
    """The stop strings, or InvalidInput: a tuple of up to MAX_STOP_STRINGS non-empty strings of at most
    MAX_STOP_LENGTH characters."""
    if not isinstance(stops, tuple) or not all(isinstance(s, str) for s in stops):
        raise InvalidInput("stop must be a string or an array of strings")
    if len(stops) > MAX_STOP_STRINGS or any(not s or len(s) > MAX_STOP_LENGTH for s in stops):
        raise InvalidInput(f"stop must be a string or an array of up to {MAX_STOP_STRINGS} non-empty strings of at "
                           f"most {MAX_STOP_LENGTH} characters")  # fmt: skip
    return stops


class TextAssembler:
    """Token ids → text pieces that are final: no half UTF-8 character, nothing that may still turn out to start a
    stop string. Holds back what is not final yet; `stopped` once a stop string appears."""

    def __init__(self, detokenize: Callable[[Sequence[int]], str], stops: tuple[str, ...]) -> None:
        self._detokenize, self._stops = detokenize, stops
        self._tokens: list[int] = []
        self.sent = ""
        """Text handed out so far."""
        self.stopped = False

    def add(self, token: int) -> str:
        """The new final text after this token ("" while it is still pending)."""
        self._tokens.append(token)
        text = self._detokenize(self._tokens)
        if text.endswith("\ufffd"):  # an incomplete UTF-8 sequence: wait for the next token
            return ""
        for stop in self._stops:
            at = text.find(stop, max(0, len(self.sent) - len(stop)))
            if at != -1:
                self.stopped = True
                return self._emit(text[:at])
        hold = max((overlap(text, s) for s in self._stops), default=0)
        return self._emit(text[: len(text) - hold])

    def finish(self) -> str:
        """Everything not yet handed out (at the end of generation, when no stop string was found)."""
        if self.stopped:
            return ""
        return self._emit(self._detokenize(self._tokens).rstrip("\ufffd"))

    def _emit(self, final: str) -> str:
        piece = final[len(self.sent) :] if final.startswith(self.sent) else ""
        self.sent += piece
        return piece


def overlap(text: str, stop: str) -> int:
    """Length of the longest end of text that is a beginning of stop (a stop string that may be arriving)."""
    for size in range(min(len(stop) - 1, len(text)), 0, -1):
        if text.endswith(stop[:size]):
            return size
    return 0


class Sampler:
    """Picks tokens from logits as Sampling says (seeded numpy generator)."""

    def __init__(self, sampling: Sampling) -> None:
        self.sampling = sampling
        self._rng = np.random.default_rng(sampling.seed)

    def __call__(self, logits: np.ndarray, generated: Sequence[int] = ()) -> int:
        """One token id; generated (the tokens so far) lowers scores when a penalty is set."""
        s = self.sampling
        if s.penalized and generated:
            tokens, counts = np.unique(np.asarray(generated), return_counts=True)
            logits = logits.astype(np.float64)  # a copy: the engine's buffer stays as it was
            logits[tokens] -= s.frequency_penalty * counts + s.presence_penalty
        if s.greedy:
            return int(np.argmax(logits))
        scores = logits.astype(np.float64) / s.temperature
        order = np.argsort(-scores)
        if s.top_k:
            order = order[: s.top_k]
        probs = np.exp(scores[order] - scores[order[0]])
        probs /= probs.sum()
        if s.top_p < 1:
            keep = int(np.searchsorted(np.cumsum(probs), s.top_p) + 1)
            order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
        return int(order[self._rng.choice(len(order), p=probs)])


class Decoding:
    """One sequence's decode loop on a step-wise engine, a token per `advance`: sample, stream the text that is
    final, stop at max_tokens, an end token or a stop string. `decode` runs it to the end; a scheduler interleaves
    many."""

    def __init__(self, generator: Generator, stream: Stream, request: GenerationRequest, prompt_tokens: int,
                 begin: float, on_text: OnText | None = None) -> None:  # fmt: skip
        self.generator, self.stream, self.request, self.on_text = generator, stream, request, on_text
        self.prompt_tokens, self.begin = prompt_tokens, begin
        self.sampler, self.text = Sampler(request.sampling), TextAssembler(generator.detokenize, request.stop)
        self.tokens: list[int] = []
        self.times: list[float] = []
        self.finish: FinishReason | None = None

    def advance(self) -> bool:
        """Choose the next token (and feed it through the cache unless generation ends); True once finished."""
        request = self.request
        token = self.sampler(self.stream.logits(), self.tokens)
        self.times.append(time.perf_counter() - self.begin)
        if token in self.generator.eos and not request.ignore_eos:
            self.finish = "stop"
            return True
        self.tokens.append(token)
        self.emit(self.text.add(token))
        if self.text.stopped:
            self.finish = "stop"
        elif len(self.tokens) >= request.max_tokens:
            self.finish = "length"
        else:
            self.stream.append(token)
        return self.finish is not None

    def emit(self, piece: str) -> None:
        """Stream a final piece of text."""
        if piece and self.on_text:
            self.on_text(piece)

    def result(self) -> GenerationResult:
        """What came out (the text held back for a possible stop string streamed first)."""
        self.emit(self.text.finish())
        total = time.perf_counter() - self.begin
        ttft = self.times[0] if self.times else total
        return GenerationResult(self.tokens, self.text.sent, self.finish or "length", self.prompt_tokens, ttft,
                                self.times, total)  # fmt: skip


def decode(
    generator: Generator, start: Callable[[list[int]], Stream], request: GenerationRequest,
    on_text: OnText | None = None,
) -> GenerationResult:  # fmt: skip
    """The decode loop of a step-wise engine: prefill (start), then one token per step until max_tokens, an end
    token or a stop string; text streamed as it becomes final."""
    begin = time.perf_counter()
    ids = prompt_ids(generator, request)
    decoding = Decoding(generator, start(ids), request, len(ids), begin, on_text)
    while not decoding.advance():
        pass
    return decoding.result()


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_value: float) -> float:
    """KV cache bytes one token costs: a key and a value per layer and KV head (GQA shares them across queries)."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value


KV_VALUE_BYTES = {"u8": 1.0, "f16": 2.0, "bf16": 2.0, "f32": 4.0}


def check_kv_capacity(per_token: float, streams: int, context: int, available: float) -> float:
    """KV bytes that streams × context tokens need; InvalidInput, before anything is allocated, when that is more
    than the memory available for it."""
    if streams < 1 or context < 1:
        raise InvalidInput(f"streams and context must be positive, got {streams} × {context}")
    need = per_token * streams * context
    if need > available:
        per = f"{per_token / 1024:.1f} KiB per token"
        raise InvalidInput(f"{streams} streams × {context} tokens need {need / 2**30:.1f} GiB of KV cache ({per}); "
                           f"{available / 2**30:.1f} GiB is available")  # fmt: skip
    return need
