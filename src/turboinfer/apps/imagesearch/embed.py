"""Gallery embeddings: penultimate-layer features of an image model, L2-normalized, decoded by the pool."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidModel
from turboinfer.core.types import ImagePreprocess
from turboinfer.models.image_pipeline import DecodePool, ImagePipeline
from turboinfer.models.variant import Variant

FEATURES = "features"
"""The zoo's image models export their head's input under this name next to the logits."""


def feature_output(card: ModelCard) -> str:
    """The output to use as an embedding: "features" of a classifier, or an embedding model's first output."""
    names = [spec.name for spec in card.outputs]
    if FEATURES in names:
        return FEATURES
    if card.task == "embed" and names:
        return names[0]
    raise InvalidModel(
        f"{card.name} has no {FEATURES!r} output to embed photos with (outputs: {names}): export the layer before "
        f"its head as {FEATURES!r}, or make its first output the embedding: turboinfer card init "
        f"{card.onnx_path.name} --task embed"
    )


def image_preprocess(card: ModelCard) -> ImagePreprocess:
    """The card's image preprocessing, or InvalidModel for a model that does not take images."""
    if not isinstance(card.preprocess, ImagePreprocess):
        raise InvalidModel(f"{card.name} does not take images, so it cannot embed photos")
    return card.preprocess


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (all-zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


@dataclass(frozen=True)
class EmbeddedBatch:
    """Embeddings of the items of one batch that decoded (by position in the input); the others with the reason."""

    positions: list[int]
    vectors: np.ndarray
    failed: dict[int, str]


class Embedder:
    """A Session on a variant plus its image pipeline: photos → unit-length feature vectors."""

    def __init__(self, variant: Variant, decode_threads: int = 2) -> None:
        self.variant = variant
        self.output = feature_output(variant.card)
        self.pipeline = ImagePipeline(image_preprocess(variant.card))
        self.session = variant.open()
        self.decode_threads = decode_threads

    @functools.cached_property
    def dims(self) -> int:
        """Width of the embedding (from the graph, or from one sample batch when the graph leaves it symbolic)."""
        spec = next(s for s in self.variant.card.outputs if s.name == self.output)
        width = spec.shape[-1] if spec.shape else None
        if isinstance(width, int):
            return width
        return int(self.embed_tensor(self.pipeline.empty_batch(1) * 0).shape[-1])

    def embed_tensor(self, batch: np.ndarray) -> np.ndarray:
        """A preprocessed batch → unit-length embeddings [n, dims]."""
        feeds = {self.variant.card.inputs[0].name: batch}
        return l2_normalize(self.session.run(feeds)[self.output].reshape(len(batch), -1))

    def embed_bytes(self, data: bytes) -> np.ndarray:
        """One photo's bytes → its unit-length embedding [dims]."""
        return self.embed_tensor(self.pipeline(data)[None])[0]

    def embed_batches(self, items: Iterable[bytes], batch_size: int = 16) -> Iterator[EmbeddedBatch]:
        """Batches of embeddings over image bytes decoded in parallel by the pool: per batch, the positions (in
        items) of those embedded, their embeddings, and position → reason for those that did not decode."""
        start = 0
        with DecodePool(self.pipeline, self.decode_threads) as pool:
            for result in pool.map(items, batch_size):
                keep = [i for i in range(len(result.tensor)) if i not in result.failed]
                vectors = self.embed_tensor(result.tensor[keep]) if keep else np.empty((0, self.dims), np.float32)
                failed = {start + i: message for i, message in result.failed.items()}
                yield EmbeddedBatch([start + i for i in keep], vectors, failed)
                start += len(result.tensor)

    def embed_files(self, paths: Sequence[Path], batch_size: int = 16) -> Iterator[EmbeddedBatch]:
        """embed_batches over photo files read lazily (unreadable ones are reported as empty)."""
        return self.embed_batches((read_or_empty(p) for p in paths), batch_size)


def read_or_empty(path: Path) -> bytes:
    """A file's bytes, or b"" when it cannot be read (the pipeline then reports it as empty)."""
    try:
        return path.read_bytes()
    except OSError:
        return b""
