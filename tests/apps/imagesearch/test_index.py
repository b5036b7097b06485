import shutil

import numpy as np
import pytest

from tests.support.gallery import GALLERY_PHOTOS, PCA, check_bad_files_skipped, gallery_with_bad_files
from turboinfer.apps.imagesearch.embed import Embedder, feature_output, l2_normalize
from turboinfer.apps.imagesearch.index import STORE_FILE, GalleryIndex, IndexConfig, build_index
from turboinfer.apps.imagesearch.shards import VECTORS_FILE, factory_string
from turboinfer.core.errors import InvalidInput, InvalidModel
from turboinfer.models.cards import card_from_onnx
from turboinfer.models.variant import parse_variant


def test_every_gallery_photo_finds_itself_first(built, gallery, settings):
    index = GalleryIndex(built)
    embedder = Embedder(parse_variant("efficientnet-lite0", settings))
    photos = sorted(gallery.glob("*.jpg"))
    vectors = np.stack([embedder.embed_bytes(p.read_bytes()) for p in photos])
    hits = index.search(vectors, k=3)
    assert [h[0].path.name for h in hits] == [p.name for p in photos]
    assert all(h[0].score > 0.99 and h[0].score >= h[1].score for h in hits)
    assert index.index.ntotal == GALLERY_PHOTOS and index.meta["pca"] == PCA


def test_embeddings_are_unit_length_features(effnet, settings):
    assert feature_output(effnet) == "features"
    vectors = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(vectors, [[0.6, 0.8], [0.0, 0.0]])


def test_model_without_features_is_refused(tiny_model):
    with pytest.raises(InvalidModel, match="no 'features' output"):
        feature_output(card_from_onnx(tiny_model))


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_each_index_kind_builds_and_searches(tmp_path, gallery, settings, kind):
    report = build_index(
        gallery, tmp_path, parse_variant("efficientnet-lite0", settings), IndexConfig(pca=0, kind=kind)
    )
    assert report.photos == GALLERY_PHOTOS and report.kind == kind and report.pca_variance_kept == 1.0
    index = GalleryIndex(tmp_path)
    ids, vectors = index.store.vectors(index.meta["model_sha256"])
    assert [h[0].id for h in index.search(vectors[:5], k=1)] == ids[:5].tolist()


def test_interrupted_run_keeps_the_old_index_and_resumes(tmp_path, gallery, settings):
    variant = parse_variant("efficientnet-lite0", settings)
    photos = tmp_path / "photos"
    shutil.copytree(gallery, photos)
    out = tmp_path / "index"
    first = sorted(photos.glob("*.jpg"))[:12]
    for path in sorted(photos.glob("*.jpg"))[12:]:
        path.rename(tmp_path / path.name)  # hold back half the gallery
    build_index(photos, out, variant, IndexConfig(pca=0, batch=4))
    before = (out / VECTORS_FILE).read_bytes()
    for path in sorted(tmp_path.glob("*.jpg")):
        path.rename(photos / path.name)

    def interrupt(done: int, total: int) -> None:
        if done >= 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_index(photos, out, variant, IndexConfig(pca=0, batch=4), interrupt)
    assert (out / VECTORS_FILE).read_bytes() == before  # the index being rebuilt is untouched
    assert GalleryIndex(out).index.ntotal == len(first)
    resumed = build_index(photos, out, variant, IndexConfig(pca=0, batch=4))
    assert resumed.reused == len(first) + 4 and resumed.embedded == GALLERY_PHOTOS - len(first) - 4
    assert GalleryIndex(out).index.ntotal == GALLERY_PHOTOS


def test_bad_gallery_files_are_skipped_and_counted(tmp_path, gallery, settings):
    photos = gallery_with_bad_files(tmp_path, gallery)
    report = build_index(photos, tmp_path / "index", parse_variant("efficientnet-lite0", settings),
                         IndexConfig(pca=0, max_file_mb=1))  # fmt: skip
    assert report.photos == GALLERY_PHOTOS and report.not_images == 1
    check_bad_files_skipped(report.skipped, sorted(gallery.glob("*.jpg"))[0])


def test_pca_needs_more_photos_than_dimensions(tmp_path, gallery, settings):
    with pytest.raises(InvalidInput, match="needs more than 256 photos, got 24"):
        build_index(gallery, tmp_path, parse_variant("efficientnet-lite0", settings), IndexConfig(pca=256))


def test_index_settings_are_checked():
    with pytest.raises(InvalidInput, match="unknown index kind 'annoy'"):
        IndexConfig(kind="annoy")
    assert factory_string(1000, 64, "ivf") == "PCA64,L2norm,IVF25,Flat"


def test_missing_unfinished_and_corrupt_indexes_are_clear(tmp_path, built):
    with pytest.raises(InvalidInput, match="no gallery index"):
        GalleryIndex(tmp_path / "nowhere")
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    (copy / VECTORS_FILE).write_bytes(b"not faiss")
    with pytest.raises(InvalidInput, match="corrupt"):
        GalleryIndex(copy)
    (copy / VECTORS_FILE).unlink()
    with pytest.raises(InvalidInput, match="never finished"):
        GalleryIndex(copy)
    (copy / STORE_FILE).write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(InvalidInput, match="not a valid gallery index"):
        GalleryIndex(copy)


def test_an_index_refuses_another_model(built, mobilenet):
    with pytest.raises(InvalidInput, match="built with efficientnet-lite0 .* not mobilenetv2"):
        GalleryIndex(built).check_model(mobilenet)


def test_missing_gallery_folder(tmp_path, settings):
    with pytest.raises(InvalidInput, match="gallery folder not found"):
        build_index(tmp_path / "none", tmp_path / "index", parse_variant("efficientnet-lite0", settings))
