"""The search page in a real headless browser (Debian's chromium + chromedriver, installed by `make browser`):
a person picks a photo and sees the most similar gallery photos with scores and the time per stage."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (CHROMIUM and DRIVER):
        pytest.skip("chromium/chromedriver not installed (run `make browser`)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_upload_a_photo_and_see_similar_ones(browser, search_url, gallery, tmp_path):
    browser.get(search_url + "/")
    wait = WebDriverWait(browser, 30)
    wait.until(lambda d: "photos" in d.find_element(By.ID, "about").text)
    assert "24 photos · efficientnet-lite0" in browser.find_element(By.ID, "about").text
    photo = sorted(gallery.glob("*.jpg"))[7]
    browser.find_element(By.ID, "file").send_keys(str(photo))
    wait.until(ec.presence_of_all_elements_located((By.CSS_SELECTOR, "figure.hit")))
    hits = browser.find_elements(By.CSS_SELECTOR, "figure.hit")
    assert len(hits) == 12
    assert hits[0].find_element(By.TAG_NAME, "figcaption").text.startswith(photo.name)
    wait.until(lambda d: d.execute_script(
        "return [...document.images].filter(i => i.closest('figure')).every(i => i.complete && i.naturalWidth > 0)"
    ))  # fmt: skip
    stages = browser.find_element(By.ID, "timings").text
    for stage in ("decode", "embed", "search", "round trip"):
        assert stage in stages
    browser.save_screenshot(str(tmp_path / "search.png"))


def test_a_file_that_is_not_an_image_shows_the_error(browser, search_url, tmp_path):
    browser.get(search_url + "/")
    notes = tmp_path / "notes.jpg"
    notes.write_text("not a photo at all")
    browser.find_element(By.ID, "file").send_keys(str(notes))
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "error").text)
    assert "not a decodable image" in browser.find_element(By.ID, "error").text
    assert not browser.find_elements(By.CSS_SELECTOR, "figure.hit")
