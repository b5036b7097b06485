"""Serving claims, measured end to end over HTTP on loopback → markdown for docs/benchmarks.md.

Run: .venv/bin/python benchmarks/serve.py [batching|batching-tensors|overhead|floor|overload|soak|peers ...]
- batching: --max-batch 1 against 8, highest open-loop rate whose p99 stays under the target (real photos, FP32);
  batching-tensors: the same with the photos' preprocessed tensors as V2 binary requests to ORT static INT8 (no
  decode), next to the model's own batch-8 gain.
- overhead: server throughput (V2 binary requests of one image, and of eight) against the raw model at batch 8,
  on ORT static INT8 of EfficientNet-Lite0, per threads × instances layout; raw before and after the server.
- floor: CPU per request of a bare Starlette-on-uvicorn route that only reads the same bodies, and of the load
  generator: what shares the cores with the model before any serving logic.
- overload: per queue size, 3× the sustainable rate: refusal latency, admitted p99 against the unloaded p99.
- soak: 10 minutes at 70% of the sustainable rate; the server's RSS at start and end.
- peers: LitServe (installed for this benchmark only) serving the same ONNX model (FP32, then INT8) with the same
  data path and batching settings, against turboinfer, highest rate at the same p99 target.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from turboinfer.bench.loadgen import LoadResult, closed_loop, open_loop, rate_sweep
from turboinfer.bench.requests import Request, image_requests, v2_binary_request
from turboinfer.core.card import ModelCard
from turboinfer.core.settings import Settings
from turboinfer.models.catalog import build_zoo_model
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import Variant, load_variant, save_variant
from turboinfer.optimize.data import feeds, input_sets
from turboinfer.optimize.evaluate import batches
from turboinfer.optimize.passes import make_pass
from turboinfer.optimize.passes.base import PassContext, apply_pass
from turboinfer.runtime.session import Session, SessionOptions

P99_TARGET_S = 0.3
MODEL = "efficientnet-lite0"
LITSERVE = Path(__file__).with_name("litserve_app.py")
ECHO = Path(__file__).with_name("echo_app.py")


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(command: list[str], **popen: Any) -> subprocess.Popen:
    """A server process in a session of its own, so that stop() ends it with every process it started (LitServe's
    workers outlive a SIGTERM to their parent)."""
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True, **popen)


def signal_group(process: subprocess.Popen, sig: int) -> None:
    """Send sig to the process group a launched server leads (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def wait_ready(url: str, process: subprocess.Popen) -> subprocess.Popen:
    """process, once url answers 200; killed on a 120 s timeout."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return process
        except OSError:
            time.sleep(0.2)
    signal_group(process, signal.SIGKILL)
    raise RuntimeError(f"server did not become ready at {url}")


def start(model: str, port: int, *options: str, threads: int = 2, **popen: Any) -> subprocess.Popen:
    """`turboinfer serve MODEL` in its own process, returned once ready."""
    command = [sys.executable, "-m", "turboinfer.cli.main", "serve", model, "--port", str(port)]
    process = launch([*command, "--threads", str(threads), *options], **popen)
    return wait_ready(f"http://127.0.0.1:{port}/v2/health/ready", process)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, and wait for the drain."""
    signal_group(process, signal.SIGTERM)
    process.wait(40)


def row(label: str, result: LoadResult) -> str:
    """One markdown row of a load result."""
    refused = result.refused_latencies_s
    refusal = f"{np.median(refused) * 1e3:.1f}" if len(refused) else "—"
    offered = f"{result.offered_rate:.0f}" if result.offered_rate else "—"
    return (f"| {label} | {offered} | {result.achieved_rate:.1f} | {result.percentile(50) * 1e3:.0f} "
            f"| {result.percentile(99) * 1e3:.0f} | {result.statuses} | {refusal} |")  # fmt: skip


HEADER = "| run | offered req/s | ok req/s | p50 ms | p99 ms | statuses | refusal median ms |\n" + "| --- " * 7 + "|"


def jpegs(settings: Settings) -> list[Path]:
    """Up to 24 real JPEGs."""
    return [p for p in all_photos(settings) if p.suffix.lower() in (".jpg", ".jpeg")][:24]


def photo_bodies(settings: Settings) -> list[Request]:
    """Real JPEGs as image-route bodies (raw bytes)."""
    return image_requests(jpegs(settings))


def form_bodies(settings: Settings) -> list[Request]:
    """The same JPEGs as multipart/form-data uploads (LitServe's way of taking a file)."""
    boundary = "turboinfer-benchmark-boundary"
    out = []
    for path in jpegs(settings):
        head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
                "Content-Type: image/jpeg\r\n\r\n")  # fmt: skip
        body = head.encode() + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
        out.append(Request(body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}))
    return out


