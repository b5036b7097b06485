"""Real photos shipped by installed packages (PyPI wheels and Debian packages), with their licences."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from turboinfer.core.errors import DataUnavailable
from turboinfer.core.settings import Settings

SKIMAGE_PHOTOS = (
    "astronaut.png", "brick.png", "camera.png", "chelsea.png", "coffee.png", "coins.png", "grass.png",
    "gravel.png", "hubble_deep_field.jpg", "moon.png", "motorcycle_left.png", "motorcycle_right.png",
    "retina.jpg", "rocket.jpg",
)  # fmt: skip
"""scikit-image's sample photos that ship in the wheel (the rest are fetched on demand, so are skipped)."""

OPENCV_PHOTOS = (
    "HappyFish.jpg", "aero1.jpg", "aero3.jpg", "apple.jpg", "baboon.jpg", "building.jpg", "butterfly.jpg",
    "fruits.jpg", "home.jpg", "leuvenA.jpg", "leuvenB.jpg", "messi5.jpg", "orange.jpg", "squirrel_cls.jpg",
    "starry_night.jpg", "stuff.jpg", "aloeL.jpg", "Blender_Suzanne1.jpg", "board.jpg", "blox.jpg",
    "licenseplate_motion.jpg", "pca_test1.jpg", "ela_original.jpg", "left01.jpg", "right01.jpg",
)  # fmt: skip
"""Photos among opencv-doc's examples/data (logos, masks and synthetic drawings left out)."""

MATE_NATURE = "usr/share/backgrounds/mate/nature"
OPENCV_DATA = "usr/share/doc/opencv-doc/examples/data"
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"}
"""File suffixes read as photos from a user's folder."""
FOOLBOX_NAME = re.compile(r"imagenet_\d+_(\d+)\.jpg$")


@dataclass(frozen=True)
class PhotoSource:
    """A set of real photos from one package."""

    name: str
    package: str
    license: str
    paths: tuple[Path, ...]


def package_dir(package: str) -> Path | None:
    """Folder of an installed Python package, found without importing it (None if absent)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def existing(folder: Path | None, names: tuple[str, ...]) -> tuple[Path, ...]:
    """The named files that exist in folder, in the given order."""
    if folder is None:
        return ()
    return tuple(folder / n for n in names if (folder / n).is_file())


def debian_folder(settings: Settings, relative: str) -> Path | None:
    """A Debian package's data folder: installed system-wide, or unpacked into the cache by `make data`."""
    for root in (Path("/"), settings.debian_dir):
        if (root / relative).is_dir():
            return root / relative
    return None


def labelled_imagenet_photos() -> list[tuple[Path, int]]:
    """foolbox's 20 ImageNet validation photos with their class index (from the file name)."""
    folder = package_dir("foolbox")
    if folder is None or not (folder / "data").is_dir():
        raise DataUnavailable(
            "foolbox's ImageNet photos are missing; run `make install` (pip install --no-deps foolbox)"
        )
    photos = []
    for path in sorted((folder / "data").glob("imagenet_*.jpg")):
        match = FOOLBOX_NAME.search(path.name)
        if match:
            photos.append((path, int(match.group(1))))
    return photos


def photo_sources(settings: Settings) -> list[PhotoSource]:
    """Every source of real photos found on this machine (sources that are absent are left out)."""
    skimage, sklearn, mpl = package_dir("skimage"), package_dir("sklearn"), package_dir("matplotlib")
    mate = debian_folder(settings, MATE_NATURE)
    sources = [
        PhotoSource("skimage", "scikit-image", "public domain / CC0 (see skimage/data/README)",
                    existing(skimage / "data" if skimage else None, SKIMAGE_PHOTOS)),
        PhotoSource("sklearn", "scikit-learn", "CC-BY (china.jpg, flower.jpg; see sklearn/datasets/images)",
                    existing(sklearn / "datasets" / "images" if sklearn else None, ("china.jpg", "flower.jpg"))),
        PhotoSource("matplotlib", "matplotlib", "public domain (US Navy photo of Grace Hopper)",
                    existing(mpl / "mpl-data" / "sample_data" if mpl else None, ("grace_hopper.jpg",))),
        PhotoSource("mate-backgrounds", "Debian mate-backgrounds", "GPL-2+ / CC-BY-SA (see its copyright file)",
                    tuple(sorted(mate.glob("*.jpg"))) if mate else ()),
        PhotoSource("opencv-doc", "Debian opencv-doc", "BSD-3-Clause and per-file terms (see its copyright file)",
                    existing(debian_folder(settings, OPENCV_DATA), OPENCV_PHOTOS)),
    ]  # fmt: skip
    try:
        imagenet = tuple(p for p, _ in labelled_imagenet_photos())
    except DataUnavailable:
        imagenet = ()
    sources.append(PhotoSource("foolbox-imagenet", "foolbox", "ImageNet validation terms (research use)", imagenet))
    return [s for s in sources if s.paths]


def files_with_suffix(folder: Path, suffixes: set[str]) -> list[Path]:
    """Files directly in folder whose suffix (any case) is one of suffixes, sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)


def all_photos(settings: Settings, minimum: int = 1) -> list[Path]:
    """Every real photo found, deterministic order; DataUnavailable if fewer than minimum."""
    photos = [p for source in photo_sources(settings) for p in source.paths]
    if len(photos) < minimum:
        raise DataUnavailable(f"found {len(photos)} real photos, need {minimum}; run `make data`")
    return photos
