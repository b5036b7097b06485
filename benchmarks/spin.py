"""ONNX Runtime's spinning intra-op threads: one session alone, and two sessions interleaved (how every A/B and
the optimizer measure), with spinning on and off → markdown for docs/benchmarks.md.

Run: .venv/bin/python benchmarks/spin.py
"""

from __future__ import annotations

import os
import sys

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.settings import Settings
from turboinfer.measure.timer import interleave
from turboinfer.models.catalog import build_zoo_model
from turboinfer.models.variant import sample_feeds
from turboinfer.runtime.session import SessionOptions, open_session


def main() -> None:
    """Median ms of EfficientNet-Lite0 at batch 1, 2 threads, spinning on and off."""
    card = build_zoo_model("efficientnet-lite0", Settings.from_env(os.environ))
    feeds = sample_feeds(card, 1)
    print(f"Command: `{' '.join(sys.argv)}`\n")
    print("| spinning | alone, median ms | two sessions interleaved, median ms each |\n| --- | --- | --- |")
    for spin in (True, False):
        alone, both = measure(card, feeds, SessionOptions(intra_threads=2, spin=spin))
        print(f"| {'on' if spin else 'off'} | {alone * 1e3:.2f} | {both * 1e3:.2f} |")


def measure(card: ModelCard, feeds: dict[str, np.ndarray], options: SessionOptions) -> tuple[float, float]:
    """Median seconds of one session alone, and of two sessions interleaved (both sessions' calls pooled)."""
    a, b = open_session(card.onnx_path, "ort", options), open_session(card.onnx_path, "ort", options)
    for _ in range(5):
        a.run(feeds), b.run(feeds)
    alone = interleave({"a": lambda: a.run(feeds)}, 100_000, 5.0, 30)["a"]
    pair = interleave({"a": lambda: a.run(feeds), "b": lambda: b.run(feeds)}, 100_000, 8.0, 30)
    return float(np.median(alone)), float(np.median(np.concatenate(list(pair.values()))))


if __name__ == "__main__":
    main()