def batching(settings: Settings, tensors: bool = False) -> None:
    """--max-batch 1 against 8: real photos on the image route (FP32 model), or (tensors) their preprocessed
    tensors as V2 binary requests to ORT static INT8 (no decode on the cores), next to the model's own gain."""
    with tempfile.TemporaryDirectory() as tmp:
        if tensors:
            path = int8_variant(settings, Path(tmp))
            variant = load_variant(path, settings)
            served, name = str(path), variant.card.name
            sets = input_sets(variant.card, settings, n_calibration=4, n_evaluation=24)
            bodies = [v2_binary_request(feeds(variant.card, sets.evaluation, i, i + 1)) for i in range(24)]
            route, what = (
                f"/v2/models/{name}/infer",
                "24 preprocessed real photos as V2 binary tensors, ORT static INT8",
            )
            session = variant.open()
            alone = {size: raw_rate(session, feeds(variant.card, sets.evaluation, 0, size)) for size in (1, 8)}
            what += f" (the model alone: {alone[1]:.0f} items/s at batch 1, {alone[8]:.0f} at batch 8)"
        else:
            served, bodies, route, what = MODEL, photo_bodies(settings), f"/v1/models/{MODEL}/image", "24 real JPEGs"
        print(f"#### Batching gain ({'tensors' if tensors else 'photos'})\n\n{what} to `{route}`, p99 target "
              f"{P99_TARGET_S * 1e3:.0f} ms.\n")  # fmt: skip
        print("| --max-batch | best open-loop rate, p99 ≤ target, req/s | closed loop, 16 clients: req/s | p50 ms "
              "| p99 ms |\n| --- | --- | --- | --- | --- |")  # fmt: skip
        for max_batch in (1, 8):
            port = free_port()
            server = start(served, port, "--max-batch", str(max_batch), "--max-delay-ms", "5")
            url = f"http://127.0.0.1:{port}{route}"
            try:
                best = sustainable(url, bodies)
                closed = asyncio.run(closed_loop(url, bodies, 16, 10.0))
            finally:
                stop(server)
            print(f"| {max_batch} | {best:.0f} | {closed.achieved_rate:.0f} | {closed.percentile(50) * 1e3:.0f} "
                  f"| {closed.percentile(99) * 1e3:.0f} |")  # fmt: skip
    print()


def int8_variant(settings: Settings, folder: Path) -> Path:
    """ORT static INT8 of EfficientNet-Lite0 (calibrated on real photos) as a .variant.json in folder."""
    card = build_zoo_model(MODEL, settings)
    sets = input_sets(card, settings, n_calibration=64, n_evaluation=16)
    context = PassContext(settings.cache_dir / "optimize", lambda c, size: batches(c, sets.calibration, size),
                          calibration_key="serve-benchmark")  # fmt: skip
    quantized = apply_pass(make_pass("ort-int8-static"), card, context)
    return save_variant(Variant(quantized, "ort", SessionOptions(intra_threads=2)), folder / "int8.variant.json")


def raw_rate(session: Session, batch: dict[str, np.ndarray], instances: int = 1, seconds: float = 8.0) -> float:
    """Items/s of the model alone: `instances` threads calling session.run(batch) back to back, as the server's
    worker threads do."""
    session.run(batch)
    rows = len(next(iter(batch.values())))
    calls = [0] * instances
    stop_at = time.perf_counter() + seconds

    def work(i: int) -> None:
        while time.perf_counter() < stop_at:
            session.run(batch)
            calls[i] += 1

    start_at = time.perf_counter()
    with ThreadPoolExecutor(instances) as pool:
        list(pool.map(work, range(instances)))
    return sum(calls) * rows / (time.perf_counter() - start_at)


