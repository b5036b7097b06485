"""The search server on a real socket: search, thumbnails, the page, bad input, and the model's own routes."""

from __future__ import annotations

import hashlib
import json
import socket
import sqlite3
import urllib.error
import urllib.request

import pytest

from tests.support.gallery import PCA
from tests.support.http import metric, running
from turboinfer.apps.imagesearch.index import GalleryIndex, IndexConfig, build_index
from turboinfer.apps.imagesearch.service import search_server
from turboinfer.core.errors import InvalidInput
from turboinfer.models.variant import parse_variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.v2.batcher import BatcherConfig


def call(url: str, body: bytes | None = None) -> tuple[int, bytes, str]:
    """(status, body, content type) of a GET, or a POST when body is given."""
    request = urllib.request.Request(url, body, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(), response.headers["content-type"]
    except urllib.error.HTTPError as err:
        return err.code, err.read(), err.headers["content-type"]


def test_a_gallery_photo_finds_itself(search_url, gallery):
    photo = sorted(gallery.glob("*.jpg"))[3]
    status, body, kind = call(f"{search_url}/v1/search?k=5", photo.read_bytes())
    assert status == 200 and kind == "application/json"
    answer = json.loads(body)
    assert answer["results"][0]["name"] == photo.name and len(answer["results"]) == 5
    assert set(answer["timings_ms"]) == {"decode", "embed", "search", "total"}
    assert "/" not in answer["results"][0]["name"]  # names, never paths
    status, thumb, kind = call(search_url + answer["results"][0]["thumbnail"])
    assert status == 200 and kind == "image/jpeg" and thumb[:2] == b"\xff\xd8"


def test_bad_queries_are_4xx_and_the_server_keeps_serving(search_url, gallery):
    photo = sorted(gallery.glob("*.jpg"))[0].read_bytes()
    cases = [
        (f"{search_url}/v1/search", b"this is not an image", 400, "not a decodable image"),
        (f"{search_url}/v1/search", photo[:300], 400, "corrupt"),
        (f"{search_url}/v1/search?k=0", photo, 400, "k must be between 1 and 100"),
        (f"{search_url}/v1/search?k=ten", photo, 400, "k must be an integer"),
    ]
    for url, body, status, message in cases:
        got, answer, _ = call(url, body)
        assert got == status and message in json.loads(answer)["error"], (url, answer)
    host, port = search_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:  # declared over the limit: 413 at once
        sock.sendall(f"POST /v1/search HTTP/1.1\r\nHost: {host}\r\nContent-Length: {2**20 + 1}\r\n\r\n".encode())
        reply = sock.recv(65536).decode(errors="replace")
    assert reply.startswith("HTTP/1.1 413") and "over the 1048576-byte limit" in reply
    assert call(f"{search_url}/v1/gallery/99999/thumbnail")[0] == 404
    assert call(f"{search_url}/v1/gallery/..%2F..%2Fetc/thumbnail")[0] == 404
    assert call(f"{search_url}/v1/search", photo)[0] == 200


def test_page_index_and_metrics(search_url):
    status, page, kind = call(search_url + "/")
    assert status == 200 and kind.startswith("text/html") and b'id="file"' in page
    info = json.loads(call(search_url + "/v1/index")[1])
    assert info == {"model": "efficientnet-lite0", "photos": 24, "dims": 1280, "pca": 8, "kind": "flat",
                    "preprocess": "fast"}  # fmt: skip
    text = call(search_url + "/metrics")[1].decode()
    assert metric(text, 'turboinfer_requests_total{model="efficientnet-lite0",outcome="ok"}') >= 1
    assert call(search_url + "/v2/models/efficientnet-lite0/ready")[0] == 200


def test_the_baseline_preprocessing_gives_the_same_answer(built, gallery, settings):
    photo = sorted(gallery.glob("*.jpg"))[5]
    batching = BatcherConfig(max_batch=1, max_delay_s=0)
    server, service = search_server(GalleryIndex(built), parse_variant("efficientnet-lite0", settings),
                                    ServeConfig(batching), batching, preprocess="baseline")  # fmt: skip
    with running(server, server.app(service.routes())) as base:
        answer = json.loads(call(f"{base}/v1/search?k=1", photo.read_bytes())[1])
    assert answer["preprocess"] == "baseline" and answer["results"][0]["name"] == photo.name


def test_serving_another_model_is_refused(built, settings, mobilenet):
    batching = BatcherConfig()
    with pytest.raises(InvalidInput, match="built with efficientnet-lite0"):
        search_server(GalleryIndex(built), parse_variant("mobilenetv2", settings), ServeConfig(batching), batching)
    with pytest.raises(InvalidInput, match="unknown preprocessing 'gpu'"):
        search_server(GalleryIndex(built), parse_variant("efficientnet-lite0", settings), ServeConfig(batching),
                      batching, preprocess="gpu")  # fmt: skip


def test_replicas_share_one_sharded_index_folder_read_only(tmp_path, gallery, search_url, settings):
    variant = parse_variant("efficientnet-lite0", settings)
    build_index(gallery, tmp_path, variant, IndexConfig(pca=PCA, shards=3))
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.iterdir()}
    path = sorted(gallery.glob("*.jpg"))[7]
    photo = path.read_bytes()
    single = json.loads(call(f"{search_url}/v1/search?k=5", photo)[1])["results"]
    answers = []
    indexes = [GalleryIndex(tmp_path), GalleryIndex(tmp_path)]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        indexes[0].store.set_meta({"touched": True})
    for index in indexes:
        batching = BatcherConfig(max_batch=2, max_delay_s=0.001)
        server, service = search_server(index, variant, ServeConfig(batching), batching)
        with running(server, server.app(service.routes())) as base:
            answers.append(json.loads(call(f"{base}/v1/search?k=5", photo)[1])["results"])
            assert json.loads(call(f"{base}/v1/index")[1])["photos"] == 24
    names = [[hit["name"] for hit in answer] for answer in (single, *answers)]
    assert names[0] == names[1] == names[2] and names[0][0] == path.name
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.iterdir()} == before
