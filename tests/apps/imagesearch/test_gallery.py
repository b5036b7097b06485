import numpy as np
from PIL import Image

from turboinfer.apps.imagesearch.gallery import MAX_SIDE, tiles, write_gallery
from turboinfer.models.photos import all_photos


def test_tiles_cover_the_image_without_overlap():
    pixels = np.arange(40 * 30 * 3, dtype=np.uint8).reshape(30, 40, 3)
    parts = tiles(Image.fromarray(pixels), 2)
    assert [p.size for p in parts] == [(20, 15)] * 4
    top = np.concatenate([np.asarray(parts[0]), np.asarray(parts[1])], axis=1)
    bottom = np.concatenate([np.asarray(parts[2]), np.asarray(parts[3])], axis=1)
    assert np.array_equal(np.concatenate([top, bottom]), pixels)


def test_gallery_has_each_photo_and_its_tiles(tmp_path, settings):
    photos = all_photos(settings)[:3]
    written = write_gallery(photos, tmp_path, grid=2)
    assert len(written) == 3 * 5
    for path in written:
        with Image.open(path) as image:
            assert image.format == "JPEG" and max(image.size) <= MAX_SIDE
