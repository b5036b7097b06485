"""A real gallery with bad files in it, and what an index over it must hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from tests.support.images import png_claiming_size
from turboinfer.apps.imagesearch.index import GalleryIndex

GALLERY_PHOTOS = 24


PCA = 8


def gallery_with_bad_files(tmp_path: Path, gallery: Path) -> Path:
    """A copy of the gallery plus a duplicate, a truncated JPEG, an empty file, a decompression bomb, a text file
    and a 2 MiB file (over a 1 MiB limit)."""
    photos = tmp_path / "photos"
    shutil.copytree(gallery, photos)
    original = sorted(photos.glob("*.jpg"))[0]
    shutil.copy(original, photos / "copy.jpg")
    (photos / "corrupt.jpg").write_bytes(original.read_bytes()[:200])
    (photos / "empty.png").write_bytes(b"")
    (photos / "bomb.png").write_bytes(png_claiming_size(30_000, 30_000))
    (photos / "notes.txt").write_text("not a photo")
    (photos / "big.jpg").write_bytes(b"\xff\xd8" + b"\0" * (2 * 2**20))
    return photos


def check_bad_files_skipped(skipped: dict[str, str], original: Path) -> None:
    """Each bad file of gallery_with_bad_files was skipped with its own reason."""
    reasons = {path.rsplit("/", 1)[-1]: reason for path, reason in skipped.items()}
    assert reasons["copy.jpg"] == f"duplicate of {original.name}"
    assert "corrupt" in reasons["corrupt.jpg"]
    assert "0 bytes" in reasons["empty.png"]
    assert "too large" in reasons["bomb.png"]
    assert "over the 1 MiB limit" in reasons["big.jpg"]


def same_index(one: Path, other: Path) -> None:
    """Same photo ids, paths and hashes, embeddings within float tolerance, same search results."""
    a, b = GalleryIndex(one), GalleryIndex(other)
    ids_a, vectors_a = a.store.vectors(a.meta["model_sha256"])
    ids_b, vectors_b = b.store.vectors(b.meta["model_sha256"])
    assert ids_a.tolist() == ids_b.tolist()
    np.testing.assert_allclose(vectors_a, vectors_b, atol=1e-5)
    photos_a, photos_b = a.store.photos(ids_a.tolist()), b.store.photos(ids_b.tolist())
    assert photos_a == photos_b
    hits_a, hits_b = a.search(vectors_a, k=5), b.search(vectors_b, k=5)
    assert [[h.id for h in row] for row in hits_a] == [[h.id for h in row] for row in hits_b]
