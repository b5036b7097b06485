"""ModelCard: an ONNX file plus a JSON sidecar describing its tensors, preprocessing, task and provenance."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from turboinfer.core.errors import InvalidModel, ModelNotFound
from turboinfer.core.staging import write_atomic
from turboinfer.core.types import (
    Preprocess,
    TensorSpec,
    preprocess_from_dict,
    preprocess_to_dict,
)

CARD_SUFFIX = ".card.json"
CARD_VERSION = 1
Task = Literal["classify", "embed", "unknown"]


@dataclass(frozen=True)
class Provenance:
    """Where a model's weights came from and under which licence."""

    source: str
    """Package (or tool) that supplied the weights, with its version."""
    license: str
    weights_sha256: str = ""
    """sha256 of the source weights file; empty for random weights."""
    timing_only: bool = False
    """True when the weights are random: the model is good for timing, not for accuracy."""
    notes: str = ""


@dataclass(frozen=True)
class ModelCard:
    """Everything turboinfer knows about one ONNX model artifact."""

    name: str
    task: Task
    onnx_path: Path
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    provenance: Provenance
    preprocess: Preprocess | None = None
    onnx_sha256: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form facts such as the export time or the opset."""

    @property
    def card_path(self) -> Path:
        """Where the JSON sidecar lives: next to the ONNX file."""
        return card_path_for(self.onnx_path)

    @property
    def source(self) -> Path:
        """What other commands take to load this model again: its card file, or the bare ONNX file it was
        inferred from."""
        return self.card_path if self.card_path.is_file() else self.onnx_path

    @property
    def folder(self) -> Path:
        """The folder holding the model and its side files (tokenizer, ...)."""
        return self.onnx_path.parent

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; the ONNX path is stored relative to the card."""
        return {
            "card_version": CARD_VERSION,
            "name": self.name,
            "task": self.task,
            "onnx": self.onnx_path.name,
            "onnx_sha256": self.onnx_sha256,
            "inputs": [t.to_dict() for t in self.inputs],
            "outputs": [t.to_dict() for t in self.outputs],
            "preprocess": preprocess_to_dict(self.preprocess),
            "provenance": dict(self.provenance.__dict__),
            "extra": self.extra,
        }

    def with_hash(self) -> ModelCard:
        """A copy whose onnx_sha256 matches the file on disk."""
        return replace(self, onnx_sha256=file_sha256(self.onnx_path))


def card_path_for(onnx_path: Path) -> Path:
    """The sidecar path of an ONNX file: model.onnx -> model.card.json."""
    return onnx_path.with_name(onnx_path.stem + CARD_SUFFIX)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def save_card(card: ModelCard) -> Path:
    """Write the card's JSON sidecar atomically (temp file, then rename) and return its path."""
    path = card.card_path
    write_atomic(path, json.dumps(card.to_dict(), indent=2, sort_keys=True))
    return path


def load_card(path: Path) -> ModelCard:
    """Read a card from its JSON sidecar; raise ModelNotFound/InvalidModel with the reason."""
    if not path.is_file():
        raise ModelNotFound(f"model card not found: {path}")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InvalidModel(f"model card {path} is not valid JSON: {err}") from None
    try:
        card = ModelCard(
            name=str(data["name"]),
            task=data["task"],
            onnx_path=path.parent / data["onnx"],
            inputs=tuple(TensorSpec.from_dict(t) for t in data["inputs"]),
            outputs=tuple(TensorSpec.from_dict(t) for t in data["outputs"]),
            provenance=Provenance(**data["provenance"]),
            preprocess=preprocess_from_dict(data.get("preprocess")),
            onnx_sha256=str(data.get("onnx_sha256", "")),
            extra=dict(data.get("extra", {})),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise InvalidModel(f"model card {path} is missing or has a bad field: {err}") from None
    if not card.onnx_path.is_file():
        raise ModelNotFound(f"model card {path} points to a missing ONNX file: {card.onnx_path}")
    return card
