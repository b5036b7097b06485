"""End-to-end fixtures: the image-search server over a real gallery (shared with tests/apps/imagesearch)."""

from tests.apps.imagesearch.conftest import built, gallery, search_url

__all__ = ["built", "gallery", "search_url"]
