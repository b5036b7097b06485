"""Real inputs for the optimizer: calibration and evaluation sets drawn from disjoint source photos or sentences.

Images are kept as uint8 crops [N, H, W, 3] (decoded, resized and cropped once) so that every candidate gets
the same pixels, normalized or not as its own card says; text is kept as token tensors [N, sequence].
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import DataUnavailable, InvalidInput, InvalidModel
from turboinfer.core.settings import Settings
from turboinfer.core.types import ImagePreprocess, TextPreprocess
from turboinfer.models.augment import augmented_set
from turboinfer.models.image_pipeline import ImagePipeline, NormalizeTable
from turboinfer.models.photos import IMAGE_SUFFIXES, all_photos, files_with_suffix, labelled_imagenet_photos
from turboinfer.models.preprocess import TextTokenizer, decode_pil
from turboinfer.models.sentences import real_sentences

Items = np.ndarray | dict[str, np.ndarray]
"""uint8 crops [N, H, W, 3] for image models; token tensors {name: [N, sequence]} for text models."""
MIN_SOURCES = 4
"""Fewest usable photos: at least one for calibration and three for evaluation."""


@dataclass(frozen=True)
class InputSets:
    """Calibration and evaluation inputs from disjoint sources, and the files that could not be used."""

    calibration: Items
    evaluation: Items
    sources: dict[str, int]
    """How many source photos or sentences went into each split."""
    skipped: tuple[str, ...] = ()
    """Files left out, each "name: reason"."""

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary (not the data)."""
        return {"calibration": count(self.calibration), "evaluation": count(self.evaluation),
                "sources": self.sources, "skipped": list(self.skipped)}  # fmt: skip


def count(items: Items) -> int:
    """Number of inputs in items."""
    return len(next(iter(items.values()))) if isinstance(items, dict) else len(items)


def usable_photos(paths: list[Path]) -> tuple[list[Path], list[str]]:
    """The photos that decode, and "name: reason" for those that do not."""
    good, skipped = [], []
    for path in paths:
        try:
            decode_pil(path.read_bytes())
            good.append(path)
        except InvalidInput as err:
            skipped.append(f"{path.name}: {err}")
    return good, skipped


def image_sets(
    spec: ImagePreprocess, photos: list[Path], n_calibration: int, n_evaluation: int, seed: int = 0
) -> InputSets:
    """Augmented crops of real photos: every third source photo calibrates, the others evaluate."""
    good, skipped = usable_photos(photos)
    if len(good) < MIN_SOURCES:
        raise DataUnavailable(
            f"{len(good)} usable photos ({len(skipped)} skipped as corrupt or not images); need {MIN_SOURCES}"
        )
    calibration_sources = good[::3]
    evaluation_sources = [p for i, p in enumerate(good) if i % 3]
    pipeline = ImagePipeline(spec)

    def crops(sources: list[Path], n: int, offset: int) -> np.ndarray:
        return np.stack([pipeline.pixels(a.jpeg) for a in augmented_set(sources, n, seed + offset)])

    return InputSets(
        calibration=crops(calibration_sources, n_calibration, 1),
        evaluation=crops(evaluation_sources, n_evaluation, 2),
        sources={"calibration": len(calibration_sources), "evaluation": len(evaluation_sources)},
        skipped=tuple(skipped),
    )


def text_sets(card: ModelCard, n_calibration: int, n_evaluation: int, sequence: int) -> InputSets:
    """Token tensors of distinct real sentences: the first n_evaluation evaluate, the next n_calibration calibrate."""
    if not isinstance(card.preprocess, TextPreprocess):
        raise InvalidModel(f"{card.name} has no text preprocessing in its card")
    sentences = real_sentences(n_evaluation + n_calibration)
    tokenizer = TextTokenizer(card.folder / card.preprocess.tokenizer, card.preprocess)
    return InputSets(
        calibration=tokenizer(sentences[n_evaluation:], pad_to=sequence),
        evaluation=tokenizer(sentences[:n_evaluation], pad_to=sequence),
        sources={"calibration": n_calibration, "evaluation": n_evaluation},
    )


def input_sets(
    card: ModelCard,
    settings: Settings,
    folder: Path | None = None,
    n_calibration: int = 128,
    n_evaluation: int = 500,
    sequence: int = 128,
) -> InputSets:
    """Calibration and evaluation sets for card: photos from folder (default: every packaged photo) or sentences."""
    if isinstance(card.preprocess, ImagePreprocess):
        if folder is not None and not folder.is_dir():
            raise InvalidInput(f"inputs folder not found: {folder}")
        photos = files_with_suffix(folder, IMAGE_SUFFIXES) if folder else all_photos(settings)
        return image_sets(card.preprocess, photos, n_calibration, n_evaluation)
    if folder is not None:
        raise InvalidInput("--inputs takes a folder of photos, for image models only")
    return text_sets(card, n_calibration, n_evaluation, sequence)


def labelled_crops(spec: ImagePreprocess) -> tuple[np.ndarray, np.ndarray]:
    """foolbox's labelled ImageNet photos as uint8 crops [N, H, W, 3] and their class labels [N]."""
    pipeline = ImagePipeline(spec)
    photos = labelled_imagenet_photos()
    return np.stack([pipeline.pixels(p.read_bytes()) for p, _ in photos]), np.array([c for _, c in photos])


@functools.lru_cache(maxsize=8)
def normalize_table(spec: ImagePreprocess) -> NormalizeTable:
    """The lookup table of a spec, built once (feeds runs inside timed calls)."""
    return NormalizeTable.for_spec(spec)


def feeds(card: ModelCard, items: Items, start: int, stop: int) -> dict[str, np.ndarray]:
    """The model inputs of items[start:stop] as card expects them (normalized float or raw uint8, its layout)."""
    if isinstance(items, dict):
        return {spec.name: np.ascontiguousarray(items[spec.name][start:stop]) for spec in card.inputs}
    spec = card.preprocess
    if not isinstance(spec, ImagePreprocess):
        raise InvalidModel(f"{card.name} has no image preprocessing in its card")
    pixels = items[start:stop]  # [n, H, W, 3] uint8
    if spec.input_dtype == "uint8":
        tensor = pixels.transpose(0, 3, 1, 2) if spec.layout == "NCHW" else pixels
        return {card.inputs[0].name: np.ascontiguousarray(tensor)}
    table = normalize_table(spec)
    size = pixels.shape[1]
    out = np.empty((len(pixels), 3, size, size) if spec.layout == "NCHW" else pixels.shape, dtype=np.float32)
    for image, slot in zip(pixels, out, strict=True):
        table.write(image, slot, spec.layout)  # the data path's own normalize (one cv2.LUT pass per image)
    return {card.inputs[0].name: out}
