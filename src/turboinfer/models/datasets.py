"""Inputs in the forms users keep them: a folder of photos, an ImageFolder tree (`root/<class>/<file>`, labels
from the folder names), a text file with one input per line, a folder of `.npy` files or one `.npz` of tensors
keyed by input name. Bad files are skipped and counted; anything that cannot be used at all is one clear error."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidInput
from turboinfer.core.types import UNKNOWN_RANK
from turboinfer.models.labels import imagenet_names, key
from turboinfer.models.photos import IMAGE_SUFFIXES, files_with_suffix

Form = Literal["photos", "imagefolder", "text", "tensors"]
LABEL_FILE = "labels.txt"


@dataclass(frozen=True)
class UserInputs:
    """What --inputs held, read and checked against the model."""

    form: Form
    photos: tuple[Path, ...] = ()
    labels: tuple[int, ...] = ()
    """ImageFolder: the class index of each photo (aligned with photos)."""
    texts: tuple[str, ...] = ()
    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()
    """"what: why" for each file, folder or line left out."""
    summary: str = ""

    @property
    def count(self) -> int:
        """Number of inputs."""
        if self.form == "tensors":
            return len(next(iter(self.tensors.values())))
        return len(self.texts) if self.form == "text" else len(self.photos)


def read_inputs(path: Path, card: ModelCard, label_map: Path | None = None) -> UserInputs:
    """The inputs at path, in whichever of the forms it is, for card's model."""
    if not path.exists():
        raise InvalidInput(f"inputs not found: {path}")
    if path.is_file():
        if path.suffix == ".npz":
            return npz_tensors(path, card)
        if path.suffix == ".npy":
            return npy_tensors({card.inputs[0].name: path} if len(card.inputs) == 1 else {}, card, path)
        return text_lines(path)
    npy = sorted(path.glob("*.npy"))
    if npy:
        return npy_tensors({p.stem: p for p in npy}, card, path)
    classes = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    if classes and not files_with_suffix(path, IMAGE_SUFFIXES):
        return image_folder(path, classes, card, label_map)
    photos = files_with_suffix(path, IMAGE_SUFFIXES)
    if not photos:
        raise InvalidInput(f"{path} holds no photos, class folders, .npy files or text")
    return UserInputs("photos", tuple(photos), summary=f"{len(photos)} photos in {path}")


def text_lines(path: Path) -> UserInputs:
    """One input per line; empty lines are skipped and counted."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text (one input per line)") from None
    texts = tuple(line.strip() for line in lines if line.strip())
    skipped = tuple(f"{path.name} line {i + 1}: empty" for i, line in enumerate(lines) if not line.strip())
    if not texts:
        raise InvalidInput(f"{path} has no non-empty lines")
    return UserInputs("text", texts=texts, skipped=skipped, summary=f"{len(texts)} lines of {path.name}")


def npz_tensors(path: Path, card: ModelCard) -> UserInputs:
    """Tensors keyed by input name from one .npz."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise InvalidInput(f"{path} is not a readable .npz: {err}") from None
    return checked_tensors(arrays, card, path)


def npy_tensors(files: dict[str, Path], card: ModelCard, where: Path) -> UserInputs:
    """Tensors from .npy files named after the inputs they feed."""
    arrays = {}
    for name, file in files.items():
        try:
            arrays[name] = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise InvalidInput(f"{file} is not a readable .npy: {err}") from None
    return checked_tensors(arrays, card, where)


