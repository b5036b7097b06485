"""The cluster job's driver in a child process: results and progress come back, errors keep their type, and a
child that dies (as Ray ends a driver whose head is gone) becomes one clear JobFailed."""

from __future__ import annotations

import os
import sys

import pytest

from turboinfer.apps.imagesearch.ray_driver import JobFailed, drive
from turboinfer.core.errors import InvalidInput


def counts_to(total: int, progress) -> int:
    """A job that reports progress and returns its total."""
    for done in range(1, total + 1):
        progress(done, total)
    return total


def refuses(progress) -> None:
    """A job that refuses its input."""
    raise InvalidInput("3 actors of 2 CPUs do not fit")


def dies(progress) -> None:
    """A job whose process ends abruptly, with something on stderr first."""
    progress(1, 2)
    print("Failed to connect to GCS within 60 seconds", file=sys.stderr, flush=True)
    os._exit(3)


def breaks(progress) -> None:
    """A job with a bug."""
    raise KeyError("vector")


def test_results_and_progress_come_back(tmp_path):
    seen: list[tuple[int, int]] = []
    assert drive(counts_to, (3,), lambda done, total: seen.append((done, total)), tmp_path / "ray-job.log") == 3
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_errors_keep_their_type_and_a_dead_driver_is_one_clear_failure(tmp_path):
    log = tmp_path / "ray-job.log"
    with pytest.raises(InvalidInput, match="do not fit"):
        drive(refuses, (), None, log)
    with pytest.raises(JobFailed, match=rf"exit code 3\) before the job finished.*{log}.*previous index is intact"):
        drive(dies, (), None, log)
    assert "Failed to connect to GCS" in log.read_text()  # Ray's own words stay in the log, off the terminal
    with pytest.raises(JobFailed, match="KeyError: 'vector'"):
        drive(breaks, (), None, log)
    assert "Traceback" in log.read_text()
