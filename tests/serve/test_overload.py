"""Overload over a real socket: past the queue, image requests are refused with 429 and Retry-After
(before their photo is decoded), every admitted request still gets its answer, and the metrics count both."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

from tests.support.http import call, metric, running
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import parse_variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.run import build_server
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import ModelServing

BURST = 24


def test_a_burst_past_the_queue_is_refused_at_once_and_loses_no_admitted_request(effnet, settings):
    batching = BatcherConfig(max_batch=1, max_delay_s=0.0, queue_size=2)
    server = build_server([ModelServing(parse_variant("efficientnet-lite0", settings), batching)],
                          ServeConfig(batching))  # fmt: skip
    photo = max(all_photos(settings), key=lambda p: p.stat().st_size).read_bytes()  # a slow decode
    with running(server) as base, ThreadPoolExecutor(BURST) as pool:
        url = f"{base}/v1/models/efficientnet-lite0/image"
        results = list(pool.map(lambda _: call(url, photo, {"Content-Type": "image/jpeg"}), range(BURST)))
        text = call(f"{base}/metrics")[2].decode()
    statuses = [status for status, _, _ in results]
    refused = [r for r in results if r[0] == 429]
    assert set(statuses) <= {200, 429} and refused and statuses.count(200) >= 2
    assert all({k.lower(): v for k, v in h.items()}.get("retry-after") == "1" for _, h, _ in refused)
    assert all(b"requests waiting or decoding" in body for _, _, body in refused)  # refused at the door
    assert metric(text, 'turboinfer_requests_total{model="efficientnet-lite0",outcome="queue_full"}') == len(refused)
    assert metric(text, 'turboinfer_requests_total{model="efficientnet-lite0",outcome="ok"}') == statuses.count(200)


def test_a_full_queue_refuses_before_reading_the_body(effnet, settings):
    batching = BatcherConfig(max_batch=1, max_delay_s=0.0, queue_size=1)
    server = build_server([ModelServing(parse_variant("efficientnet-lite0", settings), batching)],
                          ServeConfig(batching, body_timeout_s=5.0))  # fmt: skip
    photo = all_photos(settings)[0].read_bytes()
    with running(server) as base:
        host, port = base.removeprefix("http://").split(":")
        model = server.frontends["v2"].models["efficientnet-lite0"]
        model.admitted = 1  # one request being decoded fills the queue
        with socket.create_connection((host, int(port)), timeout=3) as sock:  # < body timeout: no waiting for it
            head = (f"POST /v1/models/efficientnet-lite0/image HTTP/1.1\r\nHost: {host}\r\n"
                    f"Content-Type: image/jpeg\r\nContent-Length: {len(photo)}\r\n\r\n")  # fmt: skip
            sock.sendall(head.encode() + photo[:100])  # the rest never comes
            reply = sock.recv(65536).decode(errors="replace")
        model.admitted = 0
        assert call(f"{base}/v1/models/efficientnet-lite0/image", photo, {"Content-Type": "image/jpeg"})[0] == 200
    assert reply.startswith("HTTP/1.1 429") and "queue full" in reply
