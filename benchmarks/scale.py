"""Scale-out of gallery indexing: the Ray Data job against one process on the same photos, and how the parts that
do not scale with nodes (PCA fit, index build and shard merge) grow with the gallery.

Run: .venv/bin/python benchmarks/scale.py [ray] [growth] [--model M] [--photos N] [--repeats R]
  ray     `build_index` (one process) and `build_index_ray` (a local Ray instance, 1 actor × 2 threads) on the same
          N photos (the packaged real photos, whole and tiled, plus augmented copies up to N), R times interleaved;
          photos/s of the embedding phase and of the whole command (Ray's start-up included), and their ratio.
  growth  PCA-256 + IVF training on a 100,000-vector sample (the index's default), adding the vectors, a
          4-shard build merged into one index (faiss merge_from), at three or more gallery sizes made of real
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

from turboinfer.apps.imagesearch.distributed import RayConfig, build_index_ray
from turboinfer.apps.imagesearch.embed import Embedder
from turboinfer.apps.imagesearch.gallery import write_gallery
from turboinfer.apps.imagesearch.index import IndexConfig, build_index
from turboinfer.apps.imagesearch.shards import filled_shards, merged, trained_index
from turboinfer.core.settings import Settings
from turboinfer.hardware.probe import probe_cpu
from turboinfer.models.augment import augmented_set
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import Variant, parse_variant

CHOSEN = Path("out/optimize-search/chosen.variant.json")
TARGET_PHOTOS = 10_000_000
SHARDS = 4


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
    """Interleaved one-process and Ray runs; prints the table and returns the Ray job's photos/s (embedding)."""
    config = IndexConfig(pca=256, batch=16)
    rates: dict[str, list[tuple[float, float]]] = {"one process": [], "Ray Data, local, 1 actor × 2 threads": []}
    for _ in range(repeats):
        for label in rates:
            with tempfile.TemporaryDirectory() as out:
                begin = time.perf_counter()
                if label == "one process":
                    report = build_index(photos, Path(out), variant, config)
                else:
                    report = build_index_ray(photos, Path(out), variant, config, RayConfig(threads_per_actor=2))
                total = time.perf_counter() - begin
            rates[label].append((report.embedded / report.seconds, report.embedded / total))
    print(f"#### Indexing {count} photos, {variant.label}, {repeats} interleaved runs each (median)\n")
    print("| how | embedding photos/s | whole command photos/s | runs (embedding) |\n| --- | --- | --- | --- |")
    medians = {}
    for label, runs in rates.items():
        medians[label] = statistics.median(r[0] for r in runs)
        whole = statistics.median(r[1] for r in runs)
        each = ", ".join(f"{r[0]:.1f}" for r in runs)
        print(f"| {label} | {medians[label]:.1f} | {whole:.1f} | {each} |")
    one, distributed = medians.values()
    print(f"\nRay job / one process (embedding): **{distributed / one:.2f}×** (goal ≥ 0.9×)\n")
    return distributed


def timed(action, *args):  # type: ignore[no-untyped-def]
    """(result, seconds) of one call."""
    begin = time.perf_counter()
    result = action(*args)
    return result, time.perf_counter() - begin


def growth_part(variant: Variant, files: list[Path], sizes: list[int], rate: float) -> None:
    """Build costs by gallery size on real embeddings, and the 10-million-photo projection."""
    embedder = Embedder(variant)
    vectors = np.concatenate([b.vectors for b in embedder.embed_files(files[: max(sizes)], 32)])
    print(f"#### Index build costs by gallery size ({vectors.shape[1]}-dim embeddings of real photos, PCA 256, "
          f"IVF, training sample ≤ 100,000; {SHARDS} shards)\n")  # fmt: skip
    print("| photos | PCA + IVF training s | adding vectors s | 4 shards filled s | merge into one s |")
    print("| --- | --- | --- | --- | --- |")
    rows = []
    for size in sizes:
        part, ids = vectors[:size], np.arange(size, dtype=np.int64)
        trained, train_s = timed(trained_index, part, 256, "ivf", 100_000)
        (_, add_s) = timed(filled_shards, trained, ids, part, 1)
        shards, fill_s = timed(filled_shards, trained, ids, part, SHARDS)
        whole, merge_s = timed(merged, shards)
        assert whole.ntotal == size
        rows.append((size, train_s, add_s, merge_s))
        print(f"| {size:,} | {train_s:.2f} | {add_s:.3f} | {fill_s:.3f} | {merge_s:.3f} |")
    size, train_s, add_s, merge_s = rows[-1]
    per_photo = (add_s + merge_s) / size  # both linear in the photos held (copies of the vectors)
    print(f"\nProjection for {TARGET_PHOTOS:,} photos (from the measured per-node Ray rate {rate:.1f} photos/s and "
          f"the largest size's add + merge cost, {per_photo * 1e6:.1f} µs/photo, assumed linear; training on the "
          "100,000-photo sample is a fixed cost, here ≈ measured at the largest size × (100,000 / size) at most):\n")  # fmt: skip
    training = train_s * max(1.0, 100_000 / size)
    print("| nodes (2 CPUs each) | embedding h | train + add + merge h | total h |\n| --- | --- | --- | --- |")
    for nodes in (1, 8, 32, 128):
        embed_h = TARGET_PHOTOS / (rate * nodes) / 3600
        build_h = (training + per_photo * TARGET_PHOTOS) / 3600
        print(f"| {nodes} | {embed_h:.2f} | {build_h:.2f} | {embed_h + build_h:.2f} |")
    print("\nA projection, not a measurement: it assumes nodes as fast as this one, the actors fed without a "
          "storage bottleneck, and the build on one machine.\n")  # fmt: skip


def main() -> None:
    """Parse the parts and run them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("parts", nargs="*", default=["ray", "growth"])
    parser.add_argument("--model", default=str(CHOSEN) if CHOSEN.is_file() else "efficientnet-lite0")
    parser.add_argument("--photos", type=int, default=600)
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
