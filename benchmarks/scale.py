"""Scale-out of gallery indexing: the Ray Data job against one process on the same photos, and how the parts that
do not scale with nodes (PCA fit, index build and shard merge) grow with the gallery.

Run: .venv/bin/python benchmarks/scale.py [ray] [growth] [--model M] [--photos N] [--repeats R]
  ray     `build_index` (one process) and `build_index_ray` on a running 1-node Ray instance (1 actor × 2
          threads) on the same N photos (the packaged real photos, whole and tiled, plus augmented copies up to
          N), R times interleaved, each a whole index build; photos/s and their ratio, plus what starting and
          stopping a local instance (`--ray local`) adds.
  growth  PCA-256 + IVF training (on at most a 100,000-vector sample, the index's default), adding the vectors,
          a 4-shard build merged into one index (faiss merge_from), at three or more gallery sizes made of real
          embeddings (the same photos plus augmented copies); then a projection for 10 million photos.
Default model: out/optimize-search/chosen.variant.json when `make demo` has written it, else efficientnet-lite0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from turboinfer.apps.imagesearch.distributed import LOOPBACK_NODE, RayConfig, build_index_ray, import_ray
from turboinfer.apps.imagesearch.embed import Embedder
from turboinfer.apps.imagesearch.gallery import write_gallery
from turboinfer.apps.imagesearch.index import IndexConfig, build_index
from turboinfer.apps.imagesearch.shards import filled_shards, ivf_lists, merged, trained_index
from turboinfer.core.settings import Settings
from turboinfer.hardware.probe import probe_cpu
from turboinfer.models.augment import augmented_set
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import Variant, parse_variant

CHOSEN = Path("out/optimize-search/chosen.variant.json")
TARGET_PHOTOS = 10_000_000
SHARDS = 4
SAMPLE = 100_000


def photo_folder(folder: Path, count: int, settings: Settings) -> list[Path]:
    """`count` JPEGs: the demo gallery (packaged photos whole and tiled), then augmented copies of them."""
    gallery = write_gallery(all_photos(settings, minimum=4), folder, grid=2)[:count]
    extra = augmented_set(gallery, max(0, count - len(gallery)), seed=1)
    for number, item in enumerate(extra):
        path = folder / f"aug-{number:06d}.jpg"
        path.write_bytes(item.jpeg)
        gallery.append(path)
    return gallery


def ray_part(variant: Variant, photos: Path, count: int, repeats: int) -> float:
    """One process against the Ray job on a running 1-node instance, R times interleaved, each a whole
    `search index` (hashing, embedding, PCA, index); prints the table and returns the Ray job's photos/s."""
    ray = import_ray()
    config = IndexConfig(pca=256, batch=16)
    begin = time.perf_counter()
    ray.init(address="local", num_cpus=os.cpu_count(), _node_ip_address=LOOPBACK_NODE, include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    start_s = time.perf_counter() - begin
    seconds: dict[str, list[float]] = {"one process": [], "Ray Data job, 1 actor × 2 threads": []}
    for _ in range(repeats):
        for label, runs in seconds.items():
            with tempfile.TemporaryDirectory() as out:
                begin = time.perf_counter()
                if label == "one process":
                    build_index(photos, Path(out), variant, config)
                else:
                    build_index_ray(photos, Path(out), variant, config, RayConfig(threads_per_actor=2))
                runs.append(time.perf_counter() - begin)
    begin = time.perf_counter()
    ray.shutdown()
    stop_s = time.perf_counter() - begin
    print(f"#### Indexing {count:,} photos, {variant.label}, whole `search index` each time, {repeats} interleaved "
          "runs (median)\n")  # fmt: skip
    print("| how | photos/s | seconds per run |\n| --- | --- | --- |")
    rates = {}
    for label, runs in seconds.items():
        rates[label] = count / statistics.median(runs)
        print(f"| {label} | {rates[label]:.1f} | {', '.join(f'{r:.2f}' for r in runs)} |")
    one, job = rates.values()
    local = count / (count / job + start_s + stop_s)
    print(f"\nRay job / one process: **{job / one:.2f}×** (goal ≥ 0.9×). Starting the local instance took "
          f"{start_s:.2f} s and stopping it {stop_s:.2f} s: `--ray local`, which pays both in every command, "
          f"makes {local:.1f} photos/s ({local / one:.2f}×).\n")  # fmt: skip
    return job


def timed(action, *args):
    """(result, seconds) of one call."""
    begin = time.perf_counter()
    result = action(*args)
    return result, time.perf_counter() - begin


def growth_part(variant: Variant, files: list[Path], sizes: list[int], rate: float) -> None:
    """Build costs by gallery size on real embeddings, and the 10-million-photo projection."""
    embedder = Embedder(variant)
    vectors = np.concatenate([b.vectors for b in embedder.embed_files(files[: max(sizes)], 32)])
    print(f"#### Index build costs by gallery size ({vectors.shape[1]}-dim embeddings of real photos, PCA 256, "
          f"IVF with 4·√n lists, training sample ≤ {SAMPLE:,}; {SHARDS} shards)\n")  # fmt: skip
    print("| photos | IVF lists | PCA + IVF training s | adding vectors s | 4 shards filled s | merge into one s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for size in sizes:
        part, ids = vectors[:size], np.arange(size, dtype=np.int64)
        trained, train_s = timed(trained_index, part, 256, "ivf", SAMPLE)
        _, add_s = timed(filled_shards, trained, ids, part, 1)
        shards, fill_s = timed(filled_shards, trained, ids, part, SHARDS)
        whole, merge_s = timed(merged, shards)
        assert whole.ntotal == size
        print(f"| {size:,} | {ivf_lists(size)} | {train_s:.2f} | {add_s:.3f} | {fill_s:.3f} | {merge_s:.3f} |")
    lists = ivf_lists(TARGET_PHOTOS) / ivf_lists(size)
    train_h = train_s * (min(SAMPLE, TARGET_PHOTOS) / size) * lists / 3600  # k-means: points × lists
    add_h = add_s * (TARGET_PHOTOS / size) * lists / 3600  # each photo compared with every list's centroid
    merge_h = merge_s * (TARGET_PHOTOS / size) / 3600  # inverted lists copied
    print(f"\nProjection for {TARGET_PHOTOS:,} photos ({ivf_lists(TARGET_PHOTOS):,} lists), scaled from the "
          f"largest size: embedding at the measured per-node Ray rate ({rate:.1f} photos/s), spread over the nodes; "
          f"training ({train_h:.2f} h) as points × lists; adding ({add_h:.2f} h, spread over the nodes when each "
          f"fills its own shard) as photos × lists; merging the shards into one file ({merge_h:.2f} h) as photos. "
          "Training and merging run on one machine.\n")  # fmt: skip
    print("| nodes (2 CPUs each) | embedding h | train h | add h | merge h | total h |")
    print("| --- | --- | --- | --- | --- | --- |")
    for nodes in (1, 8, 32, 128):
        embed_h = TARGET_PHOTOS / (rate * nodes) / 3600
        total = embed_h + train_h + add_h / nodes + merge_h
        print(f"| {nodes} | {embed_h:.2f} | {train_h:.2f} | {add_h / nodes:.2f} | {merge_h:.2f} | {total:.2f} |")
    print("\nA projection, not a measurement: nodes as fast as this one, actors fed without a storage bottleneck.\n")


def main() -> None:
    """Parse the parts and run them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("parts", nargs="*", default=["ray", "growth"])
    parser.add_argument("--model", default=str(CHOSEN) if CHOSEN.is_file() else "efficientnet-lite0")
    parser.add_argument("--photos", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="1000,2000,4000")
    args = parser.parse_args()
    settings = Settings.from_env(os.environ)
    cpu = probe_cpu()
    variant = parse_variant(args.model, settings)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"Command: `{' '.join(sys.argv)}` · {cpu.model}, {cpu.usable_cpus} CPUs\n")
    with tempfile.TemporaryDirectory() as folder:
        files = photo_folder(Path(folder), max(args.photos, *sizes), settings)
        rate = 0.0
        if "ray" in args.parts:
            with tempfile.TemporaryDirectory() as subset:
                for path in files[: args.photos]:
                    os.link(path, Path(subset) / path.name)
                rate = ray_part(variant, Path(subset), args.photos, args.repeats)
        if "growth" in args.parts:
            growth_part(variant, files, sizes, rate or float("nan"))


if __name__ == "__main__":
    main()
