"""`search index --ray`: the gallery's embedding as a Ray Data job. A pool of stateful actors (one model load per
actor, sized by CPUs) maps batches of photo paths to embeddings; Ray streams the results back in gallery order with
back-pressure and retries the blocks of a worker that dies; the driver writes them into the same SQLite store and
builds the same FAISS index as one process would (`index.build_index`)."""

from __future__ import annotations

import hashlib
import logging
import math
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.apps.imagesearch.embed import Embedder, feature_output, read_or_empty
from turboinfer.apps.imagesearch.index import (
    STORE_FILE,
    EmbedRun,
    IndexConfig,
    IndexReport,
    Triage,
    finish_index,
    gallery_files,
)
from turboinfer.apps.imagesearch.ray_driver import JobFailed, drive
from turboinfer.apps.imagesearch.store import GalleryStore, Photo
from turboinfer.core.errors import InvalidInput, MissingExtra
from turboinfer.models.variant import Variant

LOCAL = "local"
RAY_LOG = "ray-job.log"
"""Beside the index: what Ray's driver logged during a job on a cluster."""
LOOPBACK_NODE = "127.0.0.2"
"""The address of a local instance's node: loopback, so its processes talk over nothing else. Not 127.0.0.1: Ray
maps 127.0.0.1 and localhost to the machine's outward address (what a cluster needs); Linux routes all of
127.0.0.0/8 to the loopback interface."""
BATCHES_PER_TASK = 8
"""Photos per Ray task = batch × this: enough for the actor's decode pool to overlap decoding with the model."""


@dataclass(frozen=True)
class RayConfig:
    """Where and how wide to run: "local" (a Ray instance started here) or a cluster address (host:port of its
    head, "auto", or ray://host:port), actors (0: as many as the CPUs allow) and threads per actor."""

    address: str = LOCAL
    actors: int = 0
    threads_per_actor: int = 2
    connect_timeout_s: float = 5.0

    def __post_init__(self) -> None:
        if self.actors < 0 or self.threads_per_actor < 1:
            raise InvalidInput("--actors must be >= 0 (0: fill the CPUs) and --threads-per-actor >= 1")


def import_ray() -> Any:
    """The ray module with Ray Data, or MissingExtra naming the extra."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise MissingExtra("ray[data]", "ray") from None
    return ray


def check_reachable(address: str, timeout_s: float) -> None:
    """Fail in seconds, not after Ray's own long retries, when nothing listens at a host:port address."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise InvalidInput(f"Ray address {address!r} is not host:port, ray://host:port, auto or {LOCAL}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as err:
        raise InvalidInput(f"no Ray cluster answers at {address} ({err.strerror or err}); start one with "
                           f"`ray start --head`, or use --ray {LOCAL} to run on this machine") from None  # fmt: skip


def connect(ray: Any, config: RayConfig) -> bool:
    """Start a local Ray instance, or join the cluster at the address, Ray's own logs kept quiet; False when this
    process is already connected (and so should not disconnect)."""
    if ray.is_initialized():
        return False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    quiet = {"log_to_driver": False, "logging_level": logging.ERROR, "include_dashboard": False}
    if config.address == LOCAL:  # "local": a new instance even where another Ray runs on this machine
        ray.init(address=LOCAL, num_cpus=os.cpu_count(), _node_ip_address=LOOPBACK_NODE, **quiet)
        return True
    check_reachable(config.address, config.connect_timeout_s)
    try:
        ray.init(address=config.address, **quiet)
    except ConnectionError as err:
        raise InvalidInput(f"could not join the Ray cluster at {config.address}: {err} (a cluster with token "
                           "authentication needs RAY_AUTH_MODE=token and its token)") from None  # fmt: skip
    return True


