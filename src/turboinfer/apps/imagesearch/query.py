"""One query from the command line: photo bytes → embedding → the most similar gallery photos, timed."""

from __future__ import annotations

import time
from dataclasses import dataclass

from turboinfer.apps.imagesearch.embed import Embedder
from turboinfer.apps.imagesearch.index import GalleryIndex, Hit
from turboinfer.core.settings import Settings
from turboinfer.models.variant import Variant, parse_variant, variant_from_dict


@dataclass(frozen=True)
class QueryResult:
    """Hits, best first, and seconds per stage."""

    hits: list[Hit]
    timings_s: dict[str, float]


def index_variant(gallery: GalleryIndex, model: str | None, settings: Settings) -> Variant:
    """The variant to embed queries with: the one named, or the one the index was built with; checked."""
    variant = parse_variant(model, settings) if model else variant_from_dict(gallery.meta["variant"], settings)
    gallery.check_model(variant.card)
    return variant


def query_photo(gallery: GalleryIndex, embedder: Embedder, data: bytes, k: int = 10) -> QueryResult:
    """Embed one photo (InvalidInput if it is not a usable image) and search the gallery."""
    begin = time.perf_counter()
    tensor = embedder.pipeline(data)
    decoded = time.perf_counter()
    vector = embedder.embed_tensor(tensor[None])
    embedded = time.perf_counter()
    hits = gallery.search(vector, k)[0]
    done = time.perf_counter()
    timings = {"decode": decoded - begin, "embed": embedded - decoded, "search": done - embedded}
    return QueryResult(hits, timings)
