"""`search index --ray ADDRESS` on a real multi-node Ray cluster on this machine: a head and two worker nodes,
each started by `ray start` as processes of their own on 127.0.0.2 (loopback only), a worker node killed while
the job runs, then the head killed during a second job. Each node is stopped by its own processes, never
`ray stop`. The jobs run as a user runs them, `turboinfer search index --ray ADDRESS` in a process of its own."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gallery import GALLERY_PHOTOS, PCA, same_index
from turboinfer.apps.imagesearch.distributed import LOOPBACK_NODE
from turboinfer.apps.imagesearch.index import GalleryIndex

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # three Ray nodes on two cores: about two minutes

RAY = str(Path(sys.executable).with_name("ray"))


class Node:
    """One Ray node: `ray start --block` in a session of its own (raylet, GCS, agents and workers all inside it)."""

    def __init__(self, log: Path, *args: str) -> None:
        command = [RAY, "start", "--block", "--node-ip-address", LOOPBACK_NODE, "--object-store-memory", str(10**8),
                   "--disable-usage-stats", *args]  # fmt: skip
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_started(self, timeout_s: float = 90) -> None:
        """Until `ray start` says the node runs (it has registered with the head)."""
        deadline = time.monotonic() + timeout_s
        while b"Ray runtime started" not in self.log.read_bytes():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, f"the Ray node did not start: {self.log.read_text()}"
            time.sleep(0.2)

    def members(self) -> list[int]:
        """Pids of this node's processes: its session (Ray gives each worker a process group of its own)."""
        pids = []
        for entry in Path("/proc").iterdir():
            with contextlib.suppress(OSError, ValueError):
                if os.getsid(int(entry.name)) == self.process.pid:
                    pids.append(int(entry.name))
        return pids

    def runs_an_actor(self) -> bool:
        """Whether a Ray Data actor (a process titled ray::MapWorker…) lives on this node."""
        for pid in self.members():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::MapWorker"):
                    return True
        return False

    def kill(self) -> None:
        """SIGKILL every process of the node at once, as a machine failure would."""
        for pid in self.members():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(30)


def free_port() -> int:
    """A free loopback port from the kernel's ephemeral range (outside Ray's worker ports, 10002-19999)."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK_NODE, 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def cluster(tmp_path, monkeypatch) -> Iterator[tuple[str, list[Node]]]:
    """(address, [head, worker, worker]): the head holds no CPUs, so actors run on the two workers (2 CPUs each).
    Token authentication on: the nodes and the jobs (child processes) read the token from ~/.ray."""
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    address = f"{LOOPBACK_NODE}:{free_port()}"
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    port = address.rsplit(":", 1)[1]
    nodes = [Node(tmp_path / "head.log", "--head", "--port", port, "--num-cpus", "0", "--include-dashboard", "false",
                  "--temp-dir", temp)]  # fmt: skip
    try:
        nodes[0].wait_started()
        for i in range(2):  # one after the other: nodes on one IP tell themselves apart by start order
            nodes.append(Node(tmp_path / f"worker-{i}.log", "--address", address, "--num-cpus", "2"))
            nodes[-1].wait_started()
        yield address, nodes
    finally:
        for node in reversed(nodes):
            node.kill()
        shutil.rmtree(temp, ignore_errors=True)


def index_job(photos: Path, out: Path, address: str, *options: str) -> subprocess.Popen:
    """`turboinfer search index PHOTOS --ray ADDRESS` started in a process of its own (output: stdout)."""
    cli = [sys.executable, "-m", "turboinfer.cli.main", "search", "index", str(photos), "--out", str(out), "--pca",
           str(PCA), "--batch", "1", "--ray", address, "--threads-per-actor", "1", *options]  # fmt: skip
    return subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def kill_when_an_actor_runs(job: subprocess.Popen, candidates: list[Node], victim: Node | None = None) -> Node:
    """Wait until one of the candidates runs an actor of the job, then kill the victim (default: that node)."""
    deadline = time.monotonic() + 120
    while not (busy := [node for node in candidates if node.runs_an_actor()]):
        assert job.poll() is None, f"the job ended before any actor ran: {job.communicate()[0]}"
        assert time.monotonic() < deadline, "the job never started an actor"
        time.sleep(0.05)
    killed = victim or busy[0]
    killed.kill()
    return killed


def test_a_worker_node_killed_mid_job_the_job_completes(cluster, tmp_path, built, gallery):
    address, (_, *workers) = cluster
    job = index_job(gallery, tmp_path / "index", address, "--actors", "2", "--json", str(tmp_path / "report.json"))
    killed = kill_when_an_actor_runs(job, workers)
    output = job.communicate(timeout=300)[0]
    assert job.returncode == 0, output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["photos"] == report["embedded"] == GALLERY_PHOTOS  # each photo once (paths are unique)
    same_index(built, tmp_path / "index")
    assert GalleryIndex(tmp_path / "index").meta["ray"] == {"address": address, "actors": 2, "threads_per_actor": 1}
    assert killed.process.poll() is not None and any(node.process.poll() is None for node in workers)


def test_a_killed_head_fails_the_job_clearly_and_the_index_stays(cluster, tmp_path, gallery):
    address, (head, *workers) = cluster
    photos, out = tmp_path / "photos", tmp_path / "index"
    photos.mkdir()
    for path in sorted(gallery.glob("*.jpg"))[:12]:
        shutil.copy(path, photos)
    first = index_job(photos, out, address)
    assert first.wait(300) == 0, first.communicate()[0]
    before = GalleryIndex(out)
    ids, vectors = before.store.vectors(before.meta["model_sha256"])
    hits = [[h.id for h in row] for row in before.search(vectors, k=3)]
    for path in sorted(gallery.glob("*.jpg"))[12:]:
        shutil.copy(path, photos)
    deadline = time.monotonic() + 60
    while any(node.runs_an_actor() for node in workers):  # the first job's actors, still exiting
        assert time.monotonic() < deadline, "the first job's actors did not exit"
        time.sleep(0.1)
    job = index_job(photos, out, address)
    kill_when_an_actor_runs(job, workers, victim=head)
    output = job.communicate(timeout=300)[0]
    assert job.returncode != 0 and "the previous index is intact" in output, output
    after = GalleryIndex(out)
    assert after.meta == before.meta and after.index.ntotal == len(ids) == 12
    assert [[h.id for h in row] for row in after.search(vectors, k=3)] == hits


def test_joining_without_the_clusters_token_is_a_clear_error(cluster, tmp_path, gallery, monkeypatch):
    address, _ = cluster
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # the job's process sends no token
    job = index_job(gallery, tmp_path / "index", address)
    output = job.communicate(timeout=300)[0]
    assert job.returncode == 2, output
    assert f"could not join the Ray cluster at {address}" in output and "RAY_AUTH_MODE=token" in output, output
