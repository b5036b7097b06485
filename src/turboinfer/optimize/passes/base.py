"""The Pass protocol: a ModelCard in, a new ModelCard out, written once into a content-addressed cache.

Each pass is a small class with a frozen Config dataclass; Config.SEARCHABLE names the fields a search may vary.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from turboinfer.core.card import ModelCard, card_path_for, file_sha256, load_card, save_card
from turboinfer.core.errors import InvalidModel, ModelNotFound
from turboinfer.core.staging import staging
from turboinfer.core.types import Preprocess, TensorSpec, TextPreprocess

Feeds = dict[str, np.ndarray]
CACHE_FORMAT = 2
"""Bumped when what a cached entry holds changes (2: derived cards are named model.pass, servable names)."""
LIBRARIES = ("onnx", "onnxruntime", "onnxslim", "openvino", "nncf")
"""Libraries whose version is part of every cache key: a new version may write a different artifact."""


@dataclass(frozen=True)
class PassContext:
    """What passes may need besides the card: the cache folder and real calibration data."""

    cache_dir: Path
    calibration: Callable[[ModelCard, int], Iterator[Feeds]] | None = None
    """Calibration batches of a given size for a card (as that card wants its inputs)."""
    calibration_key: str = ""
    """A hash of the calibration data, part of the cache key of passes that calibrate."""
    tuning: Callable[[ModelCard], list[Feeds]] | None = None
    """Single-input feeds of the calibration split, for NNCF's accuracy control."""
    item_score: Callable[[int, Feeds], float] | None = None
    """Fidelity of a model's outputs for tuning item i to the original's (1.0 = the same answer)."""
    max_calibration_batch: int = 16
    """Largest calibration batch held in memory at once (bounds calibration memory)."""

    def calibration_batches(self, card: ModelCard, batch: int) -> Iterator[Feeds]:
        """Calibration feeds for card; InvalidModel when the optimizer was given none."""
        if self.calibration is None:
            raise InvalidModel("this pass needs calibration inputs")
        return self.calibration(card, min(batch, self.max_calibration_batch))


@dataclass(frozen=True)
class Transformed:
    """What a pass changed besides the model file."""

    inputs: tuple[TensorSpec, ...] | None = None
    preprocess: Preprocess | None = None
    facts: dict[str, Any] = field(default_factory=dict)


class Pass(ABC):
    """One optimization step: a name, whether it calibrates, a frozen config (the given one, or the defaults)."""

    name: ClassVar[str]
    uses_calibration: ClassVar[bool] = False
    Config: ClassVar[type]
    config: Any

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()

    @abstractmethod
    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Write the transformed model into folder; return its path and what else changed."""


def config_dict(config: Any) -> dict[str, Any]:
    """A pass config as plain JSON values."""
    return json.loads(json.dumps(asdict(config), default=list))


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries passes use."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def cache_key(step: Pass, card: ModelCard, context: PassContext) -> str:
    """sha256 over the pass, its config, the input model's hash, the calibration data and library versions."""
    payload = {
        "cache_format": CACHE_FORMAT,
        "pass": step.name,
        "config": config_dict(step.config),
        "source": card.onnx_sha256 or file_sha256(card.onnx_path),
        "task": card.task,
        "preprocess": repr(card.preprocess),
        "calibration": context.calibration_key if step.uses_calibration else "",
        "libraries": library_versions(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def apply_pass(step: Pass, card: ModelCard, context: PassContext) -> ModelCard:
    """Run step on card, or return the cached result of the same step on the same model and data."""
    key = cache_key(step, card, context)
    final = context.cache_dir / key
    cached = cached_output(final)
    if cached is not None:
        return cached
    with staging(context.cache_dir, key) as folder:
        model_path, changed = step.transform(card, folder, context)
        spec = card.preprocess
        if isinstance(spec, TextPreprocess) and spec.tokenizer and not Path(spec.tokenizer).is_absolute():
            shutil.copy(card.folder / spec.tokenizer, folder / spec.tokenizer)
        history = [*card.extra.get("passes", []), {"pass": step.name, "config": config_dict(step.config)}]
        derived = replace(
            card,
            name=f"{card.name}.{step.name}",  # servable: model names allow [A-Za-z0-9_.-]
            onnx_path=model_path,
            inputs=changed.inputs or card.inputs,
            preprocess=changed.preprocess or card.preprocess,
            extra={**card.extra, "passes": history, step.name: changed.facts},
        ).with_hash()
        save_card(derived)
        if final.exists():
            shutil.rmtree(final)
        folder.rename(final)
    return load_card(card_path_for(final / model_path.name))


def cached_output(folder: Path) -> ModelCard | None:
    """The card in a cache folder when its model file still matches its recorded hash."""
    for card_file in folder.glob("*.card.json") if folder.is_dir() else ():
        try:
            card = load_card(card_file)
        except (ModelNotFound, InvalidModel):
            return None
        return card if card.onnx_sha256 == file_sha256(card.onnx_path) else None
    return None


def model_bytes(card: ModelCard) -> int:
    """Bytes on disk of a card's model (with an OpenVINO IR's .bin weights)."""
    weights = card.onnx_path.with_suffix(".bin")
    extra = weights.stat().st_size if card.onnx_path.suffix == ".xml" and weights.is_file() else 0
    return card.onnx_path.stat().st_size + extra
