"""Shared optimizer fixtures: small real calibration/evaluation sets and a pass context over them."""

from __future__ import annotations

from pathlib import Path

import pytest

from turboinfer.optimize.data import InputSets, input_sets
from turboinfer.optimize.evaluate import batches
from turboinfer.optimize.passes.base import PassContext


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
