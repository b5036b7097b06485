"""HTTP load generator: open loop (fixed arrival rate; latency from the intended send time, so queueing shows)
and closed loop (N clients back to back), plus a rate sweep for the highest rate whose p99 meets a target."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp
import numpy as np

from turboinfer.bench.requests import Request
from turboinfer.core.errors import InvalidInput

SEND_SLACK_S = 0.001
"""Open loop sends a request up to this early instead of sleeping for less (sub-ms sleeps cost more than they
buy); latency is still counted from the intended time."""


@dataclass(frozen=True)
class LoadResult:
    """What a load run saw: achieved rate, latency of successful requests, failures by status or error."""

    mode: str
    offered_rate: float | None
    """Requests/s asked for (open loop); None for closed loop."""
    concurrency: int | None
    duration_s: float
    sent: int
    ok: int
    statuses: dict[str, int]
    latencies_s: np.ndarray = field(repr=False)
    """Per successful request: completion minus intended send time (open) or send time (closed)."""
    refused_latencies_s: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    """The same for requests the server refused (429/503): how fast overload is answered."""

    @property
    def achieved_rate(self) -> float:
        """Successful responses per second."""
        return self.ok / self.duration_s if self.duration_s else 0.0

    def percentile(self, q: float) -> float:
        """A latency percentile in seconds (nan with no successes)."""
        return float(np.percentile(self.latencies_s, q)) if len(self.latencies_s) else float("nan")

    @property
    def error_rate(self) -> float:
        """Share of sent requests that did not succeed."""
        return 1 - self.ok / self.sent if self.sent else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON form (seconds)."""
        return {
            "mode": self.mode, "offered_rate": self.offered_rate, "concurrency": self.concurrency,
            "duration_s": self.duration_s, "sent": self.sent, "ok": self.ok, "statuses": self.statuses,
            "achieved_rate": self.achieved_rate, "error_rate": self.error_rate,
            "p50_s": self.percentile(50), "p90_s": self.percentile(90), "p99_s": self.percentile(99),
        }  # fmt: skip


class Recorder:
    """Collects outcomes of requests as they finish."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.refused: list[float] = []
        self.statuses: Counter[str] = Counter()
        self.sent = 0

    async def send(self, http: aiohttp.ClientSession, url: str, request: Request, start: float) -> None:
        """POST one request; record latency from `start` on a 2xx, else the status or error type."""
        self.sent += 1
        try:
            async with http.post(url, data=request.body, headers=request.headers) as response:
                await response.read()
                status = str(response.status)
        except (TimeoutError, aiohttp.ClientError) as err:
            status = type(err).__name__
        self.statuses[status] += 1
        if status.startswith("2"):
            self.latencies.append(time.perf_counter() - start)
        elif status in ("429", "503"):
            self.refused.append(time.perf_counter() - start)

    def result(self, mode: str, rate: float | None, concurrency: int | None, duration: float) -> LoadResult:
        """Freeze into a LoadResult."""
        ok = len(self.latencies)
        return LoadResult(
            mode,
            rate,
            concurrency,
            duration,
            self.sent,
            ok,
            dict(self.statuses),
            np.asarray(self.latencies),
            np.asarray(self.refused),
        )


def client(timeout_s: float, connections: int) -> aiohttp.ClientSession:
    """An HTTP client with a connection pool sized for the load and a per-request timeout."""
    connector = aiohttp.TCPConnector(limit=connections, force_close=False)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=timeout_s))


async def check_reachable(url: str, timeout_s: float = 3.0) -> None:
    """Fail before the run starts when nothing listens at url (any HTTP answer counts as reachable)."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as http,
            http.get(url) as response,
        ):
            await response.read()
    except (TimeoutError, aiohttp.ClientError, OSError) as err:
        raise InvalidInput(f"cannot reach {url}: {err}") from None


