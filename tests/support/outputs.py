"""A model's outputs on an evaluation set, for comparing optimized variants in tests."""

from __future__ import annotations

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.optimize.data import InputSets
from turboinfer.optimize.evaluate import run_all
from turboinfer.runtime.session import SessionOptions, open_session


def outputs(card: ModelCard, sets: InputSets, backend: str = "ort") -> dict[str, np.ndarray]:
    """Outputs of card on the evaluation set."""
    return run_all(open_session(card.onnx_path, backend, SessionOptions(intra_threads=2)), card, sets.evaluation)