def overhead(settings: Settings) -> None:
    """Server throughput against the raw model at batch 8, per layout (threads × instances); raw before and after."""
    print("#### Overhead against the raw model (ORT static INT8, batch 8)\n")
    print("| threads × instances | raw items/s before / after | requests | clients | server items/s | p99 ms "
          "| server / raw |\n" + "| --- " * 7 + "|")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = int8_variant(settings, Path(tmp))
        card = load_variant(path, settings).card
        sets = input_sets(card, settings, n_calibration=4, n_evaluation=16)
        batch8 = feeds(card, sets.evaluation, 0, 8)
        bodies = [v2_binary_request(feeds(card, sets.evaluation, i, i + 1)) for i in range(16)]
        bodies8 = [v2_binary_request(feeds(card, sets.evaluation, i, i + 8)) for i in (0, 8)]
        for threads, instances in ((2, 1), (1, 2)):
            variant = Variant(card, "ort", SessionOptions(intra_threads=threads))  # what `serve --threads` runs
            before = raw_rate(variant.open(), batch8, instances)
            port = free_port()
            server = start(str(path), port, "--instances", str(instances), "--max-batch", "8", "--max-delay-ms", "5",
                           threads=threads)  # fmt: skip
            try:
                url = f"http://127.0.0.1:{port}/v2/models/{card.name}/infer"
                asyncio.run(closed_loop(url, bodies, 32, 3.0))  # warm-up
                served = asyncio.run(closed_loop(url, bodies, 32, 15.0))
                served8 = asyncio.run(closed_loop(url, bodies8, 4, 15.0))
            finally:
                stop(server)
            after = raw_rate(variant.open(), batch8, instances)
            for label, clients, result, items in (("1 image each, batched by the server", 32, served, 1),
                                                  ("8 images each (V2 batch of 8)", 4, served8, 8)):  # fmt: skip
                rate = result.achieved_rate * items
                print(f"| {threads} × {instances} | {before:.0f} / {after:.0f} | {label} | {clients} | {rate:.0f} "
                      f"| {result.percentile(99) * 1e3:.0f} | {rate / ((before + after) / 2):.2f} |")  # fmt: skip
            sys.stdout.flush()
    print()


def sustainable(url: str, bodies: list[Request]) -> float:
    """Highest open-loop rate with p99 under the target, after 3 s of warm-up traffic (a slow first step would
    otherwise cap the sweep at the start rate)."""
    asyncio.run(closed_loop(url, bodies, 4, 3.0))
    best, _ = asyncio.run(rate_sweep(url, bodies, P99_TARGET_S, start_rate=8, step_seconds=5, refine_steps=3))
    return best or 1.0


def overload(settings: Settings, queues: tuple[int, ...] = (16, 8, 4)) -> None:
    """Per queue size: unloaded p99, then 3× the sustainable rate (ORT static INT8, real photos)."""
    bodies = photo_bodies(settings)
    print(f"#### Overload (ORT static INT8, real photos, max batch 8, p99 target {P99_TARGET_S * 1e3:.0f} ms)\n")
    print(
        "| queue | sustainable req/s | run | offered req/s | ok req/s | p50 ms | p99 ms | statuses "
        "| refusal median ms | admitted p99 / unloaded p99 |\n" + "| --- " * 10 + "|"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = int8_variant(settings, Path(tmp))
        for queue in queues:
            port = free_port()
            server = start(str(path), port, "--max-batch", "8", "--max-delay-ms", "5", "--queue", str(queue))
            url = f"http://127.0.0.1:{port}/v1/models/{load_variant(path, settings).card.name}/image"
            try:
                rate = sustainable(url, bodies)
                unloaded = asyncio.run(open_loop(url, bodies, rate * 0.5, 15.0))
                loaded = asyncio.run(open_loop(url, bodies, rate * 3, 15.0))
            finally:
                stop(server)
            ratio = loaded.percentile(99) / unloaded.percentile(99)
            print(f"| {queue} | {rate:.0f} {row('50% of sustainable (unloaded)', unloaded)} |")
            print(f"| {queue} | {rate:.0f} {row('3× sustainable', loaded)} {ratio:.2f}× |")
            sys.stdout.flush()
    print()


def soak(settings: Settings, minutes: float = 10.0) -> None:
    """70% of the sustainable rate for `minutes`; server RSS at the start and the end."""
    bodies = photo_bodies(settings)
    port = free_port()
    server = start(MODEL, port, "--max-batch", "8", "--max-delay-ms", "5")
    url = f"http://127.0.0.1:{port}/v1/models/{MODEL}/image"
    try:
        rate = sustainable(url, bodies) * 0.7
        asyncio.run(open_loop(url, bodies, rate, 20.0))  # settle
        process = psutil.Process(server.pid)
        first = process.memory_info().rss / 2**20
        result = asyncio.run(open_loop(url, bodies, rate, minutes * 60))
        last = process.memory_info().rss / 2**20
    finally:
        stop(server)
    print(f"#### Soak: {minutes:.0f} minutes at {rate:.0f} req/s (70% of sustainable)\n")
    print(HEADER)
    print(row("soak", result))
    print(f"\nServer RSS {first:.0f} MiB → {last:.0f} MiB ({(last - first) / first:+.1%}).\n")


def peers(settings: Settings) -> None:
    """LitServe against turboinfer: same ONNX model (FP32, then ORT static INT8), same data path, max batch 8,
    5 ms delay, one worker, real photos."""
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "litserve", "python-multipart"], check=True)
    print("#### Peer: LitServe with the same model, data path and batching\n")
    print("| model | server | best open-loop rate, p99 ≤ target, req/s | closed loop, 16 clients, req/s |\n"
          + "| --- " * 4 + "|")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        int8 = int8_variant(settings, Path(tmp))
        models = {
            "FP32": (MODEL, build_zoo_model(MODEL, settings)),
            "INT8": (str(int8), load_variant(int8, settings).card),
        }
        for label, (served, card) in models.items():
            rates = {name: peer_rates(name, served, card, settings) for name in ("turboinfer", "litserve")}
            for name, (best, closed) in rates.items():
                print(f"| {label} | {name} | {best:.0f} | {closed:.0f} |")
            print(f"| {label} | turboinfer / LitServe | {rates['turboinfer'][0] / rates['litserve'][0]:.2f}× "
                  f"| {rates['turboinfer'][1] / rates['litserve'][1]:.2f}× |")  # fmt: skip
            sys.stdout.flush()
    print()


