"""`turboinfer search …` as a user runs it: real subprocesses, real photos, exit codes, the case study."""

import json
import shutil

import pytest

from tests.support.cli import run


def test_index_query_and_recall(tmp_path, gallery):
    photos = tmp_path / "photos"
    shutil.copytree(gallery, photos)
    (photos / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    (photos / "readme.md").write_text("# not a photo")
    out = tmp_path / "index"
    result = run("search", "index", str(photos), "--out", str(out), "--pca", "8", "--index", "hnsw",
                 "--json", str(tmp_path / "index.json"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "indexed 24 photos" in result.stdout and "broken.jpg" in result.stdout
    report = json.loads((tmp_path / "index.json").read_text())
    assert report["photos"] == 24 and report["not_images"] == 1 and report["photos_per_s"] > 0

    photo = sorted(photos.glob("0*.jpg"))[2]
    result = run("search", "query", str(out), str(photo), "-k", "3", "--json", str(tmp_path / "q.json"))
    assert result.returncode == 0, result.stderr
    hits = json.loads((tmp_path / "q.json").read_text())["hits"]
    assert len(hits) == 3 and hits[0]["path"] == str(photo)

    result = run("search", "recall", str(out), "--queries", "12")
    assert result.returncode == 0, result.stderr
    assert "recall@10" in result.stdout and "without PCA" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["query", "{index}", "{notes}"], "not a decodable image"),
        (["query", "{index}", "{missing}"], "photo not found"),
        (["query", "{missing}", "{notes}"], "no gallery index"),
        (["query", "{index}", "{notes}", "--model", "mobilenetv2"], "built with efficientnet-lite0"),
        (["index", "{missing}", "--out", "{out}"], "gallery folder not found"),
        (["index", "{gallery}", "--out", "{out}", "--index", "annoy"], "unknown index kind"),
    ],
    ids=["not-an-image", "missing-photo", "missing-index", "other-model", "missing-gallery", "bad-kind"],
)
def test_user_errors_are_one_line_and_exit_2(tmp_path, built, gallery, args, message):
    notes = tmp_path / "notes.jpg"
    notes.write_text("plain text")
    paths = {"index": built, "notes": notes, "missing": tmp_path / "nothing", "gallery": gallery, "out": tmp_path}
    result = run("search", *[a.format(**paths) for a in args])
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_quick_case_study_writes_its_report(tmp_path, gallery, settings):
    small = tmp_path / "gallery"
    small.mkdir()
    for photo in sorted(gallery.glob("*.jpg"))[:12]:
        shutil.copy(photo, small)
    out = tmp_path / "study"
    result = run("search", "case-study", str(small), "--optimized", "efficientnet-lite0", "--out", str(out),
                 "--pca", "0", "--quick", "--p99-target-ms", "2000")  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads((out / "case-study.json").read_text())
    labels = [r["contender"]["label"] for r in data["results"]]
    assert labels == ["seed baseline", "same-model baseline", "optimized"]
    seed, same, best = data["results"]
    assert seed["contender"]["serve_model"] == "resnet152@torch" and seed["contender"]["max_batch"] == 1
    assert best["contender"]["preprocess"] == "fast" and best["contender"]["max_batch"] == 8
    assert all(r["sustainable_qps"] for r in data["results"]), data
    assert data["reference_rate"] == seed["sustainable_qps"]
    assert all(r["at_reference_rate"]["ok"] > 0 for r in data["results"])
    assert set(best["stages_ms"]) == {"decode", "embed", "search", "http"}
    assert same["recall"]["with_pca"]["at_10"] >= 0.9  # real features on real photos
    assert set(data["ratios"]) == {"qps_vs_seed", "qps_vs_same_model", "p99_seed_over_optimized",
                                   "recall10_gap_points"}  # fmt: skip
    report = (out / "report.html").read_text()
    assert report.count("data:image/png;base64,") == 3 and "seed baseline" in report
    assert "reference rate" in result.stdout and "qps vs seed" in result.stdout


def test_search_index_takes_a_bare_onnx_and_says_how_to_use_one_without_features(
    tmp_path, gallery, effnet, user_models
):
    bare = tmp_path / "effnet.onnx"
    shutil.copy(effnet.onnx_path, bare)  # the zoo's model, no card beside it: its outputs are read from the graph
    result = run("search", "index", str(gallery), "--model", str(bare), "--out", str(tmp_path / "index"), "--pca", "0")
    assert result.returncode == 0, result.stderr
    assert "inferred:" in result.stdout and "indexed 24 photos" in result.stdout
    plain = run("search", "index", str(gallery), "--model", str(user_models["image"]), "--out", str(tmp_path / "x"))
    assert plain.returncode == 2 and "card init" in plain.stderr and "--task embed" in plain.stderr
