"""`search index --ray` on a local Ray instance: the same index as one process (ids, embeddings, recall), shards
served together, resumed runs, bad files, a worker killed mid-job, and the refusals."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gallery import GALLERY_PHOTOS, PCA, check_bad_files_skipped, gallery_with_bad_files, same_index
from turboinfer.apps.imagesearch.distributed import (
    LOOPBACK_NODE,
    RayConfig,
    build_index_ray,
    check_reachable,
    import_ray,
)
from turboinfer.apps.imagesearch.index import STORE_FILE, GalleryIndex, IndexConfig, build_index
from turboinfer.apps.imagesearch.recall import evaluate_recall
from turboinfer.core.errors import InvalidInput, MissingExtra
from turboinfer.models.variant import parse_variant

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance (2 CPUs) for the module; every job below joins it."""
    ray.init(address="local", num_cpus=2, _node_ip_address=LOOPBACK_NODE, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_job_builds_the_same_index_as_one_process(local_ray, tmp_path, built, gallery, settings):
    variant = parse_variant("efficientnet-lite0", settings)
    report = build_index_ray(gallery, tmp_path, variant, IndexConfig(pca=PCA, batch=4))
    assert report.photos == report.embedded == GALLERY_PHOTOS
    same_index(built, tmp_path)
    recall_one = evaluate_recall(GalleryIndex(built), variant, queries=GALLERY_PHOTOS)
    recall_ray = evaluate_recall(GalleryIndex(tmp_path), variant, queries=GALLERY_PHOTOS)
    assert recall_one == recall_ray
    assert GalleryIndex(tmp_path).meta["ray"] == {"address": "local", "actors": 1, "threads_per_actor": 2}


def test_sharded_index_answers_like_the_single_file(local_ray, tmp_path, built, gallery, settings):
    variant = parse_variant("efficientnet-lite0", settings)
    build_index_ray(gallery, tmp_path, variant, IndexConfig(pca=PCA, batch=4, shards=3))
    index = GalleryIndex(tmp_path)
    assert len(index.parts) == 3 and [p.ntotal for p in index.parts] == [8, 8, 8]
    same_index(built, tmp_path)
    build_index_ray(gallery, tmp_path, variant, IndexConfig(pca=PCA, batch=4, shards=2))  # a rebuild replaces them
    assert len(list(tmp_path.glob("vectors-*.faiss"))) == 2 and GalleryIndex(tmp_path).index.ntotal == GALLERY_PHOTOS


def test_resumed_job_reuses_photos_and_bad_files_are_recorded(local_ray, tmp_path, gallery, settings):
    photos = gallery_with_bad_files(tmp_path, gallery)
    variant = parse_variant("efficientnet-lite0", settings)
    config = IndexConfig(pca=0, batch=4, max_file_mb=1)
    first = build_index_ray(photos, tmp_path / "ray", variant, config)
    assert first.photos == first.embedded == GALLERY_PHOTOS and first.not_images == 1
    check_bad_files_skipped(first.skipped, sorted(gallery.glob("*.jpg"))[0])
    single = build_index(photos, tmp_path / "one", variant, config)
    assert {Path(p).name: r for p, r in single.skipped.items()} == {Path(p).name: r for p, r in first.skipped.items()}
    again = build_index_ray(photos, tmp_path / "ray", variant, config)
    assert again.embedded == 0 and again.reused == GALLERY_PHOTOS and again.skipped.keys() == first.skipped.keys()


def actor_processes() -> list[int]:
    """Pids of this machine's Ray Data actor processes (Ray titles them ray::MapWorker…)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::MapWorker"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_a_worker_killed_mid_job_is_retried_and_every_photo_lands_once(local_ray, tmp_path, built, gallery, settings):
    killed: list[int] = []

    def kill_the_actor(done: int, total: int) -> None:
        if not killed and done < total:
            killed.extend(actor_processes())
            for pid in killed:
                os.kill(pid, signal.SIGKILL)

    variant = parse_variant("efficientnet-lite0", settings)
    report = build_index_ray(gallery, tmp_path, variant, IndexConfig(pca=PCA, batch=1), progress=kill_the_actor)
    assert killed, "no actor process was found to kill"
    assert report.photos == GALLERY_PHOTOS
    same_index(built, tmp_path)


def test_a_folder_of_another_model_or_pca_is_refused(local_ray, tmp_path, gallery, built, settings):
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    with pytest.raises(InvalidInput, match=f"with PCA {PCA}, not efficientnet-lite0 with PCA 4"):
        build_index_ray(gallery, copy, parse_variant("efficientnet-lite0", settings), IndexConfig(pca=4))


def test_shard_files_of_another_build_are_refused(local_ray, tmp_path, gallery, settings):
    variant = parse_variant("efficientnet-lite0", settings)
    build_index_ray(gallery, tmp_path / "a", variant, IndexConfig(pca=PCA, batch=4, shards=2))
    build_index_ray(gallery, tmp_path / "b", variant, IndexConfig(pca=4, batch=4, shards=2))
    first_a = sorted((tmp_path / "a").glob("vectors-*.faiss"))[0]
    shutil.copy(sorted((tmp_path / "b").glob("vectors-*.faiss"))[0], first_a)
    with pytest.raises(InvalidInput, match="another build, model or PCA setting"):
        GalleryIndex(tmp_path / "a")


def test_an_empty_folder_and_a_missing_extra_are_clear(tmp_path, settings, monkeypatch):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "notes.txt").write_text("no photos here")
    with pytest.raises(InvalidInput, match=r"no photos under .* \(passed over 1 files"):
        build_index_ray(tmp_path / "photos", tmp_path / "out", parse_variant("efficientnet-lite0", settings))
    assert not (tmp_path / "out" / STORE_FILE).exists()
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtra, match=r"install the extra with: pip install -e '.\[ray\]'"):
        import_ray()


def test_an_unreachable_cluster_fails_in_seconds(tmp_path, gallery):
    begin = time.monotonic()
    with pytest.raises(InvalidInput, match="no Ray cluster answers at 127.0.0.1:9"):
        check_reachable("127.0.0.1:9", timeout_s=2)
    with pytest.raises(InvalidInput, match="is not host:port"):
        check_reachable("nowhere", timeout_s=2)
    cli = [sys.executable, "-m", "turboinfer.cli.main", "search", "index", str(gallery), "--out", str(tmp_path),
           "--ray", "127.0.0.1:9"]  # fmt: skip
    result = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "no Ray cluster answers at 127.0.0.1:9" in result.stdout + result.stderr
    assert time.monotonic() - begin < 30
    with pytest.raises(InvalidInput, match="--actors must be"):
        RayConfig(actors=-1)
