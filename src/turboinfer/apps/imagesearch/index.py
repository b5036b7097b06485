"""Build and open a gallery index: embeddings in SQLite, PCA + FAISS in one file (or shards) replaced atomically,
so an interrupted run never corrupts the index it was rebuilding and a rerun resumes where it stopped."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.apps.imagesearch.embed import Embedder
from turboinfer.apps.imagesearch.shards import (
    VECTORS_FILE,
    filled_shards,
    read_vectors,
    remove_stale_shards,
    set_probes,
    trained_index,
    training_sample,
    write_vectors,
)
from turboinfer.apps.imagesearch.store import GalleryStore, Photo
from turboinfer.core.card import ModelCard, file_sha256
from turboinfer.core.errors import InvalidInput
from turboinfer.models.photos import IMAGE_SUFFIXES
from turboinfer.models.variant import Variant

STORE_FILE = "gallery.sqlite"
INDEX_KINDS = ("flat", "hnsw", "ivf")


@dataclass(frozen=True)
class IndexConfig:
    """How to index: PCA dimensions (0 = none), FAISS index kind, photos per batch, largest file, FAISS shards,
    and how many embeddings PCA and the quantizer are trained on (0: all)."""

    pca: int = 256
    kind: str = "flat"
    batch: int = 16
    max_file_mb: float = 64.0
    shards: int = 1
    train_sample: int = 100_000

    def __post_init__(self) -> None:
        if self.kind not in INDEX_KINDS:
            raise InvalidInput(f"unknown index kind {self.kind!r}; choose one of {', '.join(INDEX_KINDS)}")
        if self.pca < 0 or self.batch < 1 or self.shards < 1 or self.train_sample < 0:
            raise InvalidInput("PCA dimensions and the training sample must be >= 0, the batch and shards >= 1")


@dataclass(frozen=True)
class IndexReport:
    """What one indexing run did."""

    photos: int
    embedded: int
    reused: int
    skipped: dict[str, str]
    not_images: int
    embed_seconds: float
    dims: int
    pca: int
    pca_variance_kept: float
    kind: str
    shards: int = 1

    @property
    def photos_per_s(self) -> float:
        """Embedding throughput of this run (decode + model), photos/s."""
        return self.embedded / self.embed_seconds if self.embed_seconds else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**asdict(self), "photos_per_s": self.photos_per_s}


def gallery_files(folder: Path) -> tuple[list[Path], int]:
    """Image files under folder (recursively, sorted) and how many other files were passed over."""
    if not folder.is_dir():
        raise InvalidInput(f"gallery folder not found: {folder}")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    images = [p for p in files if p.suffix.lower() in IMAGE_SUFFIXES]
    return images, len(files) - len(images)


def build_faiss(ids: np.ndarray, vectors: np.ndarray, config: IndexConfig) -> Any:
    """A trained inner-product (cosine) FAISS index over unit vectors in one piece, keyed by the store's photo ids."""
    index = filled_shards(trained_index(vectors, config.pca, config.kind, config.train_sample), ids, vectors, 1)[0]
    set_probes(index)
    return index


def variance_kept(vectors: np.ndarray, dims: int) -> float:
    """Share of the embeddings' variance that the first `dims` principal components keep (1.0 without PCA)."""
    if not dims or len(vectors) < 2:
        return 1.0
    singular = np.linalg.svd(vectors - vectors.mean(axis=0), compute_uv=False)
    return float((singular[:dims] ** 2).sum() / (singular**2).sum())


class Triage:
    """What a run does with each photo, decided in gallery order: reuse the embedding stored for the same model,
    size and hash, skip it (over the size limit, a duplicate of an earlier photo), or embed it. One set of rules for
    one process and for a Ray job, so both give the same index."""

    def __init__(self, done: dict[str, tuple[int, str]], max_file_mb: float) -> None:
        self.done = done
        self.max_file_mb = max_file_mb
        self.seen = {sha: path for path, (_, sha) in done.items()}
        self.reused = 0
        self.skips: dict[Path, str] = {}

    def too_large(self, path: Path, size: int) -> bool:
        """Skip (and say so) a file over the size limit."""
        if size <= self.max_file_mb * 2**20:
            return False
        self.skips[path] = f"file of {size / 2**20:.0f} MiB is over the {self.max_file_mb:g} MiB limit"
        return True

    def wanted(self, path: Path, size: int, digest: str) -> bool:
        """Whether the photo needs embedding: False for one already embedded, or a duplicate (skipped)."""
        if self.done.get(str(path)) == (size, digest):
            self.reused += 1
            return False
        if digest in self.seen and self.seen[digest] != str(path):
            self.skips[path] = f"duplicate of {Path(self.seen[digest]).name}"
            return False
        self.seen[digest] = str(path)
        return True


@dataclass(frozen=True)
class EmbedRun:
    """What the embedding phase of a run did (before the FAISS index is built)."""

    embedded: int
    reused: int
    not_images: int
    seconds: float
    dims: int
    output: str


