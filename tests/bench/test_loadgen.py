"""The load generator against a real HTTP server on loopback."""

import asyncio
import json

import numpy as np
import pytest

from turboinfer.bench.loadgen import arrival_times, check_reachable, closed_loop, open_loop, rate_sweep
from turboinfer.bench.requests import Request, image_requests, v2_binary_request, v2_json_request
from turboinfer.core.errors import InvalidInput
from turboinfer.models.photos import labelled_imagenet_photos

BODY = [Request(b"x" * 100, {"Content-Type": "application/octet-stream"})]


def test_open_loop_sends_at_the_asked_rate(server):
    result = asyncio.run(open_loop(f"{server}/ok", BODY, rate=200, duration=1.0))
    assert result.sent == 200 and result.ok == 200
    assert result.statuses == {"200": 200}
    assert 150 <= result.achieved_rate <= 210
    assert result.percentile(50) < 0.05


def test_open_loop_shows_queueing_from_the_intended_send_time(server):
    # /slow serves 2 at a time in 20 ms: ~100/s capacity; offering 200/s for 1 s must queue
    result = asyncio.run(open_loop(f"{server}/slow", BODY, rate=200, duration=1.0, process="constant"))
    assert result.ok == result.sent == 200
    assert result.percentile(99) > 0.5  # the last requests waited ~1 s behind the queue
    assert result.percentile(50) > 0.1


def test_closed_loop_and_error_counting(server):
    ok = asyncio.run(closed_loop(f"{server}/ok", BODY, concurrency=8, duration=0.5))
    assert ok.ok > 50 and ok.error_rate == 0
    failing = asyncio.run(closed_loop(f"{server}/fail", BODY, concurrency=2, duration=0.3))
    assert failing.ok == 0 and set(failing.statuses) == {"500"} and failing.error_rate == 1.0
    assert json.dumps(failing.to_dict())


def test_unreachable_url_fails_before_the_run():
    with pytest.raises(InvalidInput, match="cannot reach"):
        asyncio.run(check_reachable("http://127.0.0.1:9/"))


def test_rate_sweep_finds_the_capacity(server):
    best, tried = asyncio.run(
        rate_sweep(f"{server}/slow", BODY, p99_target_s=0.15, start_rate=25, step_seconds=1.0, refine_steps=1)
    )
    assert best is not None and 25 <= best <= 150  # capacity is ~100 requests/s
    assert len(tried) >= 3


@pytest.mark.slow  # the sweep's search is covered by test_rate_sweep_finds_the_capacity
def test_rate_sweep_comes_down_when_it_starts_above_the_capacity(server):
    best, tried = asyncio.run(
        rate_sweep(f"{server}/slow", BODY, p99_target_s=0.15, start_rate=400, step_seconds=1.0, refine_steps=1)
    )
    assert [round(r.offered_rate) for r in tried[:2]] == [400, 200]
    assert best is not None and 25 <= best <= 150


def test_poisson_arrivals_have_the_asked_rate():
    times = arrival_times(1000, 10, "poisson", seed=1)
    assert len(times) == 10_000
    assert times[-1] == pytest.approx(10, rel=0.05)


def test_request_bodies():
    photos = [p for p, _ in labelled_imagenet_photos()[:2]]
    images = image_requests(photos)
    assert images[0].headers["Content-Type"] == "image/jpeg" and images[0].body == photos[0].read_bytes()
    feeds = {"image": np.arange(6, dtype=np.float32).reshape(1, 6)}
    as_json = json.loads(v2_json_request(feeds, "r1").body)
    assert as_json == {"inputs": [{"name": "image", "shape": [1, 6], "datatype": "FP32",
                                   "data": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}], "id": "r1"}  # fmt: skip
    binary = v2_binary_request(feeds)
    head_length = int(binary.headers["Inference-Header-Content-Length"])
    header = json.loads(binary.body[:head_length])
    assert header["inputs"][0]["parameters"]["binary_data_size"] == 24
    assert np.frombuffer(binary.body[head_length:], dtype="<f4").tolist() == [0, 1, 2, 3, 4, 5]
