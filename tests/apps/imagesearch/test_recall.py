import pytest

from turboinfer.apps.imagesearch.index import GalleryIndex
from turboinfer.apps.imagesearch.recall import evaluate_recall
from turboinfer.core.errors import InvalidInput
from turboinfer.models.variant import parse_variant


def test_augmented_copies_find_their_source(built, settings):
    report = evaluate_recall(GalleryIndex(built), parse_variant("efficientnet-lite0", settings), queries=24)
    assert report.with_pca.queries == report.without_pca.queries == 24
    assert report.pca == 8
    # Real features on real photos: crops, flips, jitter and re-compression rarely hide the source.
    assert report.without_pca.at_10 >= 0.9 and report.without_pca.at_1 >= 0.75
    assert report.with_pca.at_1 <= report.with_pca.at_10
    again = evaluate_recall(GalleryIndex(built), parse_variant("efficientnet-lite0", settings), queries=24)
    assert again == report  # same seed, same queries, same answer


def test_recall_refuses_another_model(built, settings, mobilenet):
    with pytest.raises(InvalidInput, match="built with efficientnet-lite0"):
        evaluate_recall(GalleryIndex(built), parse_variant("mobilenetv2", settings), queries=4)
