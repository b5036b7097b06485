"""Where a cache entry is built before it appears: a hidden folder beside it, named after the building process, so
that the entry appears whole (renamed into place) or not at all, and what a killed build left behind is found and
removed by the next build of the same entry; a small file written whole."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def staging(parent: Path, name: str) -> Iterator[Path]:
    """A new folder under parent to build the entry `name` in, removed when the block ends (the caller renames what
    it built into place first); folders of earlier builds of the same entry whose process is gone are removed."""
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f".{name}-*"):
        pid = builder_pid(stale, name)
        if pid is not None and not alive(pid):
            shutil.rmtree(stale, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=parent, prefix=f".{name}-{os.getpid()}-") as tmp:
        yield Path(tmp)


def write_atomic(path: Path, text: str) -> None:
    """Write a small file whole: a temporary file beside it, renamed over it (a reader sees the old text or the
    new, never half of it)."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}-", suffix=".tmp", delete=False) as tmp:
        tmp.write(text)
    os.replace(tmp.name, path)


def builder_pid(folder: Path, name: str) -> int | None:
    """The id of the process that made a staging folder of `name` (None for any other folder)."""
    pid = folder.name.removeprefix(f".{name}-").split("-", 1)[0]
    return int(pid) if pid.isdigit() and folder.is_dir() else None


def alive(pid: int) -> bool:
    """True while a process with this id exists (one of another user's counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
