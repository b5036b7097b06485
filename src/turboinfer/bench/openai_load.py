"""A load generator for any OpenAI-compatible server (ours, llama.cpp's, vLLM): streamed chat or text completions,
closed loop at given concurrencies or open loop at given rates, a unique prompt per request (cut from real prose,
numbered first so that no two share a cached prefix unless a shared system prompt is asked for). Metrics as vLLM's
`bench serve` defines them: TTFT to the first content chunk, TPOT = (E2E − TTFT) / (output tokens − 1), ITL between
content chunks, goodput = completed requests per second meeting both the TTFT and the TPOT target. Failed
requests are counted, never retried."""

from __future__ import annotations

import asyncio
import functools
import json
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import aiohttp
import numpy as np

from turboinfer.bench.loadgen import arrival_times
from turboinfer.core.errors import InvalidInput
from turboinfer.measure.sentences import real_sentences

WORDS_PER_TOKEN = 0.75
"""English prose runs about 0.75 words per token in a BPE vocabulary; prompts are cut to words by it."""


@dataclass(frozen=True)
class OpenAiLoad:
    """What to send: the server, the model, the shape of every request."""

    url: str
    """The server's base URL (http://HOST:PORT, with or without /v1)."""
    model: str = ""
    """Model name; empty = the first one the server lists."""
    prompt_tokens: int = 200
    max_tokens: int = 128
    chat: bool = True
    shared_prefix_tokens: int = 0
    """Tokens of a system prompt every request shares (0: none; prompts then share no prefix at all)."""
    ignore_eos: bool = True
    """Ask for exactly max_tokens (vLLM's and llama.cpp's `ignore_eos`), so every request costs the same."""
    timeout_s: float = 600.0
    ttft_target_s: float = 1.0
    tpot_target_s: float = 0.1
    seed: int = field(default_factory=lambda: time.time_ns() % 2**31)
    """Picks the prompts; new per run by default, so that a rerun does not find its prompts in a server's cache."""

    @property
    def base(self) -> str:
        """The URL up to /v1."""
        return self.url.rstrip("/").removesuffix("/v1") + "/v1"


@dataclass
class Record:
    """One request's outcome and timings (seconds from its intended send time)."""

    status: str
    answered_s: float = float("nan")
    """Until the response status arrived (how fast a refusal comes, for a 429)."""
    ttft_s: float = float("nan")
    e2e_s: float = float("nan")
    itl_s: list[float] = field(default_factory=list)
    output_tokens: int = 0
    prompt_tokens: int = 0

    @property
    def ok(self) -> bool:
        """Completed with a 200 and at least one token."""
        return self.status == "200" and self.output_tokens > 0

    @property
    def tpot_s(self) -> float:
        """(E2E − TTFT) / (output tokens − 1); nan for one-token answers."""
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1) if self.output_tokens > 1 else float("nan")


@functools.cache
def prose_words() -> tuple[str, ...]:
    """The words of the real prose prompts are cut from (read once per process)."""
    return tuple(" ".join(real_sentences(400)).split())


def prompts(load: OpenAiLoad, count: int, seed: int = 0) -> list[str]:
    """count unique prompts of about load.prompt_tokens tokens from real prose, each starting with its number."""
    words = prose_words()
    rng = random.Random(seed)
    size = max(1, int(load.prompt_tokens * WORDS_PER_TOKEN))
    out = []
    for i in range(count):
        start = rng.randrange(0, max(1, len(words) - size))
        out.append(f"Request {seed}-{i}. Summarise: " + " ".join(words[start : start + size]))
    return out


def system_prompt(load: OpenAiLoad) -> str:
    """The shared system prompt (empty when none is asked for)."""
    if not load.shared_prefix_tokens:
        return ""
    words = prose_words()
    return "You answer from this text: " + " ".join(words[: int(load.shared_prefix_tokens * WORDS_PER_TOKEN)])


def request_body(load: OpenAiLoad, model: str, prompt: str, system: str) -> dict[str, Any]:
    """A streamed completion request with usage reported at the end."""
    body: dict[str, Any] = {"model": model, "max_tokens": load.max_tokens, "temperature": 0, "stream": True,
                            "stream_options": {"include_usage": True}, "ignore_eos": load.ignore_eos}  # fmt: skip
    if load.chat:
        messages = [{"role": "system", "content": system}] if system else []
        body["messages"] = [*messages, {"role": "user", "content": prompt}]
    else:
        body["prompt"] = f"{system}\n\n{prompt}" if system else prompt
    return body


