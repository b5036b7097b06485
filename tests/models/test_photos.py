import io

import numpy as np
from PIL import Image

from turboinfer.measure.sentences import real_sentences, split_sentences
from turboinfer.models.augment import augmented_set
from turboinfer.models.photos import all_photos, labelled_imagenet_photos, photo_sources


def test_real_photos_come_from_packages(settings):
    sources = {s.name: s for s in photo_sources(settings)}
    assert {"skimage", "sklearn", "matplotlib", "foolbox-imagenet"} <= set(sources)
    assert all(source.license for source in sources.values())
    photos = all_photos(settings, minimum=30)
    assert len(set(photos)) == len(photos)
    assert all(p.is_file() for p in photos)


def test_labelled_photos_carry_imagenet_labels():
    photos = labelled_imagenet_photos()
    assert len(photos) == 20
    assert all(0 <= label < 1000 for _, label in photos)


def test_augmentation_is_reproducible_and_varied(settings):
    photos = all_photos(settings)[:3]
    first = augmented_set(photos, 6, seed=7)
    again = augmented_set(photos, 6, seed=7)
    other = augmented_set(photos, 6, seed=8)
    assert [a.jpeg for a in first] == [a.jpeg for a in again]
    assert [a.jpeg for a in first] != [a.jpeg for a in other]
    assert [a.source for a in first] == [0, 1, 2, 0, 1, 2]
    for item in first:
        image = Image.open(io.BytesIO(item.jpeg))
        assert image.format == "JPEG" and max(image.size) <= 640


def test_sentences_are_real_prose_and_deterministic():
    sentences = real_sentences(300)
    assert len(sentences) == len(set(sentences)) == 300
    assert sentences == real_sentences(300)
    assert all(s[0].isupper() and s[-1] in ".!?" and len(s.split()) >= 6 for s in sentences)
    assert np.mean([len(s.split()) for s in sentences]) > 10
    assert split_sentences(">>> x = 1\nShort one. This sentence has enough words in it to count.") == [
        "This sentence has enough words in it to count."
    ]
