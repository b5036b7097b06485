"""A cache entry is built in a staging folder named after its process: removed however the build ends, and what a
killed build of the same entry left is removed by the next one (a live builder's folder, and other entries', stay)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from turboinfer.core.staging import staging


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_killed_builds_folder_is_removed_and_a_live_ones_stays(tmp_path):
    killed = tmp_path / f".model-int4-{dead_pid()}-abc"
    live = tmp_path / f".model-int4-{os.getpid()}-def"
    other = tmp_path / f".model-int4-awq-{dead_pid()}-ghi"  # another entry whose name starts the same
    for folder in (killed, live, other):
        (folder / "ir").mkdir(parents=True)
    with staging(tmp_path, "model-int4") as tmp:
        assert tmp.is_dir() and tmp.name.startswith(f".model-int4-{os.getpid()}-")
        (tmp / "ir").mkdir()
        (tmp / "ir").rename(tmp_path / "model-int4")
    assert not killed.exists() and live.is_dir() and other.is_dir() and not tmp.exists()
    assert (tmp_path / "model-int4").is_dir()


def test_a_build_that_fails_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError), staging(tmp_path / "cache", "entry") as tmp:
        (tmp / "half.bin").write_bytes(b"half")
        raise RuntimeError("the exporter died")
    assert list((tmp_path / "cache").iterdir()) == []
