"""Shared optimizer fixtures: small real calibration/evaluation sets and a pass context over them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from turboinfer.core.card import ModelCard
from turboinfer.optimize.data import InputSets, input_sets
from turboinfer.optimize.evaluate import batches, run_all
from turboinfer.optimize.passes.base import PassContext
from turboinfer.runtime.session import SessionOptions, open_session


@pytest.fixture(scope="session")
def effnet_sets(effnet, settings) -> InputSets:
    return input_sets(effnet, settings, n_calibration=16, n_evaluation=48)


@pytest.fixture(scope="session")
def minilm_sets(minilm, settings) -> InputSets:
    return input_sets(minilm, settings, n_calibration=16, n_evaluation=32, sequence=64)


def context_for(sets: InputSets, cache: Path) -> PassContext:
    """A pass context calibrating on sets.calibration, caching under cache."""
    return PassContext(cache, lambda card, size: batches(card, sets.calibration, size), calibration_key="test")


@pytest.fixture(scope="session")
def effnet_context(effnet_sets, tmp_path_factory) -> PassContext:
    return context_for(effnet_sets, tmp_path_factory.mktemp("optimize-cache"))


@pytest.fixture(scope="session")
def minilm_context(minilm_sets, tmp_path_factory) -> PassContext:
    return context_for(minilm_sets, tmp_path_factory.mktemp("optimize-cache-text"))


def outputs(card: ModelCard, sets: InputSets, backend: str = "ort") -> dict[str, np.ndarray]:
    """Outputs of card on the evaluation set."""
    return run_all(open_session(card.onnx_path, backend, SessionOptions(intra_threads=2)), card, sets.evaluation)
