"""`turboinfer profile`: the pipeline's stage breakdown and the model's latency distribution, on real inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import DataUnavailable, InvalidInput
from turboinfer.core.settings import Settings
from turboinfer.core.types import ImagePreprocess, TextPreprocess
from turboinfer.hardware.capsule import environment_capsule
from turboinfer.measure.stats import Summary, summarize
from turboinfer.measure.timer import TimingPolicy, time_call
from turboinfer.models.photos import all_photos
from turboinfer.models.sentences import real_sentences
from turboinfer.profile.pipeline import PipelineProfile, image_stages, profile_pipeline, text_stages
from turboinfer.runtime.session import SessionOptions, open_session

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"}
PipelineKind = Literal["auto", "image", "text", "none"]


@dataclass(frozen=True)
class ProfileRequest:
    """What to profile and how long to spend on it."""

    backend: str = "ort"
    options: SessionOptions = field(default_factory=SessionOptions)
    pipeline: PipelineKind = "auto"
    inputs: Path | None = None
    """Folder of input photos; default: every real photo shipped by installed packages."""
    seconds: float = 10.0
    """Time cap for each measurement (pipeline, model-only), seconds."""


@dataclass(frozen=True)
class ProfileReport:
    """Result of `turboinfer profile`, JSON-ready via to_dict (seconds throughout)."""

    model: str
    backend: dict[str, Any]
    pipeline: PipelineProfile | None
    model_latency: Summary
    model_stop_reason: str
    environment: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "model": self.model,
            "backend": self.backend,
            "pipeline": self.pipeline.to_dict() if self.pipeline else None,
            "model_latency": {**self.model_latency.to_dict(), "stop_reason": self.model_stop_reason},
            "environment": self.environment,
        }


def photos_in(folder: Path) -> list[Path]:
    """Image files in a folder (by suffix), sorted; corrupt ones are caught later and counted."""
    if not folder.is_dir():
        raise InvalidInput(f"inputs folder not found: {folder}")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise DataUnavailable(f"no image files ({', '.join(sorted(IMAGE_SUFFIXES))}) in {folder}")
    return files


def pipeline_kind(card: ModelCard, requested: PipelineKind) -> PipelineKind:
    """The pipeline to run: the card's preprocessing kind when "auto", else the request (checked)."""
    if requested == "none":
        return "none"
    kind = card.preprocess.kind if card.preprocess else "none"
    if requested != "auto" and requested != kind:
        raise InvalidInput(f"{card.name} takes {kind} input, not {requested}")
    return kind


def sample_feeds(card: ModelCard, batch: int = 1, sequence: int = 128) -> dict[str, np.ndarray]:
    """Model-only inputs: zeros of the right shape (dense CNN/transformer latency does not depend on values)."""
    feeds = {}
    for spec in card.inputs:
        shape = tuple(d if isinstance(d, int) else (batch if i == 0 else sequence) for i, d in enumerate(spec.shape))
        feeds[spec.name] = np.zeros(shape, dtype=spec.numpy_dtype())
    if "attention_mask" in feeds:
        feeds["attention_mask"][:] = 1
    return feeds


def profile_model(card: ModelCard, request: ProfileRequest, settings: Settings) -> ProfileReport:
    """The model's latency distribution alone (first call included), then its whole pipeline on real inputs."""
    kind = pipeline_kind(card, request.pipeline)
    session = open_session(card.onnx_path, request.backend, request.options)
    feeds = sample_feeds(card)
    timing = time_call(lambda: session.run(feeds), TimingPolicy(max_seconds=request.seconds))
    pipeline = None
    if kind == "image" and isinstance(card.preprocess, ImagePreprocess):
        photos = photos_in(request.inputs) if request.inputs else all_photos(settings)
        pipeline = profile_pipeline(image_stages(card, session), photos, max_seconds=request.seconds)
    elif kind == "text" and isinstance(card.preprocess, TextPreprocess):
        pipeline = profile_pipeline(text_stages(card, session), real_sentences(200), max_seconds=request.seconds)
    return ProfileReport(
        model=card.name,
        backend=session.describe(),
        pipeline=pipeline,
        model_latency=summarize(timing.samples_s, timing.first_call_s),
        model_stop_reason=timing.stop_reason,
        environment=environment_capsule(settings={"backend": request.backend, **request.options.to_dict()}),
    )
