"""The driver of a Ray job on a cluster, run in a process of its own. Ray ends a driver process whose cluster head
stays unreachable (after `gcs_rpc_server_reconnect_timeout_s`, 60 s by default) without an exception anyone could
catch; in a child, that ends only the child, and the command still says what happened and keeps the previous
index. The child's stderr (Ray's own logging) goes to a log file beside the index."""

from __future__ import annotations

import multiprocessing
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from turboinfer.core.errors import TurboinferError


class JobFailed(TurboinferError):
    """The Ray job died (its cluster or driver connection went away); the previous index is untouched."""


Progress = Callable[[int, int], None]


def drive(job: Callable[..., Any], args: tuple[Any, ...], progress: Progress | None, log: Path) -> Any:
    """job(*args, progress=…) in a spawned child process: its progress relayed, its result returned, its
    TurboinferError raised here; JobFailed when the child ends without an answer."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=run_child, args=(send, job, args, str(log)), name="turboinfer-ray-driver")
    child.start()
    send.close()
    try:
        while True:
            try:
                kind, value = receive.recv()
            except EOFError:
                child.join()
                raise JobFailed(f"the Ray job's driver ended (exit code {child.exitcode}) before the job finished: "
                                f"the cluster went away (Ray's log: {log}); the previous index is intact and a "
                                "rerun resumes from the photos already embedded") from None  # fmt: skip
            if kind == "progress" and progress:
                progress(*value)
            elif kind == "done":
                return value
            elif kind == "error":
                raise value
    finally:
        if child.is_alive():
            child.terminate()
        child.join()
        receive.close()


def run_child(send: Any, job: Callable[..., Any], args: tuple[Any, ...], log: str) -> None:
    """The child's side: stderr to the log, then the job; every outcome sent back as (kind, value)."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        send.send(("done", job(*args, progress=lambda done, total: send.send(("progress", (done, total))))))
    except TurboinferError as err:
        send.send(("error", err))
    except Exception as err:
        traceback.print_exc()
        send.send(("error", JobFailed(f"the Ray job failed ({type(err).__name__}: {err}); traceback in {log}")))