def actor_count(ray: Any, config: RayConfig) -> int:
    """How many actors fit on the cluster's alive nodes at threads_per_actor CPUs each (refusing more)."""
    cpus = [node["Resources"].get("CPU", 0) for node in ray.nodes() if node["Alive"]]
    fits = sum(int(c // config.threads_per_actor) for c in cpus)
    if not fits:
        raise InvalidInput(f"no Ray node has {config.threads_per_actor} CPUs for one actor (nodes: {cpus}); "
                           "lower --threads-per-actor")  # fmt: skip
    if config.actors > fits:
        raise InvalidInput(f"{config.actors} actors of {config.threads_per_actor} CPUs do not fit the cluster's "
                           f"nodes ({cpus} CPUs): at most {fits}")  # fmt: skip
    return config.actors or fits


class PhotoEmbedder:
    """One Ray actor: the variant loaded once; each call reads, hashes and embeds a batch of photo paths, passing
    over those the store already holds for this model, size and hash, and those over the size limit."""

    def __init__(self, variant: Variant, done: dict[str, tuple[int, str]], max_file_mb: float, batch: int,
                 threads: int) -> None:  # fmt: skip
        self.embedder = Embedder(variant.with_threads(threads), threads)
        self.done, self.max_bytes, self.batch = done, max_file_mb * 2**20, batch

    def __call__(self, rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        paths = [str(p) for p in rows["path"]]
        sizes, digests = np.zeros(len(paths), np.int64), [""] * len(paths)
        states, reasons = ["embedded"] * len(paths), [""] * len(paths)
        vectors = np.zeros((len(paths), self.embedder.dims), np.float32)
        order: list[int] = []  # row of each photo handed to the embedder, in the order handed

        def photos_to_embed() -> Iterator[bytes]:
            """Read and hash lazily, so that reading overlaps the decode pool and the model."""
            for i, path in enumerate(paths):
                try:
                    sizes[i] = os.stat(path).st_size
                except OSError as err:
                    states[i], reasons[i] = "unreadable", f"cannot read the file: {err.strerror}"
                    continue
                if sizes[i] > self.max_bytes:
                    states[i] = "too large"
                    continue
                data = read_or_empty(Path(path))
                digests[i] = hashlib.sha256(data).hexdigest()
                if self.done.get(path) == (sizes[i], digests[i]):
                    states[i] = "reused"
                    continue
                order.append(i)
                yield data

        for batch in self.embedder.embed_batches(photos_to_embed(), self.batch):
            for position, vector in zip(batch.positions, batch.vectors, strict=True):
                vectors[order[position]] = vector
            for position, reason in batch.failed.items():
                states[order[position]], reasons[order[position]] = "failed", reason
        return {"path": np.asarray(paths), "size": sizes, "sha256": np.asarray(digests), "state": np.asarray(states),
                "reason": np.asarray(reasons), "vector": vectors}  # fmt: skip


def refuse_other_settings(meta: dict[str, Any], variant: Variant, config: IndexConfig, out: Path) -> None:
    """A folder built with another model or PCA setting is not resumed into (its shards would not belong)."""
    if not meta:
        return
    if meta.get("model_sha256") != variant.card.onnx_sha256 or meta.get("pca") != config.pca:
        raise InvalidInput(f"{out} holds an index of {meta.get('model_name')} with PCA {meta.get('pca')}, not "
                           f"{variant.card.name} with PCA {config.pca}; index into another --out folder or remove "
                           "this one")  # fmt: skip


def build_index_ray(
    folder: Path, out: Path, variant: Variant, config: IndexConfig | None = None, scale: RayConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> IndexReport:  # fmt: skip
    """build_index with the embedding run as a Ray Data job on a local instance or an existing cluster."""
    config, scale = config or IndexConfig(), scale or RayConfig()
    ray = import_ray()
    paths, not_images = gallery_files(folder)
    if not paths:
        raise InvalidInput(f"no photos under {folder} (passed over {not_images} files that are not images)")
    out.mkdir(parents=True, exist_ok=True)
    store = GalleryStore(out / STORE_FILE, create=True)
    try:
        refuse_other_settings(store.meta(), variant, config, out)
        job = (paths, out, variant, config, scale)
        if scale.address == LOCAL or ray.is_initialized():  # nothing can take the cluster away from under us
            run, actors = embed_job(*job, progress=progress)
        else:
            run, actors = drive(embed_job, job, progress, out / RAY_LOG)
        ray_settings = {"address": scale.address, "actors": actors, "threads_per_actor": scale.threads_per_actor}
        return finish_index(store, out, folder, variant, config, replace(run, not_images=not_images),
                            {"ray": ray_settings})  # fmt: skip
    finally:
        store.close()


def embed_job(paths: list[Path], out: Path, variant: Variant, config: IndexConfig, scale: RayConfig,
              progress: Callable[[int, int], None] | None = None) -> tuple[EmbedRun, int]:  # fmt: skip
    """Join Ray (unless this process already has), run the embedding job into the index folder's store, leave."""
    ray = import_ray()
    store = GalleryStore(out / STORE_FILE, create=True)
    joined = connect(ray, scale)
    try:
        return embed_on_ray(ray, paths, store, variant, config, scale, progress)
    finally:
        if joined:
            ray.shutdown()
        store.close()


def record(store: GalleryStore, db: Any, triage: Triage, model: str, row: tuple[Any, ...]) -> bool:
    """Apply one result row in gallery order with the single-process rules; whether an embedding was stored."""
    path, size, digest, state, reason, vector = row
    photo, size, digest, reason = Path(str(path)), int(size), str(digest), str(reason)
    if state == "unreadable":
        store.skip(db, photo, reason)
        return False
    if triage.too_large(photo, size) or not triage.wanted(photo, size, digest):
        return False
    if state == "failed":  # did not decode
        store.skip(db, photo, reason)
        return False
    store.add(db, Photo(0, photo, size, digest), model, vector)
    return True


def embed_on_ray(ray: Any, paths: list[Path], store: GalleryStore, variant: Variant, config: IndexConfig,
                 scale: RayConfig, progress: Callable[[int, int], None] | None) -> tuple[EmbedRun, int]:  # fmt: skip
    """Run the job and write its results into the store as they stream back, one transaction per block; what
    it did and how many actors ran it."""
    model = variant.card.onnx_sha256
    triage = Triage(store.embedded(model), config.max_file_mb)
    store.forget_except({str(p) for p in paths})
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # rows come back in gallery order: the same ids as one process
    context.enable_progress_bars = False
    per_task = config.batch * BATCHES_PER_TASK
    blocks = math.ceil(len(paths) / per_task)
    photos = ray.data.from_items([{"path": str(p)} for p in paths], override_num_blocks=blocks)
    actors = actor_count(ray, scale)
    embedded = photos.map_batches(
        PhotoEmbedder, batch_size=per_task, batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=scale.threads_per_actor,
        fn_constructor_kwargs={"variant": variant, "done": triage.done, "max_file_mb": config.max_file_mb,
                               "batch": config.batch, "threads": scale.threads_per_actor},
    )  # fmt: skip
    begin, seen, written, dims = time.perf_counter(), 0, 0, 0
    try:
        for block in embedded.iter_batches(batch_size=None, batch_format="numpy"):
            columns = [block[name] for name in ("path", "size", "sha256", "state", "reason", "vector")]
            with store.transaction() as db:
                written += sum(record(store, db, triage, model, row) for row in zip(*columns, strict=True))
            seen, dims = seen + len(block["path"]), block["vector"].shape[1]
            if progress:
                progress(seen, len(paths))
    except ray.exceptions.RayError as err:
        raise JobFailed(f"the Ray job failed ({type(err).__name__}: {str(err).splitlines()[0]}); the previous index "
                        "is intact and a rerun resumes from the photos already embedded") from None  # fmt: skip
    if seen != len(paths):
        raise JobFailed(f"the Ray job returned {seen} of {len(paths)} photos; rerun to resume")
    store.forget_except({str(p) for p in paths} - {str(p) for p in triage.skips})
    with store.transaction() as db:
        for photo, reason in triage.skips.items():
            store.skip(db, photo, reason)
    run = EmbedRun(written, triage.reused, 0, time.perf_counter() - begin, dims, feature_output(variant.card))
    return run, actors
