"""Real inputs for the optimizer: calibration and evaluation sets, from the user's --inputs or packaged data.

Images are kept as uint8 crops [N, H, W, 3] (decoded, resized and cropped once) so that every candidate gets
the same pixels, normalized or not as its own card says; text and tensors are kept as arrays {input: [N, ...]}.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import DataUnavailable, InvalidInput, InvalidModel
from turboinfer.core.settings import Settings
from turboinfer.core.types import ImagePreprocess
from turboinfer.measure.sentences import real_sentences
from turboinfer.models.augment import augmented_set
from turboinfer.models.datasets import UserInputs, read_inputs
from turboinfer.models.image_pipeline import ImagePipeline, NormalizeTable
from turboinfer.models.inputs import index_limits, input_kind, load_graph
from turboinfer.models.photos import all_photos, labelled_imagenet_photos
from turboinfer.models.preprocess import decode_pil, text_tokenizer
from turboinfer.models.variant import sample_feeds

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
    """How many source photos, lines or tensors went into each split."""
    skipped: tuple[str, ...] = ()
    """Files left out, each "name: reason"."""
    labels: np.ndarray | None = None
    """Class index of each evaluation input, when the inputs were labelled (an ImageFolder)."""
    origin: str = ""
    """Where the inputs came from, in words."""

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary (not the data)."""
        return {"calibration": count(self.calibration), "evaluation": count(self.evaluation),
                "sources": self.sources, "skipped": list(self.skipped), "origin": self.origin,
                "labelled": 0 if self.labels is None else len(self.labels)}  # fmt: skip


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
    return InputSets(
        calibration=augmented_crops(pipeline, calibration_sources, n_calibration, seed + 1),
        evaluation=augmented_crops(pipeline, evaluation_sources, n_evaluation, seed + 2),
        sources={"calibration": len(calibration_sources), "evaluation": len(evaluation_sources)},
        skipped=tuple(skipped),
        origin=f"augmented crops of {len(good)} photos",
    )


def augmented_crops(pipeline: ImagePipeline, sources: list[Path], n: int, seed: int) -> np.ndarray:
    """n augmented copies of the source photos, as uint8 crops [n, H, W, 3]."""
    return np.stack([pipeline.pixels(a.jpeg) for a in augmented_set(sources, n, seed)])


def labelled_sets(spec: ImagePreprocess, user: UserInputs, n_calibration: int, seed: int = 0) -> InputSets:
    """An ImageFolder: every labelled photo, as it is, evaluates (with its label); augmented copies of them
    calibrate (the usual practice: calibrate on a subset of the validation data)."""
    pipeline = ImagePipeline(spec)
    crops, labels, usable, skipped = [], [], [], list(user.skipped)
    for path, label in zip(user.photos, user.labels, strict=True):
        try:
            crops.append(pipeline.pixels(path.read_bytes()))
        except InvalidInput as err:
            skipped.append(f"{path.parent.name}/{path.name}: {err}")
            continue
        labels.append(label)
        usable.append(path)
    if len(crops) < MIN_SOURCES:
        raise DataUnavailable(f"{len(crops)} usable labelled photos ({len(skipped)} skipped); need {MIN_SOURCES}")
    return InputSets(
        calibration=augmented_crops(pipeline, usable, n_calibration, seed + 1), evaluation=np.stack(crops),
        sources={"calibration": len(usable), "evaluation": len(crops)}, skipped=tuple(skipped),
        labels=np.asarray(labels), origin=user.summary,
    )  # fmt: skip


def split(total: int, n_calibration: int, n_evaluation: int) -> tuple[np.ndarray, np.ndarray]:
    """(calibration, evaluation) indices of total inputs: the first n_evaluation evaluate and the next
    n_calibration calibrate when there are enough, else every third calibrates and the rest evaluate."""
    if total < MIN_SOURCES:
        raise DataUnavailable(f"{total} inputs; need at least {MIN_SOURCES}")
    if total >= n_calibration + n_evaluation:
        return np.arange(n_evaluation, n_evaluation + n_calibration), np.arange(n_evaluation)
    every = np.arange(total)
    return every[::3], every[every % 3 != 0]


