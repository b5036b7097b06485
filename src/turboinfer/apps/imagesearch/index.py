"""Build and open a gallery index: embeddings in SQLite, PCA + FAISS in one file replaced atomically, so an
interrupted run never corrupts the index it was rebuilding and a rerun resumes where it stopped."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.apps.imagesearch.embed import Embedder
from turboinfer.apps.imagesearch.store import GalleryStore, Photo
from turboinfer.core.card import ModelCard, file_sha256
from turboinfer.core.errors import InvalidInput, MissingExtra
from turboinfer.models.photos import IMAGE_SUFFIXES
from turboinfer.models.variant import Variant

STORE_FILE = "gallery.sqlite"
VECTORS_FILE = "vectors.faiss"
INDEX_KINDS = ("flat", "hnsw", "ivf")


def import_faiss() -> Any:
    """The faiss module, or MissingExtra naming the extra to install."""
    try:
        import faiss
    except ImportError:
        raise MissingExtra("faiss-cpu", "search") from None
    return faiss


@dataclass(frozen=True)
class IndexConfig:
    """How to index: PCA dimensions (0 = none), FAISS index kind, photos per batch, largest file."""

    pca: int = 256
    kind: str = "flat"
    batch: int = 16
    max_file_mb: float = 64.0

    def __post_init__(self) -> None:
        if self.kind not in INDEX_KINDS:
            raise InvalidInput(f"unknown index kind {self.kind!r}; choose one of {', '.join(INDEX_KINDS)}")
        if self.pca < 0 or self.batch < 1:
            raise InvalidInput("PCA dimensions must be >= 0 and the batch >= 1")


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


def factory_string(count: int, config: IndexConfig) -> str:
    """The faiss.index_factory description: optional PCA + re-normalization, then the index kind."""
    lists = max(1, min(int(4 * math.sqrt(count)), count // 39))  # faiss wants ≥ 39 training points per list
    kind = {"flat": "Flat", "hnsw": "HNSW32", "ivf": f"IVF{lists},Flat"}[config.kind]
    return f"PCA{config.pca},L2norm,{kind}" if config.pca else kind


def build_faiss(ids: np.ndarray, vectors: np.ndarray, config: IndexConfig) -> Any:
    """A trained inner-product (cosine) FAISS index over unit vectors, keyed by the store's photo ids."""
    faiss = import_faiss()
    count, dims = vectors.shape
    if config.pca and config.pca >= dims:
        raise InvalidInput(f"PCA to {config.pca} dimensions is not a reduction of {dims}-dimension embeddings")
    if config.pca and count <= config.pca:
        raise InvalidInput(f"PCA to {config.pca} dimensions needs more than {config.pca} photos, got {count}; "
                           "index more photos or lower --pca (0 turns it off)")  # fmt: skip
    index = faiss.IndexIDMap2(faiss.index_factory(dims, factory_string(count, config), faiss.METRIC_INNER_PRODUCT))
    index.train(vectors)
    index.add_with_ids(vectors, ids)
    set_probes(index)
    return index


def set_probes(index: Any) -> None:
    """IVF: search a quarter of the lists (recall close to exact at this gallery size); others: nothing."""
    faiss = import_faiss()
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        return
    ivf.nprobe = max(1, ivf.nlist // 4)


def variance_kept(vectors: np.ndarray, dims: int) -> float:
    """Share of the embeddings' variance that the first `dims` principal components keep (1.0 without PCA)."""
    if not dims or len(vectors) < 2:
        return 1.0
    singular = np.linalg.svd(vectors - vectors.mean(axis=0), compute_uv=False)
    return float((singular[:dims] ** 2).sum() / (singular**2).sum())


def write_atomically(index: Any, path: Path) -> None:
    """Write the FAISS index beside path, then rename it into place."""
    faiss = import_faiss()
    temporary = path.with_name(path.name + ".tmp")
    faiss.write_index(index, str(temporary))
    os.replace(temporary, path)


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
        done = store.embedded(model)
        seen = {sha: path for path, (_, sha) in done.items()}
        todo, reused, skips = [], 0, {}
        for path in paths:
            size = path.stat().st_size
            if size > config.max_file_mb * 2**20:
                skips[path] = f"file of {size / 2**20:.0f} MiB is over the {config.max_file_mb:g} MiB limit"
                continue
            digest = file_sha256(path)
            if done.get(str(path)) == (size, digest):
                reused += 1
            elif digest in seen and seen[digest] != str(path):
                skips[path] = f"duplicate of {Path(seen[digest]).name}"
            else:
                seen[digest] = str(path)
                todo.append(Photo(0, path, size, digest))
        store.forget_except({str(p) for p in paths} - {str(p) for p in skips})
        with store.transaction() as db:
            for path, reason in skips.items():
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
        seconds = time.perf_counter() - begin
        ids, vectors = store.vectors(model)
        if not len(ids):
            raise InvalidInput(f"no photo under {folder} could be embedded ({len(store.skipped())} skipped)")
        write_atomically(build_faiss(ids, vectors, config), out / VECTORS_FILE)
        store.set_meta({"model_sha256": model, "model_name": variant.card.name, "variant": variant.to_dict(),
                        "dims": embedder.dims, "pca": config.pca, "kind": config.kind, "output": embedder.output,
                        "photos": len(ids), "built_at": time.time()})  # fmt: skip
        return IndexReport(len(ids), embedded, reused, store.skipped(), not_images, seconds, embedder.dims,
                           config.pca, variance_kept(vectors, config.pca), config.kind)  # fmt: skip
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
        faiss = import_faiss()
        self.folder = folder
        self.store = GalleryStore(folder / STORE_FILE)
        self.meta = self.store.meta()
        if "model_sha256" not in self.meta or not (folder / VECTORS_FILE).is_file():
            raise InvalidInput(f"the gallery index in {folder.name} was never finished; run `turboinfer search "
                               "index` again to resume it")  # fmt: skip
        try:
            self.index = faiss.read_index(str(folder / VECTORS_FILE))
        except RuntimeError:
            raise InvalidInput(f"{VECTORS_FILE} in {folder.name} is corrupt; rebuild the index") from None
        set_probes(self.index)

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
