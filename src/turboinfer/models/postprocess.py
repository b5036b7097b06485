"""Turning model outputs into answers: top-5 classes for classifiers, unit vectors for embedders."""

from __future__ import annotations

import numpy as np


def softmax_top5(outputs: dict[str, np.ndarray]) -> list[tuple[int, float]]:
    """Postprocess of a classifier: softmax over the first output's first row, top-5 (class, probability)."""
    logits = next(iter(outputs.values()))[0].astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    top = np.argsort(probs)[::-1][:5]
    return [(int(i), float(probs[i])) for i in top]


def unit_embedding(outputs: dict[str, np.ndarray]) -> np.ndarray:
    """Postprocess of an embedder: the first output's first row, L2-normalized as float32."""
    vector = next(iter(outputs.values()))[0].astype(np.float32)
    return vector / max(float(np.linalg.norm(vector)), 1e-12)
