"""Variant: a ModelCard plus the backend and options it runs with — what bench, optimize and serve compare."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidInput, InvalidModel
from turboinfer.core.settings import Settings
from turboinfer.core.types import UNKNOWN_RANK
from turboinfer.models.catalog import open_eager, resolve_model
from turboinfer.runtime.session import BACKENDS, Session, SessionOptions, open_session

VARIANT_SUFFIX = ".variant.json"
ALL_BACKENDS = (*BACKENDS, "torch")


@dataclass(frozen=True)
class Variant:
    """One runnable configuration of a model."""

    card: ModelCard
    backend: str = "ort"
    options: SessionOptions = field(default_factory=SessionOptions)

    @property
    def label(self) -> str:
        """Short human name, e.g. "efficientnet-lite0@ort"."""
        threads = f",{self.options.intra_threads}t" if self.options.intra_threads else ""
        return f"{self.card.name}@{self.backend}{threads}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the card by path and hash)."""
        return {
            "model": str(self.card.source),
            "model_name": self.card.name,
            "onnx_sha256": self.card.onnx_sha256,
            "backend": self.backend,
            "options": self.options.to_dict(),
        }

    def with_threads(self, threads: int) -> Variant:
        """This variant on `threads` intra-op threads; itself when threads is 0 (keep what it has)."""
        return replace(self, options=replace(self.options, intra_threads=threads)) if threads else self

    def open(self) -> Session:
        """A Session running this variant (PyTorch eager for backend "torch")."""
        if self.backend == "torch":
            return open_eager(self.card, self.options)
        return open_session(self.card.onnx_path, self.backend, self.options)


def parse_variant(text: str, settings: Settings, backend: str = "ort", threads: int = 0) -> Variant:
    """A Variant from "MODEL[@BACKEND]" (MODEL: zoo name, card or ONNX path) or a .variant.json file; threads,
    when not 0, also replaces a variant file's (its backend is part of what was optimized and stays)."""
    if text.endswith(VARIANT_SUFFIX):
        variant = load_variant(Path(text), settings)
        return variant.with_threads(threads)
    model, _, chosen = text.partition("@")
    chosen = chosen or backend
    if chosen not in ALL_BACKENDS:
        raise InvalidInput(f"unknown backend {chosen!r} in {text!r}; choose one of {', '.join(ALL_BACKENDS)}")
    return Variant(resolve_model(model, settings), chosen, SessionOptions(intra_threads=threads))


def load_variant(path: Path, settings: Settings) -> Variant:
    """Read a .variant.json written by save_variant (or by `turboinfer optimize`)."""
    try:
        return variant_from_dict(json.loads(path.read_text()), settings)
    except FileNotFoundError:
        raise InvalidInput(f"variant file not found: {path}") from None
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise InvalidInput(f"variant file {path} is not valid: {err}") from None


def variant_from_dict(data: dict[str, Any], settings: Settings) -> Variant:
    """The Variant that Variant.to_dict described (KeyError/TypeError when fields are missing or wrong)."""
    options = SessionOptions(**data.get("options", {}))
    return Variant(resolve_model(data["model"], settings), data.get("backend", "ort"), options)


def save_variant(variant: Variant, path: Path) -> Path:
    """Write a variant as JSON next to where it is asked for."""
    path.write_text(json.dumps(variant.to_dict(), indent=2))
    return path


def sample_feeds(card: ModelCard, batch: int = 1, sequence: int = 128) -> dict[str, np.ndarray]:
    """Model-only inputs: zeros of the right shape (dense CNN/transformer latency does not depend on values)."""
    feeds = {}
    for spec in card.inputs:
        if spec.shape == UNKNOWN_RANK:
            raise InvalidModel(
                f"input {spec.name!r} of {card.name} has no shape in the graph, so sample inputs cannot be built; "
                "re-export the model with input shapes"
            )
        shape = tuple(d if isinstance(d, int) else (batch if i == 0 else sequence) for i, d in enumerate(spec.shape))
        feeds[spec.name] = np.zeros(shape, dtype=spec.numpy_dtype())
    if "attention_mask" in feeds:
        feeds["attention_mask"][:] = 1
    return feeds