def tensor_sets(tensors: dict[str, np.ndarray], n_calibration: int, n_evaluation: int, origin: str) -> InputSets:
    """Rows of the given tensors split into calibration and evaluation."""
    calibration, evaluation = split(len(next(iter(tensors.values()))), n_calibration, n_evaluation)
    return InputSets(
        calibration={n: a[calibration] for n, a in tensors.items()},
        evaluation={n: a[evaluation] for n, a in tensors.items()},
        sources={"calibration": len(calibration), "evaluation": len(evaluation)}, origin=origin,
    )  # fmt: skip


def text_sets(card: ModelCard, texts: list[str], n_calibration: int, n_evaluation: int, sequence: int,
              origin: str) -> InputSets:  # fmt: skip
    """Token tensors of the given texts, split into calibration and evaluation."""
    tokens = text_tokenizer(card)(texts, pad_to=sequence)
    return tensor_sets(tokens, n_calibration, n_evaluation, origin)


def synthetic_tensors(card: ModelCard, rows: int, sequence: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random inputs for a model whose inputs are generic tensors: N(0, 1) floats, integers within the
    table they index (else 0/1), random booleans; symbolic dims `sequence` long."""
    limits = index_limits(load_graph(card.onnx_path)) if card.onnx_path.suffix == ".onnx" else {}
    rng = np.random.default_rng(seed)
    out = {}
    for spec, sample in zip(card.inputs, sample_feeds(card, rows, sequence).values(), strict=True):
        dtype = spec.numpy_dtype()
        if dtype.kind == "f":
            out[spec.name] = rng.standard_normal(sample.shape).astype(dtype)
        elif dtype.kind == "b":
            out[spec.name] = rng.random(sample.shape) < 0.5
        else:
            out[spec.name] = rng.integers(0, limits.get(spec.name, 2), sample.shape).astype(dtype)
    return out


def input_sets(
    card: ModelCard,
    settings: Settings,
    inputs: Path | None = None,
    n_calibration: int = 128,
    n_evaluation: int = 500,
    sequence: int = 128,
    label_map: Path | None = None,
) -> InputSets:
    """Calibration and evaluation sets for card, from --inputs in any of its forms (models.datasets) or, by default,
    the packaged photos (image models), real sentences (text models) or seeded random tensors (the rest)."""
    kind = input_kind(card)
    user = read_inputs(inputs, card, label_map) if inputs else None
    wanted = {"image": ("photos", "imagefolder"), "tokens": ("text", "tensors"), "tensor": ("tensors",)}[kind]
    if user is not None and user.form not in wanted:
        raise InvalidInput(f"{card.name} takes {KIND_WORDS[kind]}; --inputs {inputs} holds {FORM_WORDS[user.form]}")
    if user is not None and user.form == "tensors":
        return tensor_sets(user.tensors, n_calibration, n_evaluation, user.summary)
    if isinstance(card.preprocess, ImagePreprocess):
        if user is not None and user.form == "imagefolder":
            return labelled_sets(card.preprocess, user, n_calibration)
        sets = image_sets(card.preprocess, list(user.photos) if user else all_photos(settings), n_calibration,
                          n_evaluation)  # fmt: skip
        return replace(sets, skipped=(*(user.skipped if user else ()), *sets.skipped))
    if kind == "tokens":
        texts = list(user.texts) if user else real_sentences(n_evaluation + n_calibration)
        origin = user.summary if user else "real sentences from the standard library's docstrings"
        sets = text_sets(card, texts, n_calibration, n_evaluation, sequence, origin)
        return replace(sets, skipped=user.skipped if user else ())
    tensors = synthetic_tensors(card, n_calibration + n_evaluation, sequence)
    return tensor_sets(tensors, n_calibration, n_evaluation, "seeded random tensors (no --inputs given)")


KIND_WORDS = {"image": "images (photos or an ImageFolder)", "tokens": "token ids (a text file or tensors)",
              "tensor": "tensors (an .npz or a folder of .npy)"}  # fmt: skip
FORM_WORDS = {"photos": "photos", "imagefolder": "an ImageFolder", "text": "text lines", "tensors": "tensors"}


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
        return {s.name: np.ascontiguousarray(items[s.name][start:stop], dtype=s.numpy_dtype()) for s in card.inputs}
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
