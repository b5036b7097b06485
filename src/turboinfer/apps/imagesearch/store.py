"""The gallery's SQLite file: one row per photo (path, size, hash, embedding and the model that made it),
the photos skipped with their reason, and the index's settings."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.errors import InvalidInput

SCHEMA = """
CREATE TABLE IF NOT EXISTS photos (
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, size INTEGER NOT NULL, sha256 TEXT NOT NULL,
    model_sha256 TEXT NOT NULL, embedding BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS photos_sha256 ON photos (sha256);
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Photo:
    """One indexed gallery photo."""

    id: int
    path: Path
    size: int
    sha256: str


class GalleryStore:
    """Photos, their embeddings and the index settings in one SQLite file (each write is one transaction).
    Opened to build (create) it is writable; opened to search it is read-only, so that server replicas can share
    one folder on a read-only volume."""

    def __init__(self, path: Path, create: bool = False) -> None:
        if not create and not path.is_file():
            raise InvalidInput(f"no gallery index at {path.parent} (build one with `turboinfer search index`)")
        try:
            if create:
                self._db = sqlite3.connect(path, check_same_thread=False)
                self._db.executescript(SCHEMA)
            else:
                self._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
                self._db.execute("SELECT COUNT(*) FROM meta").fetchone()  # a file that is no gallery index fails here
        except sqlite3.DatabaseError as err:
            raise InvalidInput(f"{path.name} is not a valid gallery index: {err}") from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Commit on success, roll back on any error (an interrupted batch leaves nothing half-written)."""
        with self._db:
            yield self._db

    def embedded(self, model_sha256: str) -> dict[str, tuple[int, str]]:
        """Path → (size, sha256) of the photos already embedded by this model (what a resumed run skips)."""
        rows = self._db.execute("SELECT path, size, sha256 FROM photos WHERE model_sha256 = ?", (model_sha256,))
        return {path: (size, sha) for path, size, sha in rows}

    def add(self, db: sqlite3.Connection, photo: Photo, model_sha256: str, embedding: np.ndarray) -> None:
        """Insert or replace one photo's row inside an open transaction."""
        db.execute(
            "INSERT INTO photos (path, size, sha256, model_sha256, embedding) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET size=excluded.size, sha256=excluded.sha256, "
            "model_sha256=excluded.model_sha256, embedding=excluded.embedding",
            (str(photo.path), photo.size, photo.sha256, model_sha256, embedding.astype(np.float32).tobytes()),
        )
        db.execute("DELETE FROM skipped WHERE path = ?", (str(photo.path),))

    def skip(self, db: sqlite3.Connection, path: Path, reason: str) -> None:
        """Record a photo that was left out, with why."""
        db.execute("INSERT OR REPLACE INTO skipped (path, reason) VALUES (?, ?)", (str(path), reason))

    def forget_except(self, keep: set[str]) -> int:
        """Drop photos no longer in the gallery folder; how many were dropped."""
        with self._db as db:
            gone = [p for (p,) in db.execute("SELECT path FROM photos") if p not in keep]
            db.executemany("DELETE FROM photos WHERE path = ?", [(p,) for p in gone])
            db.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in gone])
        return len(gone)

    def vectors(self, model_sha256: str) -> tuple[np.ndarray, np.ndarray]:
        """Ids and embeddings [n, dims] of every photo embedded by this model, by id."""
        rows = self._db.execute(
            "SELECT id, embedding FROM photos WHERE model_sha256 = ? ORDER BY id", (model_sha256,)
        ).fetchall()
        if not rows:
            return np.empty(0, np.int64), np.empty((0, 0), np.float32)
        ids = np.asarray([r[0] for r in rows], dtype=np.int64)
        return ids, np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])

    def photos(self, ids: list[int]) -> dict[int, Photo]:
        """Photos by id (ids not found are left out)."""
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(f"SELECT id, path, size, sha256 FROM photos WHERE id IN ({marks})", ids)
        return {i: Photo(i, Path(p), size, sha) for i, p, size, sha in rows}

    def skipped(self) -> dict[str, str]:
        """Path → reason for every photo left out."""
        return dict(self._db.execute("SELECT path, reason FROM skipped ORDER BY path").fetchall())

    def count(self) -> int:
        """Number of embedded photos."""
        return int(self._db.execute("SELECT COUNT(*) FROM photos").fetchone()[0])

    def set_meta(self, values: dict[str, Any]) -> None:
        """Store index settings (JSON values) in one transaction."""
        with self._db as db:
            db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in values.items()])

    def meta(self) -> dict[str, Any]:
        """Every stored setting."""
        return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    def close(self) -> None:
        """Close the file."""
        self._db.close()