async def send(http: aiohttp.ClientSession, load: OpenAiLoad, body: dict[str, Any], start: float) -> Record:
    """One streamed request; timings from `start` (its intended send time)."""
    route = "chat/completions" if load.chat else "completions"
    record = Record("?")
    chunks: list[float] = []
    try:
        async with http.post(f"{load.base}/{route}", json=body) as response:
            record.status, record.answered_s = str(response.status), time.perf_counter() - start
            if response.status != 200:
                await response.read()
                return record
            async for raw in response.content:
                line = raw.decode().strip()
                if not line.startswith("data:") or line == "data: [DONE]":
                    continue
                data = json.loads(line.removeprefix("data:"))
                if "error" in data:
                    record.status = "stream error"
                    return record
                if content_of(data, load.chat):
                    chunks.append(time.perf_counter() - start)
                if data.get("usage"):
                    record.output_tokens = int(data["usage"].get("completion_tokens", 0))
                    record.prompt_tokens = int(data["usage"].get("prompt_tokens", 0))
    except (TimeoutError, aiohttp.ClientError, json.JSONDecodeError) as err:
        record.status = type(err).__name__
        return record
    if chunks:
        record.ttft_s, record.e2e_s = chunks[0], time.perf_counter() - start
        record.itl_s = list(np.diff(chunks))
        record.output_tokens = record.output_tokens or len(chunks)
    return record


def content_of(chunk: dict[str, Any], chat: bool) -> str:
    """The text a streamed chunk carries ("" for role, finish and usage chunks)."""
    choices = chunk.get("choices") or [{}]
    return str((choices[0].get("delta") or {}).get("content") or "") if chat else str(choices[0].get("text") or "")


@dataclass(frozen=True)
class LoadRun:
    """One closed-loop concurrency or open-loop rate, and what every request saw."""

    mode: str
    level: float
    """Concurrency (closed) or requests/s (open)."""
    duration_s: float
    records: list[Record] = field(repr=False)
    ttft_target_s: float = 1.0
    tpot_target_s: float = 0.1
    seed: int = field(default_factory=lambda: time.time_ns() % 2**31)
    """Picks the prompts; new per run by default, so that a rerun does not find its prompts in a server's cache."""

    def summary(self) -> LoadSummary:
        """vLLM bench-serve style metrics (milliseconds, tokens/s), errors by status."""
        ok = [r for r in self.records if r.ok]
        out = sum(r.output_tokens for r in ok)
        good = [r for r in ok if r.ttft_s <= self.ttft_target_s and not r.tpot_s > self.tpot_target_s]
        return LoadSummary(
            self.mode, self.level, self.duration_s, len(ok), len(self.records) - len(ok),
            dict(Counter(r.status for r in self.records if not r.ok)),
            spread([r.answered_s for r in self.records if r.status in ("429", "503")]),
            len(ok) / self.duration_s, out / self.duration_s,
            (out + sum(r.prompt_tokens for r in ok)) / self.duration_s,
            len(good) / self.duration_s, len(good) / len(self.records) if self.records else 0,
            spread([r.ttft_s for r in ok]), spread([r.tpot_s for r in ok]), spread([x for r in ok for x in r.itl_s]),
            spread([r.e2e_s for r in ok]),
        )  # fmt: skip


@dataclass(frozen=True)
class Spread:
    """Mean, median and p99 of one latency over a step's requests, milliseconds (nan without samples)."""

    mean: float
    median: float
    p99: float


def spread(seconds: list[float]) -> Spread:
    """The Spread of latencies in seconds (nan values, as TPOT of a one-token answer, left out)."""
    v = np.asarray([x for x in seconds if x == x]) * 1000
    if not len(v):
        return Spread(float("nan"), float("nan"), float("nan"))
    return Spread(float(v.mean()), float(np.median(v)), float(np.percentile(v, 99)))