def finish_index(store: GalleryStore, out: Path, folder: Path, variant: Variant, config: IndexConfig,
                 run: EmbedRun, extra: dict[str, Any] | None = None) -> IndexReport:  # fmt: skip
    """Fit PCA, build and write the FAISS index (one file or shards) from the store's embeddings, then switch the
    store's settings to it in one transaction; what the run did."""
    model = variant.card.onnx_sha256
    ids, vectors = store.vectors(model)
    if not len(ids):
        raise InvalidInput(f"no photo under {folder} could be embedded ({len(store.skipped())} skipped)")
    files = write_vectors(out, ids, vectors, config.pca, config.kind, config.shards, config.train_sample)
    store.set_meta({"model_sha256": model, "model_name": variant.card.name, "variant": variant.to_dict(),
                    "dims": run.dims, "pca": config.pca, "kind": config.kind, "output": run.output,
                    "photos": len(ids), "vector_files": files, "built_at": time.time(), **(extra or {})})  # fmt: skip
    remove_stale_shards(out, files)
    sample = vectors[training_sample(len(vectors), config.train_sample)]
    return IndexReport(len(ids), run.embedded, run.reused, store.skipped(), run.not_images, run.seconds, run.dims,
                       config.pca, variance_kept(sample, config.pca), config.kind, len(files))  # fmt: skip


def build_index(
    folder: Path, out: Path, variant: Variant, config: IndexConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> IndexReport:  # fmt: skip
    """Embed every new photo under folder, then (re)build the PCA + FAISS index in out; resumable."""
    config = config or IndexConfig()
    paths, not_images = gallery_files(folder)
    out.mkdir(parents=True, exist_ok=True)
    store = GalleryStore(out / STORE_FILE, create=True)
    try:
        model = variant.card.onnx_sha256
        triage = Triage(store.embedded(model), config.max_file_mb)
        todo = []
        for path in paths:
            size = path.stat().st_size
            if not triage.too_large(path, size) and triage.wanted(path, size, digest := file_sha256(path)):
                todo.append(Photo(0, path, size, digest))
        store.forget_except({str(p) for p in paths} - {str(p) for p in triage.skips})
        with store.transaction() as db:
            for path, reason in triage.skips.items():
                store.skip(db, path, reason)
        embedder = Embedder(variant)
        begin, embedded, failed = time.perf_counter(), 0, 0
        for batch in embedder.embed_files([p.path for p in todo], config.batch):
            with store.transaction() as db:
                for position, vector in zip(batch.positions, batch.vectors, strict=True):
                    store.add(db, todo[position], model, vector)
                for position, reason in batch.failed.items():
                    store.skip(db, todo[position].path, reason)
            embedded, failed = embedded + len(batch.positions), failed + len(batch.failed)
            if progress:
                progress(embedded + failed, len(todo))
        run = EmbedRun(embedded, triage.reused, not_images, time.perf_counter() - begin, embedder.dims,
                       embedder.output)  # fmt: skip
        return finish_index(store, out, folder, variant, config, run)
    finally:
        store.close()


@dataclass(frozen=True)
class Hit:
    """One search result."""

    id: int
    path: Path
    score: float


class GalleryIndex:
    """A built index opened for search: the FAISS file plus the photos' metadata."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.store = GalleryStore(folder / STORE_FILE)
        self.meta = self.store.meta()
        files = self.meta.get("vector_files", [VECTORS_FILE])
        if "model_sha256" not in self.meta or not all((folder / name).is_file() for name in files):
            raise InvalidInput(f"the gallery index in {folder.name} was never finished; run `turboinfer search "
                               "index` again to resume it")  # fmt: skip
        meta = self.meta
        self.index, self.parts = read_vectors(folder, files, meta["dims"], meta["pca"], meta["photos"])

    def check_model(self, card: ModelCard) -> None:
        """Refuse a model other than the one the gallery was embedded with (its vectors would not compare)."""
        if card.onnx_sha256 != self.meta["model_sha256"]:
            raise InvalidInput(
                f"the index was built with {self.meta['model_name']} ({self.meta['model_sha256'][:12]}), not "
                f"{card.name} ({card.onnx_sha256[:12]}); serve the model it was built with or rebuild the index"
            )

    def search(self, vectors: np.ndarray, k: int = 10) -> list[list[Hit]]:
        """The k nearest gallery photos of each query vector (unit length), best first."""
        scores, ids = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
        photos = self.store.photos(sorted({int(i) for i in ids.ravel() if i >= 0}))
        return [[Hit(int(i), photos[int(i)].path, float(s)) for s, i in zip(row_s, row_i, strict=True)
                 if int(i) in photos] for row_s, row_i in zip(scores, ids, strict=True)]  # fmt: skip

    def close(self) -> None:
        """Close the metadata file."""
        self.store.close()
