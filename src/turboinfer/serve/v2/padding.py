"""Which requests may share a batch, and how token sequences of different lengths are made to fit one.

Tensors stack only when their non-batch dims match. A text model with an attention mask can do better: its token
inputs are right-padded to the longest request in the batch with mask 0 (the padded positions are attended by
nothing), and outputs along the sequence axis are cut back to each request's own length. `bucket` bounds the
waste: requests share a batch only when their lengths round up to the same multiple of it (0: any lengths).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.core.types import UNNAMED

Tensors = dict[str, np.ndarray]


@dataclass(frozen=True)
class SequencePadding:
    """Right-padding of a text model's token inputs on their sequence axis (axis 1)."""

    inputs: tuple[str, ...]
    """Token inputs padded with 0 (ids, attention mask, type ids)."""
    outputs: tuple[tuple[str, int], ...]
    """(output, axis) pairs that run along the sequence and are cut back after the batch."""
    bucket: int = 32
    """Requests share a batch when their lengths round up to the same multiple of this; 0: any lengths do."""

    def length(self, inputs: Tensors) -> int:
        """A request's sequence length."""
        return int(inputs[self.inputs[0]].shape[1])

    def key(self, inputs: Tensors) -> Hashable:
        """Requests with equal keys may share a batch."""
        others = tuple((n, a.shape[1:]) for n, a in inputs.items() if n not in self.inputs)
        group = 0 if self.bucket == 0 else -(-self.length(inputs) // self.bucket)
        return group, others

    def pad(self, items: list[Tensors]) -> list[Tensors]:
        """Every request's token inputs padded with zeros to the longest request's length."""
        longest = max(self.length(item) for item in items)
        padded = []
        for item in items:
            extra = longest - self.length(item)
            padded.append({name: np.pad(a, ((0, 0), (0, extra))) if extra and name in self.inputs else a
                           for name, a in item.items()})  # fmt: skip
        return padded

    def cut(self, outputs: Tensors, length: int) -> Tensors:
        """One request's outputs with the sequence axes cut back to its own length."""
        axes = dict(self.outputs)
        return {name: a[(slice(None),) * axes[name] + (slice(0, length),)] if name in axes else a
                for name, a in outputs.items()}  # fmt: skip


def sequence_padding(card: ModelCard, bucket: int = 32) -> SequencePadding | None:
    """The padding rule of a text model whose integer [batch, sequence] inputs include an attention mask; None for
    every other model (its requests batch by exact shape)."""
    tokens = [s for s in card.inputs if len(s.shape) == 2 and s.numpy_dtype().kind in "iu"
              and isinstance(s.shape[1], str) and s.shape[1] != UNNAMED]  # fmt: skip
    masks = [s for s in tokens if "mask" in s.name.lower()]
    if not masks:
        return None
    dim = masks[0].shape[1]
    padded = tuple(s.name for s in tokens if s.shape[1] == dim)
    outputs = tuple((o.name, axis) for o in card.outputs for axis, d in enumerate(o.shape) if axis and d == dim)
    return SequencePadding(padded, outputs, bucket)


def exact_key(inputs: Tensors) -> Hashable:
    """The batch key of a request without padding: the shapes of its non-batch dims."""
    return tuple((n, a.shape[1:]) for n, a in inputs.items())