@dataclass(frozen=True)
class LoadSummary:
    """One load step in vLLM bench-serve's terms: requests done and failed (errors by status), throughputs in
    requests and tokens per second, goodput (requests/s inside the TTFT and TPOT targets) and latencies in ms."""

    mode: str
    level: float
    duration_s: float
    completed: int
    failed: int
    errors: dict[str, int]
    refusal_ms: Spread
    """How fast a 429/503 came back."""
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    goodput: float
    good_share: float
    ttft_ms: Spread
    tpot_ms: Spread
    itl_ms: Spread
    e2el_ms: Spread

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the keys bench --openai --json writes)."""
        return asdict(self)


async def served_model(http: aiohttp.ClientSession, load: OpenAiLoad) -> str:
    """The model to ask for: load.model, or the first the server lists (InvalidInput when none answers)."""
    if load.model:
        return load.model
    try:
        async with http.get(f"{load.base}/models") as response:
            data = await response.json(content_type=None)
        return str(data["data"][0]["id"])
    except (aiohttp.ClientError, OSError, KeyError, IndexError, TypeError, json.JSONDecodeError) as err:
        raise InvalidInput(f"cannot list the models at {load.base}/models: {err}") from None


async def closed_loop(load: OpenAiLoad, concurrency: int, requests: int, step: int = 0) -> LoadRun:
    """`concurrency` clients, each sending its next request when the last one ends, `requests` in all."""
    if concurrency < 1 or requests < 1:
        raise InvalidInput("closed loop needs concurrency >= 1 and requests >= 1")
    async with session(load, concurrency) as http:
        model, system = await served_model(http, load), system_prompt(load)
        bodies = [request_body(load, model, p, system) for p in prompts(load, requests, load.seed + step)]
        records: list[Record] = []
        begin = time.perf_counter()

        async def client(index: int) -> None:
            for body in bodies[index::concurrency]:
                records.append(await send(http, load, body, time.perf_counter()))

        await asyncio.gather(*(client(i) for i in range(concurrency)))
        elapsed = time.perf_counter() - begin
    return LoadRun("closed", concurrency, elapsed, records, load.ttft_target_s, load.tpot_target_s)


async def open_loop(load: OpenAiLoad, rate: float, requests: int, step: int = 0) -> LoadRun:
    """Poisson arrivals at `rate` requests/s, whatever the answers; timings from each intended send time."""
    if rate <= 0 or requests < 1:
        raise InvalidInput("open loop needs a positive rate and requests >= 1")
    async with session(load, 4096) as http:
        model, system = await served_model(http, load), system_prompt(load)
        bodies = [request_body(load, model, p, system) for p in prompts(load, requests, load.seed + step)]
        begin = time.perf_counter()
        tasks = []
        times = arrival_times(rate, requests / rate, "poisson", load.seed + step)
        for body, offset in zip(bodies, times, strict=False):
            delay = begin + offset - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(send(http, load, body, begin + offset)))
        records = list(await asyncio.gather(*tasks))
        elapsed = time.perf_counter() - begin
    return LoadRun("open", rate, elapsed, records, load.ttft_target_s, load.tpot_target_s)


def session(load: OpenAiLoad, connections: int) -> aiohttp.ClientSession:
    """A client with a pool sized for the load and a fresh connection per request: reusing a kept-alive one races
    with servers that close idle connections (llama.cpp's dropped a third of the requests that way)."""
    connector = aiohttp.TCPConnector(limit=connections, force_close=True)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=load.timeout_s))


def history_row(run: LoadRun, model: str, url: str) -> dict[str, Any]:
    """One load step as bench.history stores it: TPOT as the latency, output tokens/s as the throughput."""
    s, tpots = run.summary(), [r.tpot_s for r in run.records if r.ok and r.tpot_s == r.tpot_s]
    return {"variant": {"model_name": model, "label": f"{url} {run.mode} {run.level:g}", "backend": "openai-http",
                        "bench": "serve", "mode": run.mode, "level": run.level},
            "batch": int(run.level) if run.mode == "closed" else 1,
            "latency": {"median": s.tpot_ms.median / 1000, "p99": s.tpot_ms.p99 / 1000},
            "throughput": s.output_throughput, "samples_s": tpots}  # fmt: skip
