"""Mixed-length text requests under concurrency: which way of batching them serves most (MiniLM-L6, ORT FP32).

Run: .venv/bin/python benchmarks/text_batching.py [--seconds 20]
Requests: eight real sentences (the standard library's docstrings) joined and cut to a token count drawn uniformly from
8..128, as V2 binary requests; 16 closed-loop clients. Servers (one at a time, same model and threads):
max batch 1 (one at a time), and max batch 8 with --seq-bucket 1 (exact lengths only), 16, 32, 64 and 0 (any
lengths, padded to the longest in the batch). Then the embeddings of every request from the default server
against the model run on each request alone (cosine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import urllib.request

import aiohttp
import numpy as np

from serve import free_port, start, stop  # benchmarks/serve.py, beside this script
from turboinfer.bench.loadgen import closed_loop
from turboinfer.bench.requests import Request, v2_binary_request
from turboinfer.core.settings import Settings
from turboinfer.core.types import TextPreprocess
from turboinfer.measure.sentences import real_sentences
from turboinfer.models.catalog import build_zoo_model
from turboinfer.models.preprocess import TextTokenizer
from turboinfer.runtime.session import SessionOptions, open_session

MODEL = "minilm-l6"
LAYOUTS = (("one at a time", "1", "1"), ("exact lengths", "8", "1"), ("bucket 16", "8", "16"),
           ("bucket 32", "8", "32"), ("bucket 64", "8", "64"), ("any lengths, padded", "8", "0"))  # fmt: skip


def mixed_requests(count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """`count` token requests of lengths uniform in 8..128 cut from joined real sentences."""
    card = build_zoo_model(MODEL, Settings.from_env(os.environ))
    assert isinstance(card.preprocess, TextPreprocess)
    tokenize = TextTokenizer(card.folder / card.preprocess.tokenizer, card.preprocess)
    sentences = real_sentences(1024)
    rng = np.random.default_rng(seed)
    requests = []
    for i in range(count):
        start = (4 * i) % (len(sentences) - 8)
        feeds = tokenize([" ".join(sentences[start : start + 8])])
        length = int(rng.integers(8, 129))
        requests.append({name: a[:, :length] for name, a in feeds.items()})
    return requests


def main() -> None:
    """Run every layout and print the markdown table and the fidelity line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    requests = mixed_requests(256)
    lengths = [r["input_ids"].shape[1] for r in requests]
    bodies = [v2_binary_request(r) for r in requests]
    print(f"Command: `{' '.join(sys.argv)}`\n")
    print(f"{len(requests)} requests, {min(lengths)}..{max(lengths)} tokens (mean {np.mean(lengths):.0f}); "
          "16 closed-loop clients, 2 threads.\n")  # fmt: skip
    print("| server | req/s | p50 ms | p99 ms | mean batch | statuses |\n" + "| --- " * 6 + "|")
    for label, max_batch, bucket in LAYOUTS:
        port = free_port()
        server = start(MODEL, port, "--max-batch", max_batch, "--seq-bucket", bucket, "--max-delay-ms", "5",
                       "--log-level", "warning")  # fmt: skip
        url = f"http://127.0.0.1:{port}/v2/models/{MODEL}/infer"
        try:
            asyncio.run(closed_loop(url, bodies, 16, 3.0))  # warm-up
            result = asyncio.run(closed_loop(url, bodies, 16, args.seconds))
            batch = mean_batch(port)
            if label == "bucket 32":
                worst = fidelity(url, requests)
        finally:
            stop(server)
        print(f"| {label} | {result.achieved_rate:.1f} | {result.percentile(50) * 1e3:.0f} "
              f"| {result.percentile(99) * 1e3:.0f} | {batch:.2f} | {result.statuses} |")  # fmt: skip
        sys.stdout.flush()
    print(f"\nBucket 32, every request's embedding against the model run on it alone: 1 − cosine ≤ {worst:.1e}.")


def mean_batch(port: int) -> float:
    """Rows per batch so far, from the server's metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as response:
        text = response.read().decode()

    def total(name: str) -> float:
        return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(f"{name}_total{{"))

    return total("turboinfer_inference_count") / max(total("turboinfer_execution_count"), 1)


def fidelity(url: str, requests: list[dict[str, np.ndarray]]) -> float:
    """Largest 1 − cosine between a served embedding (16 at a time) and the model's on the request alone."""
    card = build_zoo_model(MODEL, Settings.from_env(os.environ))
    session = open_session(card.onnx_path, options=SessionOptions(intra_threads=1))
    bodies = [v2_binary_request(r) for r in requests]

    async def answers() -> list[bytes]:
        async with aiohttp.ClientSession() as client:

            async def one(body: Request) -> bytes:
                async with client.post(url, data=body.body, headers=body.headers) as response:
                    return await response.read()

            return list(await asyncio.gather(*(one(b) for b in bodies)))

    worst = 0.0
    for raw, feeds in zip(asyncio.run(answers()), requests, strict=True):
        got = np.array(json.loads(raw)["outputs"][0]["data"], np.float64)
        want = session.run(feeds)["sentence_embedding"][0].astype(np.float64)
        worst = max(worst, 1 - float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want))))
    return worst


if __name__ == "__main__":
    main()
