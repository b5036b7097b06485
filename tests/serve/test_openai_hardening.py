"""No request can stop the LLM server, and a failed engine heals itself. A real server on a real socket serving
SmolLM2 on OpenVINO GenAI in its own process: the corpus of wrong and odd OpenAI requests (each case answered as
it must be, never a 5xx, a normal chat answered after every one), disconnects mid-stream and truncated raw
requests, a request that raises inside the engine, and the engine process killed mid-stream, killed while idle
and hung: in-flight requests get clean errors, the engine restarts, the next requests succeed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time
import urllib.request

import pytest

from tests.support.http import metric, running
from tests.support.llm_server import CONFIG, LIMITS, MODEL, call, chat, sse, wait_for, wait_healthy
from turboinfer.bench.openai_corpus import OpenAiProbe, mutations, named_cases
from turboinfer.runtime.llm.generate import GenerationRequest, Sampling
from turboinfer.serve.openai.ticket import Ticket
from turboinfer.serve.run import OpenAiModels, compose, llm_serving

ROUTES = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


@pytest.fixture(scope="module")
def hardened(settings):
    """(base URL, Server, engine) of a running LLM server."""
    serving = llm_serving(MODEL, settings, LIMITS, threads=2, cache_gb=0.25)
    server = compose(CONFIG, openai=OpenAiModels({MODEL: (serving.engine, serving.scheduler)}))
    with running(server) as base:
        wait_healthy(base)
        yield base, server, serving.engine


def still_chats(base: str) -> None:
    status, _, answer = call(f"{base}/v1/chat/completions", chat(max_tokens=1))
    assert status == 200, answer


def send(base: str, probe: OpenAiProbe) -> tuple[int, str]:
    """Status and raw body of one probe (a streamed answer read to its end)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        head = (f"POST {ROUTES[probe.route]} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(probe.body)}\r\nConnection: close\r\n\r\n").encode()  # fmt: skip
        sock.sendall(head + probe.body)
        raw = b"".join(iter(lambda: sock.recv(65536), b""))
    assert raw.startswith(b"HTTP/1.1 "), (probe.kind, raw[:200])  # never a connection dropped without an answer
    return int(raw[9:12]), raw.split(b"\r\n\r\n", 1)[1].decode(errors="replace")


@pytest.mark.parametrize("case", named_cases(MODEL, 49152), ids=lambda c: c.kind)
def test_each_named_case_is_answered_as_it_must_be(hardened, case):
    base = hardened[0]
    status, _, answer = call(f"{base}{ROUTES[case.route]}", case.body)
    assert status == case.status, answer
    if status == 400:
        assert case.says in answer["error"]["message"] and answer["error"]["type"] == "invalid_request_error"
    still_chats(base)


def test_every_field_at_odd_values_is_never_a_5xx(hardened):
    base = hardened[0]
    seen: dict[int, int] = {}
    for probe in mutations(MODEL, count=300):
        status, body = send(base, probe)
        assert status < 500, (probe.kind, probe.body[:200], body[:300])
        seen[status] = seen.get(status, 0) + 1
        still_chats(base)
    assert seen.get(200, 0) > 0 and seen.get(400, 0) > 0  # the corpus reaches both sides
    text = urllib.request.urlopen(f"{base}/metrics").read().decode()
    assert metric(text, f'turboinfer_llm_client_errors_total{{model="{MODEL}",param="temperature"}}') > 0


def test_disconnects_and_truncated_requests_leave_the_server_serving(hardened):
    base, server = hardened[:2]
    host, port = base.removeprefix("http://").split(":")
    scheduler = server.frontends["openai"].schedulers[MODEL]
    for read in (0, 1, 3):  # gone before the first event, after the role chunk, after some text
        with sse(base, "/v1/chat/completions", chat(max_tokens=500, ignore_eos=True, stream=True)) as lines:
            for _ in range(read):
                next(lines)
        still_chats(base)
    body = json.dumps(chat()).encode()
    raw_cuts = [b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Le",
                b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body[:20]),
                b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", b"GARBAGE\r\n\r\n"]  # fmt: skip
    for raw in raw_cuts:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(raw)
        still_chats(base)
    wait_for(lambda: scheduler.running == 0, 10)


def test_a_request_that_raises_inside_the_engine_fails_alone(hardened):
    """A top_k the engine cannot take (beyond its size_t), handed to the scheduler past the edge's checks:
    OpenVINO GenAI raises a TypeError in the engine's process; that request fails, the engine keeps serving (no
    restart)."""
    base, server = hardened[:2]
    scheduler = server.frontends["openai"].schedulers[MODEL]
    restarts = scheduler.metrics.engine_restarts.labels(MODEL)._value.get()

    async def poisoned() -> BaseException:
        request = GenerationRequest("Hello", 4, Sampling(temperature=0.7, top_k=2**64))
        ticket = scheduler.submit(Ticket(request, asyncio.get_running_loop()))
        with pytest.raises(Exception) as raised:
            await ticket.result()
        return raised.value

    err = asyncio.run(poisoned())
    assert type(err).__name__ == "TypeError" and scheduler.state == "ready"
    assert scheduler.metrics.engine_restarts.labels(MODEL)._value.get() == restarts
    still_chats(base)


def test_an_engine_killed_mid_stream_fails_its_streams_restarts_and_serves_again(hardened):
    base, _, engine = hardened
    with sse(base, "/v1/chat/completions", chat(max_tokens=1000, ignore_eos=True, stream=True)) as lines:
        next(lines), next(lines)
        os.kill(engine.pid, signal.SIGKILL)
        events = list(lines)
    assert events[-1] == "[DONE]"
    error = json.loads(events[-2])["error"]
    assert error["type"] == "service_unavailable" and "engine failed while generating this request" in error["message"]
    status, _, health = call(f"{base}/health")
    assert status == 503 and health["models"][MODEL]["state"] == "restarting"
    start = time.monotonic()
    wait_healthy(base)
    ready_in = time.monotonic() - start
    still_chats(base)
    assert ready_in < 60


def test_an_engine_that_dies_idle_is_found_by_the_heartbeat_and_one_that_hangs_is_killed(hardened):
    base, server, engine = hardened
    scheduler = server.frontends["openai"].schedulers[MODEL]
    os.kill(engine.pid, signal.SIGKILL)  # nothing running: the idle ping finds it
    wait_for(lambda: scheduler.state != "ready", 10)
    wait_healthy(base)
    still_chats(base)
    engine.call_timeout_s = 2.0
    try:
        with sse(base, "/v1/chat/completions", chat(max_tokens=1000, ignore_eos=True, stream=True)) as lines:
            next(lines), next(lines)
            os.kill(engine.pid, signal.SIGSTOP)  # alive, but it answers nothing
            events = list(lines)
        assert "did not answer in 2 s (hung)" in json.loads(events[-2])["error"]["message"]
        wait_healthy(base)
        still_chats(base)
    finally:
        engine.call_timeout_s = 120.0
    text = urllib.request.urlopen(f"{base}/metrics").read().decode()
    label = f'{{model="{MODEL}"}}'
    assert metric(text, f"turboinfer_llm_engine_restarts_total{label}") >= 3
    assert metric(text, f"turboinfer_llm_engine_failures_total{label}") >= 3
    assert metric(text, f'turboinfer_llm_requests_total{{model="{MODEL}",outcome="engine_failed"}}') >= 2