def checked_tensors(arrays: dict[str, np.ndarray], card: ModelCard, where: Path) -> UserInputs:
    """The arrays, checked against the model's inputs (names, rank, fixed dims, dtype kind) and cast to its
    dtypes; the first dim is the number of inputs."""
    names = [s.name for s in card.inputs]
    if set(arrays) != set(names):
        raise InvalidInput(f"{where}: tensors {sorted(arrays)} do not match the model's inputs {names} (name the "
                           "arrays, or the .npy files, after the inputs)")  # fmt: skip
    out, rows = {}, set()
    for spec in card.inputs:
        array, dtype = arrays[spec.name], spec.numpy_dtype()
        if not np.can_cast(array.dtype, dtype, casting="same_kind") or array.dtype.kind in "OUSV":
            raise InvalidInput(f"{where}: {spec.name!r} is {array.dtype}, the input takes {dtype}")
        if spec.shape != UNKNOWN_RANK and array.ndim:  # the first dim counts inputs, whatever the batch
            spec.check_shape((spec.shape[0] if isinstance(spec.shape[0], int) else len(array), *array.shape[1:]))
        elif spec.shape != UNKNOWN_RANK:
            raise InvalidInput(f"{where}: {spec.name!r} is a scalar; its first dim counts the inputs")
        rows.add(len(array))
        out[spec.name] = array.astype(dtype, copy=False)
    if len(rows) != 1:
        raise InvalidInput(f"{where}: the tensors hold different numbers of inputs: {sorted(rows)}")
    return UserInputs("tensors", tensors=out, summary=f"{rows.pop()} rows of {', '.join(names)} from {where.name}")


def image_folder(root: Path, classes: list[Path], card: ModelCard, label_map: Path | None) -> UserInputs:
    """Photos labelled by their class folder; empty class folders are skipped and counted."""
    mapping = class_indices(root, [c.name for c in classes], card, label_map)
    photos, labels, skipped = [], [], []
    for folder in classes:
        found = files_with_suffix(folder, IMAGE_SUFFIXES)
        if not found:
            skipped.append(f"{folder.name}/: empty class folder")
        photos += found
        labels += [mapping[folder.name]] * len(found)
    if not photos:
        raise InvalidInput(f"{root}: every class folder is empty")
    return UserInputs("imagefolder", tuple(photos), tuple(labels), skipped=tuple(skipped),
                      summary=f"ImageFolder {root.name}: {len(photos)} labelled photos in "
                      f"{len(classes) - len(skipped)} classes")  # fmt: skip


def class_indices(root: Path, names: list[str], card: ModelCard, label_map: Path | None) -> dict[str, int]:
    """Class folder name → class index: from --label-map or root/labels.txt, else integer folder names, else
    ImageNet class names (for a 1000-class model); unknown names and indices outside the model's outputs are
    errors."""
    classes = card.outputs[0].shape[-1] if card.outputs and card.outputs[0].shape else None
    file = label_map or (root / LABEL_FILE if (root / LABEL_FILE).is_file() else None)
    if file is not None:
        mapping = read_label_map(file)
        unknown = [n for n in names if n not in mapping]
        source = f"named in {file.name}"
    elif all(n.isdigit() for n in names):
        mapping, unknown, source = {n: int(n) for n in names}, [], "class indices"
    else:
        known = imagenet_names() if classes == 1000 else {}
        mapping = {n: known[key(n)] for n in names if key(n) in known}
        unknown = [n for n in names if n not in mapping]
        source = "ImageNet class names or WordNet ids" if classes == 1000 else "class indices"
    if unknown:
        raise InvalidInput(f"class folders {unknown[:5]} are not {source}; map them to class indices with "
                           f"--label-map FILE or {LABEL_FILE} (lines: name index)")  # fmt: skip
    outside = sorted(
        {i for n, i in mapping.items() if n in names and isinstance(classes, int) and not 0 <= i < classes}
    )
    if outside:
        raise InvalidInput(f"class indices {outside[:5]} are outside the model's {classes} outputs")
    return mapping


def read_label_map(path: Path) -> dict[str, int]:
    """Lines "name index" (or "name,index"), or one name per line (its line number is its index)."""
    mapping = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        parts = line.replace(",", " ").replace("\t", " ").split()
        if not parts:
            continue
        if len(parts) > 1 and parts[-1].lstrip("-").isdigit():
            mapping[" ".join(parts[:-1])] = int(parts[-1])
        else:
            mapping[" ".join(parts)] = number
    return mapping
