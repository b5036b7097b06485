"""The FAISS side of a gallery index on disk: one file, or shards searched together (faiss.IndexShards) so that
several server replicas can share one read-only folder. PCA and the index's quantizer are trained once, on a
sample, and every shard is a copy of that trained index holding a contiguous range of photo ids."""

from __future__ import annotations

import itertools
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.errors import InvalidInput, MissingExtra

VECTORS_FILE = "vectors.faiss"


def import_faiss() -> Any:
    """The faiss module, or MissingExtra naming the extra to install."""
    try:
        import faiss
    except ImportError:
        raise MissingExtra("faiss-cpu", "search") from None
    return faiss


def ivf_lists(count: int) -> int:
    """Inverted lists of an IVF index over count photos: 4·√count, with ≥ 39 training points per list (faiss)."""
    return max(1, min(int(4 * math.sqrt(count)), count // 39))


def factory_string(count: int, pca: int, kind: str) -> str:
    """The faiss.index_factory description: optional PCA + re-normalization, then the index kind."""
    body = {"flat": "Flat", "hnsw": "HNSW32", "ivf": f"IVF{ivf_lists(count)},Flat"}[kind]
    return f"PCA{pca},L2norm,{body}" if pca else body


def training_sample(count: int, size: int, seed: int = 0) -> np.ndarray:
    """Row numbers (sorted) of a seeded random sample of `size` rows out of count; all rows when size is 0."""
    if not size or size >= count:
        return np.arange(count)
    return np.sort(np.random.default_rng(seed).choice(count, size=size, replace=False))


def trained_index(vectors: np.ndarray, pca: int, kind: str, sample: int) -> Any:
    """An empty inner-product (cosine) FAISS index keyed by photo ids, its PCA and quantizer trained on a sample."""
    faiss = import_faiss()
    count, dims = vectors.shape
    if pca and pca >= dims:
        raise InvalidInput(f"PCA to {pca} dimensions is not a reduction of {dims}-dimension embeddings")
    if pca and count <= pca:
        raise InvalidInput(f"PCA to {pca} dimensions needs more than {pca} photos, got {count}; "
                           "index more photos or lower --pca (0 turns it off)")  # fmt: skip
    index = faiss.IndexIDMap2(faiss.index_factory(dims, factory_string(count, pca, kind), faiss.METRIC_INNER_PRODUCT))
    index.train(np.ascontiguousarray(vectors[training_sample(count, sample)]))
    return index


def shard_ranges(count: int, shards: int) -> list[range]:
    """Row ranges of `shards` contiguous, near-equal shards (fewer when there are fewer rows than shards)."""
    edges = np.linspace(0, count, min(shards, count) + 1).astype(int)
    return [range(a, b) for a, b in itertools.pairwise(edges)]


def copied(index: Any) -> Any:
    """A deep copy of an index (through its serialized form: faiss.clone_index cannot copy a PCA transform)."""
    faiss = import_faiss()
    return faiss.deserialize_index(faiss.serialize_index(index))


def filled_shards(trained: Any, ids: np.ndarray, vectors: np.ndarray, shards: int) -> list[Any]:
    """Copies of the trained index, each holding one contiguous range of the photos."""
    import_faiss()
    out = []
    for rows in shard_ranges(len(ids), shards):
        shard = copied(trained)
        shard.add_with_ids(np.ascontiguousarray(vectors[rows.start : rows.stop]), ids[rows.start : rows.stop])
        out.append(shard)
    return out


def merged(shards: list[Any]) -> Any:
    """One index holding every shard's vectors (faiss merge_from; the shards share one trained index)."""
    import_faiss()
    whole = copied(shards[0])
    for shard in shards[1:]:
        whole.merge_from(shard)
    return whole


def write_atomically(index: Any, path: Path) -> None:
    """Write the FAISS index beside path, then rename it into place."""
    faiss = import_faiss()
    temporary = path.with_name(path.name + ".tmp")
    faiss.write_index(index, str(temporary))
    os.replace(temporary, path)


def write_vectors(out: Path, ids: np.ndarray, vectors: np.ndarray, pca: int, kind: str, shards: int = 1,
                  sample: int = 0) -> list[str]:  # fmt: skip
    """Build and write the index: `vectors.faiss` (one shard) or new shard files named after this build; the file
    names, to record in the store's settings (readers switch to them there, in one transaction)."""
    trained = trained_index(vectors, pca, kind, sample)
    parts = filled_shards(trained, ids, vectors, shards)
    if len(parts) == 1:
        write_atomically(parts[0], out / VECTORS_FILE)
        return [VECTORS_FILE]
    build = f"{time.time_ns():x}"
    names = [f"vectors-{build}-{i:03d}-of-{len(parts):03d}.faiss" for i in range(len(parts))]
    for part, name in zip(parts, names, strict=True):
        write_atomically(part, out / name)
    return names


def remove_stale_shards(out: Path, keep: list[str]) -> None:
    """Delete shard files of earlier builds (after the settings point at the new ones)."""
    for path in out.glob("vectors-*.faiss"):
        if path.name not in keep:
            path.unlink(missing_ok=True)


def set_probes(index: Any) -> None:
    """IVF: search a quarter of the lists (recall close to exact at this gallery size); others: nothing."""
    faiss = import_faiss()
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        return
    ivf.nprobe = max(1, ivf.nlist // 4)


def searched_dims(index: Any) -> int:
    """Width of the vectors an index compares: after its PCA, if it has one."""
    faiss = import_faiss()
    inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexIDMap2) else index
    return int(inner.index.d) if isinstance(inner, faiss.IndexPreTransform) else int(inner.d)


def read_vectors(folder: Path, names: list[str], dims: int, pca: int, photos: int) -> tuple[Any, list[Any]]:
    """The index to search (one file, or its shards searched together) and its parts; refuses parts that do not
    belong to these settings (other embedding width or PCA, other photo count: another build's or model's files)."""
    faiss = import_faiss()
    parts = []
    for name in names:
        try:
            part = faiss.read_index(str(folder / name))
        except RuntimeError:
            raise InvalidInput(f"{name} in {folder.name} is missing or corrupt; rebuild the index") from None
        set_probes(part)
        parts.append(part)
    widths = {(part.d, searched_dims(part)) for part in parts}
    held = sum(part.ntotal for part in parts)
    if widths != {(dims, pca or dims)} or held != photos:
        found = ", ".join(f"{d}→{r}" for d, r in sorted(widths))
        raise InvalidInput(f"the index files in {folder.name} hold {held} vectors of {found} dimensions, but its "
                           f"settings say {photos} of {dims}→{pca or dims}: they come from another build, model or "
                           "PCA setting; rebuild the index")  # fmt: skip
    if len(parts) == 1:
        return parts[0], parts
    shards = faiss.IndexShards(dims, True, False)  # threaded; the shards keep their own photo ids
    for part in parts:
        shards.add_shard(part)
    return shards, parts