def peer_rates(name: str, served: str, card: ModelCard, settings: Settings) -> tuple[float, float]:
    """(sustainable open-loop rate, closed-loop rate with 16 clients) of one server over real photos."""
    port = free_port()
    if name == "turboinfer":
        server = start(served, port, "--max-batch", "8", "--max-delay-ms", "5")
        url, bodies = f"http://127.0.0.1:{port}/v1/models/{card.name}/image", photo_bodies(settings)
    else:
        command = [sys.executable, str(LITSERVE), str(card.card_path), str(port)]
        server = wait_ready(f"http://127.0.0.1:{port}/health", launch(command, stderr=subprocess.DEVNULL))
        url, bodies = f"http://127.0.0.1:{port}/predict", form_bodies(settings)
    try:
        return sustainable(url, bodies), asyncio.run(closed_loop(url, bodies, 16, 10.0)).achieved_rate
    finally:
        stop(server)


def floor(settings: Settings) -> None:
    """CPU per request of a bare Starlette-on-uvicorn route that only reads the body, and of the load generator,
    for the V2 bodies of the overhead part: what any such server spends before the model is even called."""
    card = build_zoo_model(MODEL, settings)
    sets = input_sets(card, settings, n_calibration=4, n_evaluation=8)
    port = free_port()
    server = wait_ready(f"http://127.0.0.1:{port}/echo", launch([sys.executable, str(ECHO), str(port)]))
    print("#### The floor: a bare Starlette-on-uvicorn route that reads the body (4 clients, 10 s)\n")
    print("| body | requests/s | server CPU ms/request | load generator CPU ms/request |\n| --- | --- | --- | --- |")
    try:
        for rows in (1, 8):
            body = v2_binary_request(feeds(card, sets.evaluation, 0, rows))
            url = f"http://127.0.0.1:{port}/echo"
            asyncio.run(closed_loop(url, [body], 4, 2.0))
            processes = (psutil.Process(server.pid), psutil.Process())
            before = [sum(p.cpu_times()[:2]) for p in processes]
            result = asyncio.run(closed_loop(url, [body], 4, 10.0))
            spent = [sum(p.cpu_times()[:2]) - b for p, b in zip(processes, before, strict=True)]
            print(f"| V2 binary, {rows} image(s), {len(body.body) / 2**20:.2f} MiB | {result.achieved_rate:.0f} "
                  f"| {spent[0] * 1e3 / result.ok:.2f} | {spent[1] * 1e3 / result.ok:.2f} |")  # fmt: skip
    finally:
        stop(server)
    print()


def main() -> None:
    """Run the named parts (default: all but the soak)."""
    parts = sys.argv[1:] or ["batching", "overhead", "overload", "peers"]
    settings = Settings.from_env(os.environ)
    print(f"Command: `benchmarks/serve.py {' '.join(parts)}`\n")
    for part in parts:
        parts_by_name = {"batching": batching, "batching-tensors": lambda s: batching(s, tensors=True),
                         "overhead": overhead, "overload": overload, "soak": soak, "peers": peers,
                         "floor": floor}  # fmt: skip
        parts_by_name[part](settings)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
