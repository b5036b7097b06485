"""Retrieval quality on real photos: augmented copies of gallery photos (crop, flip, colour jitter, JPEG
re-compression) as queries whose true source is known; recall@1 and recall@10, with and without PCA."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from turboinfer.apps.imagesearch.embed import Embedder
from turboinfer.apps.imagesearch.index import GalleryIndex, IndexConfig, build_faiss
from turboinfer.core.errors import InvalidInput
from turboinfer.models.augment import augmented_set
from turboinfer.models.variant import Variant


@dataclass(frozen=True)
class Recall:
    """Share of queries whose source photo is the first hit, and among the first ten."""

    at_1: float
    at_10: float
    queries: int


@dataclass(frozen=True)
class RecallReport:
    """Recall of the index as built (with its PCA) and of the same embeddings without PCA."""

    model: str
    pca: int
    with_pca: Recall
    without_pca: Recall

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def recall_of(index: Any, sources: np.ndarray, queries: np.ndarray) -> Recall:
    """recall@1/@10 of a FAISS index for query vectors whose true photo ids are `sources`."""
    _, ids = index.search(queries, 10)
    hits = ids == sources[:, None]
    return Recall(float(hits[:, 0].mean()), float(hits.any(axis=1).mean()), len(sources))


def evaluate_recall(gallery: GalleryIndex, variant: Variant, queries: int = 200, seed: int = 0) -> RecallReport:
    """Embed `queries` augmented gallery photos with variant and measure recall with and without PCA."""
    gallery.check_model(variant.card)
    ids, vectors = gallery.store.vectors(gallery.meta["model_sha256"])
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(ids), size=min(queries, len(ids)), replace=False)
    photos = gallery.store.photos([int(ids[i]) for i in chosen])
    augmented = augmented_set([photos[int(ids[i])].path for i in chosen], len(chosen), seed=seed)
    embedder = Embedder(variant)
    batches = list(embedder.embed_batches(a.jpeg for a in augmented))
    failures = [message for batch in batches for message in batch.failed.values()]
    if failures:  # every query must line up with its source
        raise InvalidInput(f"a query photo did not decode: {failures[0]}")
    query_vectors = np.concatenate([batch.vectors for batch in batches])
    sources = np.asarray([ids[chosen[a.source]] for a in augmented])
    config = IndexConfig(pca=gallery.meta["pca"], kind=gallery.meta["kind"])
    plain = build_faiss(ids, vectors, replace(config, pca=0))
    return RecallReport(variant.label, config.pca, recall_of(gallery.index, sources, query_vectors),
                        recall_of(plain, sources, query_vectors))  # fmt: skip