def arrival_times(rate: float, duration: float, process: Literal["constant", "poisson"], seed: int) -> np.ndarray:
    """Intended send times (s from start) at `rate` requests/s for `duration` s."""
    count = int(rate * duration)
    if process == "constant":
        return np.arange(count) / rate
    gaps = np.random.default_rng(seed).exponential(1 / rate, size=count)
    return np.cumsum(gaps) - gaps[0]


async def open_loop(
    url: str, requests: Sequence[Request], rate: float, duration: float, *,
    process: Literal["constant", "poisson"] = "poisson", seed: int = 0, timeout_s: float = 10.0,
    max_in_flight: int = 2048,
) -> LoadResult:  # fmt: skip
    """Send at a fixed arrival rate regardless of responses; latency counts from each intended send time."""
    if rate <= 0 or not requests:
        raise InvalidInput("open loop needs a positive rate and at least one request body")
    recorder = Recorder()
    async with client(timeout_s, max_in_flight) as http:
        begin = time.perf_counter()
        tasks = []
        for i, offset in enumerate(arrival_times(rate, duration, process, seed)):
            intended = begin + offset
            delay = intended - time.perf_counter()
            if delay > SEND_SLACK_S:
                await asyncio.sleep(delay - SEND_SLACK_S / 2)
            elif i % 16 == 0:
                await asyncio.sleep(0)  # let responses in between bursts of due sends
            tasks.append(asyncio.create_task(recorder.send(http, url, requests[i % len(requests)], intended)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - begin
    return recorder.result("open", rate, None, max(elapsed, duration))


async def closed_loop(
    url: str, requests: Sequence[Request], concurrency: int, duration: float, *, timeout_s: float = 10.0
) -> LoadResult:
    """N clients, each sending its next request as soon as the last one returns, for `duration` seconds."""
    if concurrency < 1 or not requests:
        raise InvalidInput("closed loop needs concurrency >= 1 and at least one request body")
    recorder = Recorder()
    async with client(timeout_s, concurrency) as http:
        begin = time.perf_counter()
        deadline = begin + duration

        async def worker(index: int) -> None:
            i = index
            while time.perf_counter() < deadline:
                await recorder.send(http, url, requests[i % len(requests)], time.perf_counter())
                i += concurrency

        await asyncio.gather(*(worker(i) for i in range(concurrency)))
        elapsed = time.perf_counter() - begin
    return recorder.result("closed", None, concurrency, elapsed)


async def rate_sweep(
    url: str, requests: Sequence[Request], p99_target_s: float, *, start_rate: float = 10.0,
    step_seconds: float = 5.0, max_error_rate: float = 0.01, refine_steps: int = 3, max_rate: float = 100_000.0,
    min_requests: int = 0, halvings: int = 3,
) -> tuple[float | None, list[LoadResult]]:  # fmt: skip
    """Highest open-loop rate whose p99 ≤ target with < max_error_rate errors: double until a step fails (or halve,
    up to `halvings` times, until one passes when the first fails), then bisect.

    Each step lasts step_seconds, or longer at low rates so that it sends at least min_requests.
    """

    def passes(r: LoadResult) -> bool:
        return r.ok > 0 and r.error_rate < max_error_rate and r.percentile(99) <= p99_target_s

    async def step(rate: float) -> bool:
        tried.append(await open_loop(url, requests, rate, max(step_seconds, min_requests / rate)))
        return passes(tried[-1])

    tried: list[LoadResult] = []
    good: float | None = None
    bad: float | None = None
    rate = start_rate
    if not await step(rate):
        bad = rate
        for _ in range(halvings):
            rate /= 2
            if await step(rate):
                good = rate
                break
            bad = rate
    else:
        good = rate
        while bad is None and rate * 2 <= max_rate:
            rate *= 2
            good, bad = (rate, bad) if await step(rate) else (good, rate)
    for _ in range(refine_steps if good is not None and bad is not None else 0):
        middle = (good + bad) / 2  # type: ignore[operator]
        good, bad = (middle, bad) if await step(middle) else (good, middle)
    return good, tried
