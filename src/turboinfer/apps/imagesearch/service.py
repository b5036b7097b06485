"""The search server: turboinfer's inference server (dynamic batching, metrics, health) plus /v1/search,
gallery thumbnails and a web page. Query path: admit → decode → batched embedding → PCA + FAISS search."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from turboinfer.apps.imagesearch.embed import feature_output, image_preprocess, l2_normalize
from turboinfer.apps.imagesearch.index import GalleryIndex, Hit
from turboinfer.apps.imagesearch.shards import import_faiss
from turboinfer.core.errors import InvalidInput
from turboinfer.models.preprocess import image_tensor
from turboinfer.models.variant import Variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.http import error
from turboinfer.serve.run import V2Models, compose
from turboinfer.serve.server import Server
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.model import Call
from turboinfer.serve.v2.routes import V2Routes, check_servable

PAGE = Path(__file__).parent / "static" / "index.html"
THUMBNAIL_SIDE = 256
MAX_K = 100
PREPROCESS_KINDS = ("fast", "baseline")
"""fast: the data path's pipeline (DCT-downscaled decode, fused normalize); baseline: Pillow full decode +
torchvision-style resize/crop/normalize, the seed's starting point."""


def hit_json(hit: Hit) -> dict[str, Any]:
    """One result as the page and clients see it (a URL for the photo, never its path)."""
    return {"id": hit.id, "name": hit.path.name, "score": round(hit.score, 4),
            "thumbnail": f"/v1/gallery/{hit.id}/thumbnail"}  # fmt: skip


@lru_cache(maxsize=2048)
def thumbnail(path: Path, side: int = THUMBNAIL_SIDE) -> bytes:
    """A gallery photo shrunk to side pixels, as JPEG bytes (the last 2048 kept: ~30 MiB)."""
    with Image.open(path) as image:
        image.draft("RGB", (side, side))
        small = image.convert("RGB")
    small.thumbnail((side, side))
    out = io.BytesIO()
    small.save(out, format="JPEG", quality=85)
    return out.getvalue()


class SearchService:
    """Search routes over the V2 front-end that serves the gallery's embedding model (see search_server)."""

    def __init__(self, server: V2Routes, gallery: GalleryIndex, variant: Variant, preprocess: str = "fast") -> None:
        if preprocess not in PREPROCESS_KINDS:
            raise InvalidInput(f"unknown preprocessing {preprocess!r}; choose one of {', '.join(PREPROCESS_KINDS)}")
        self.server, self.gallery, self.card = server, gallery, variant.card
        self.output = feature_output(variant.card)
        spec = image_preprocess(variant.card)
        self.pipeline: Callable[[bytes], np.ndarray] | None = (
            partial(image_tensor, spec=spec) if preprocess == "baseline" else None
        )
        self.preprocess = preprocess
        import_faiss().omp_set_num_threads(1)  # one query at a time is tiny; FAISS's spinning threads would fight ORT's

    async def search_answer(self, call: Call) -> Response:
        """Image bytes → the k most similar gallery photos with scores, and the time each stage took."""
        k = int_param(call.request, "k", 10, 1, MAX_K)
        begin = time.perf_counter()
        tensor = await self.server.preprocess(call.model, call.body, self.pipeline)
        decoded = time.perf_counter()
        outputs = await self.server.infer(call, {self.card.inputs[0].name: tensor[None]})
        embedded = time.perf_counter()
        hits = self.gallery.search(l2_normalize(outputs[self.output].reshape(1, -1)), k)[0]
        done = time.perf_counter()
        timings = {"decode": decoded - begin, "embed": embedded - decoded, "search": done - embedded,
                   "total": done - begin}  # fmt: skip
        return JSONResponse({"model": self.card.name, "preprocess": self.preprocess,
                             "results": [hit_json(h) for h in hits],
                             "timings_ms": {k: round(v * 1000, 3) for k, v in timings.items()}})  # fmt: skip

    def routes(self) -> list[BaseRoute]:
        """The page, the search route, thumbnails and the index description."""

        async def page(request: Request) -> Response:
            return HTMLResponse(PAGE.read_text())

        async def search(request: Request) -> Response:
            return await self.server.handle(request, self.card.name, self.search_answer)

        async def photo(request: Request) -> Response:
            photo_id = request.path_params["id"]
            found = self.gallery.store.photos([photo_id])
            if photo_id not in found:
                return error(404, f"no gallery photo {photo_id}")
            try:
                jpeg = await asyncio.to_thread(thumbnail, found[photo_id].path)
            except OSError:
                return error(404, f"gallery photo {photo_id} is no longer readable")
            return Response(jpeg, media_type="image/jpeg")

        async def describe(request: Request) -> Response:
            meta = self.gallery.meta
            return JSONResponse({"model": meta["model_name"], "photos": self.gallery.index.ntotal, "dims": meta["dims"],
                                 "pca": meta["pca"], "kind": meta["kind"], "preprocess": self.preprocess})  # fmt: skip

        return [
            Route("/", page), Route("/v1/search", search, methods=["POST"]),
            Route("/v1/gallery/{id:int}/thumbnail", photo), Route("/v1/index", describe),
        ]  # fmt: skip


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter within [low, high], else InvalidInput (400)."""
    raw = request.query_params.get(name)
    try:
        value = default if raw is None else int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}, got {value}")
    return value


def search_server(
    gallery: GalleryIndex, variant: Variant, config: ServeConfig, batching: BatcherConfig, preprocess: str = "fast"
) -> tuple[Server, SearchService]:
    """A Server for the gallery's embedding model and the search service on top of it."""
    check_servable(variant.card)
    gallery.check_model(variant.card)
    name = variant.card.name
    server = compose(config, V2Models({name: (variant.card, variant.open())}, batching={name: batching}))
    v2 = server.frontends["v2"]
    assert isinstance(v2, V2Routes)
    return server, SearchService(v2, gallery, variant, preprocess)
