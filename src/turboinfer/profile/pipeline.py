"""Stage timing of one request through the real pipeline: read, decode, resize, normalize, model, postprocess."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import DataUnavailable, InvalidInput, InvalidModel
from turboinfer.core.types import ImagePreprocess, TextPreprocess
from turboinfer.measure.stats import Summary, summarize
from turboinfer.models.postprocess import softmax_top5, unit_embedding
from turboinfer.models.preprocess import decode_pil, normalize, read_bytes, resize_and_crop, text_tokenizer
from turboinfer.runtime.session import Session

Stage = tuple[str, Callable[[Any], Any]]


@dataclass(frozen=True)
class StageProfile:
    """Latency of one pipeline stage (seconds) and its share of the mean end-to-end time."""

    name: str
    summary: Summary
    share: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"name": self.name, "share": self.share, **self.summary.to_dict()}


@dataclass(frozen=True)
class PipelineProfile:
    """Where one request's time goes, measured over many real inputs."""

    stages: tuple[StageProfile, ...]
    end_to_end: Summary
    requests: int
    inputs_used: int
    inputs_skipped: tuple[str, ...]
    """Inputs that could not be processed, each with the reason."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (seconds)."""
        return {
            "stages": [s.to_dict() for s in self.stages],
            "end_to_end": self.end_to_end.to_dict(),
            "requests": self.requests,
            "inputs_used": self.inputs_used,
            "inputs_skipped": list(self.inputs_skipped),
        }


def image_stages(card: ModelCard, session: Session) -> list[Stage]:
    """The image pipeline as named stages, each feeding the next."""
    spec = card.preprocess
    if not isinstance(spec, ImagePreprocess):
        raise InvalidModel(f"{card.name} has no image preprocessing spec in its card")
    name = session.inputs[0].name
    return [
        ("read", read_bytes),
        ("decode", decode_pil),
        ("resize+crop", lambda pixels: resize_and_crop(pixels, spec)),
        ("normalize", lambda pixels: {name: normalize(pixels, spec)[None]}),
        ("model", session.run),
        ("postprocess", softmax_top5 if card.task == "classify" else unit_embedding),
    ]


def text_stages(card: ModelCard, session: Session) -> list[Stage]:
    """The text pipeline as named stages: tokenize, model, postprocess."""
    spec = card.preprocess
    if not isinstance(spec, TextPreprocess):
        raise InvalidModel(f"{card.name} has no text preprocessing spec in its card")
    tokenize = text_tokenizer(card)
    return [
        ("tokenize", lambda sentence: tokenize([sentence])),
        ("model", session.run),
        ("postprocess", unit_embedding),
    ]


def run_stages(stages: list[Stage], item: Any) -> list[float]:
    """Push one input through every stage; the duration of each, seconds."""
    durations = []
    value = item
    for _, fn in stages:
        start = time.perf_counter()
        value = fn(value)
        durations.append(time.perf_counter() - start)
    return durations


def usable_inputs(stages: list[Stage], items: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """Inputs that go through the pipeline, and a reason for each one that does not (corrupt files...)."""
    good, skipped = [], []
    for item in items:
        try:
            run_stages(stages, item)
        except InvalidInput as err:
            skipped.append(f"{Path(str(item)).name}: {err}")
        else:
            good.append(item)
    return good, skipped


def profile_pipeline(
    stages: list[Stage], items: Sequence[Any], min_requests: int = 50, max_seconds: float = 10.0
) -> PipelineProfile:
    """Time every stage for requests cycling over items until min_requests and a time cap are both met.

    The first pass over the inputs is a warm-up (and filters unusable inputs); it is not counted.
    """
    good, skipped = usable_inputs(stages, items)
    if not good:
        raise DataUnavailable(f"none of the {len(items)} inputs could be processed: {'; '.join(skipped[:3])}")
    rows: list[list[float]] = []
    deadline = time.perf_counter() + max_seconds
    while len(rows) < min_requests or (time.perf_counter() < deadline and len(rows) < 20 * min_requests):
        rows.append(run_stages(stages, good[len(rows) % len(good)]))
        if time.perf_counter() > deadline and len(rows) >= min(min_requests, len(good)):
            break
    table = np.asarray(rows)  # [requests, stages], seconds
    totals = table.sum(axis=1)
    profiles = tuple(
        StageProfile(name, summarize(table[:, i]), float(table[:, i].mean() / totals.mean()))
        for i, (name, _) in enumerate(stages)
    )
    return PipelineProfile(profiles, summarize(totals), len(rows), len(good), tuple(skipped))
