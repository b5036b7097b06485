"""What to serve and how: models named on the command line, or a repository folder of ModelCards with a
per-model serving config (YAML or JSON). Models load only from inside the folder; nothing is fetched."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from turboinfer.core.card import CARD_SUFFIX
from turboinfer.core.errors import InvalidInput, ModelNotFound
from turboinfer.core.settings import Settings
from turboinfer.models.variant import Variant, parse_variant
from turboinfer.serve.split_config import SplitConfig
from turboinfer.serve.v2.batcher import BatcherConfig

MODEL_KEYS = {"backend", "threads", "max_batch", "max_delay_ms", "queue", "instances", "preferred", "canary",
              "canary_share", "shadow", "seq_bucket"}  # fmt: skip


@dataclass(frozen=True)
class ModelServing:
    """One served model: its variant, its batching, and an optional canary or shadow."""

    variant: Variant
    batcher: BatcherConfig
    second: Variant | None = None
    split: SplitConfig | None = None


def read_config(path: Path) -> dict[str, dict[str, Any]]:
    """Per-model settings from `{models: {NAME: {max_batch: 8, ...}}}` in YAML or JSON; unknown keys are errors."""
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except FileNotFoundError:
        raise InvalidInput(f"serving config not found: {path}") from None
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise InvalidInput(f"serving config {path} is not valid: {err}") from None
    models = (data or {}).get("models", {}) if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise InvalidInput(f"serving config {path} needs a 'models' mapping")
    for name, settings in models.items():
        unknown = set(settings or {}) - MODEL_KEYS
        if unknown:
            raise InvalidInput(
                f"serving config {path}: unknown keys for {name}: {sorted(unknown)}; known: {sorted(MODEL_KEYS)}"
            )
    return {name: dict(settings or {}) for name, settings in models.items()}


def model_serving(variant: Variant, settings: dict[str, Any], defaults: BatcherConfig, env: Settings) -> ModelServing:
    """Apply one model's config on top of the defaults."""
    if "backend" in settings or "threads" in settings:
        variant = parse_variant(str(variant.card.card_path), env, settings.get("backend", variant.backend),
                                int(settings.get("threads", variant.options.intra_threads)))  # fmt: skip
    batcher = replace(
        defaults,
        max_batch=int(settings.get("max_batch", defaults.max_batch)),
        max_delay_s=float(settings.get("max_delay_ms", defaults.max_delay_s * 1000)) / 1000,
        queue_size=int(settings.get("queue", defaults.queue_size)),
        instances=int(settings.get("instances", defaults.instances)),
        preferred=tuple(int(v) for v in settings.get("preferred", defaults.preferred)),
        seq_bucket=int(settings.get("seq_bucket", defaults.seq_bucket)),
    )
    other = settings.get("canary") or settings.get("shadow")
    if settings.get("canary") and settings.get("shadow"):
        raise InvalidInput(f"{variant.card.name}: choose canary or shadow, not both")
    if not other:
        return ModelServing(variant, batcher)
    mode: Literal["canary", "shadow"] = "canary" if settings.get("canary") else "shadow"
    split = SplitConfig(mode, float(settings.get("canary_share", 0.1)))
    return ModelServing(variant, batcher, parse_variant(str(other), env, variant.backend), split)


def repository(
    folder: Path, env: Settings, config: dict[str, dict[str, Any]], defaults: BatcherConfig
) -> list[ModelServing]:
    """Every ModelCard in folder (or one level down), configured; cards pointing outside the folder are refused."""
    if not folder.is_dir():
        raise ModelNotFound(f"model repository not found: {folder}")
    root = folder.resolve()
    cards = sorted([*folder.glob(f"*{CARD_SUFFIX}"), *folder.glob(f"*/*{CARD_SUFFIX}")])
    if not cards:
        raise ModelNotFound(f"no model cards (*{CARD_SUFFIX}) in {folder}")
    served = []
    for card_path in cards:
        variant = parse_variant(str(card_path), env)
        if not variant.card.onnx_path.resolve().is_relative_to(root):
            raise InvalidInput(f"{card_path.name} points outside the repository; models load only from inside it")
        served.append(model_serving(variant, config.get(variant.card.name, {}), defaults, env))
    missing = sorted(set(config) - {s.variant.card.name for s in served})
    if missing:
        raise InvalidInput(f"serving config names models that are not in the repository: {missing}")
    return served
