"""A user's own ONNX models, with no card, through every command as a user runs them (real subprocesses): an
image classifier, a recurrent text classifier and a generic-tensor model; `card init`; the bad inputs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request

import numpy as np
import pytest

from tests.support.cli import run
from tests.support.http import free_port, wait_ready
from tests.support.images import image_folder


@pytest.mark.parametrize("kind", ["image", "text", "tensor"])
def test_profile_and_bench_take_a_bare_onnx_and_say_what_they_inferred(user_models, kind, minilm, tmp_path):
    extra = ["--tokenizer", str(minilm.folder / "tokenizer.json")] if kind == "text" else []
    profiled = run("profile", str(user_models[kind]), "--quick", "--json", str(tmp_path / "p.json"), *extra)
    assert profiled.returncode == 0, profiled.stderr
    assert (
        "inferred:" in profiled.stdout
        and ("image" if kind == "image" else "token" if kind == "text" else "tensor") in profiled.stdout
    )
    benched = run("bench", str(user_models[kind]), "--runs", "20", "--no-history")
    assert benched.returncode == 0, benched.stderr


def test_card_init_writes_an_editable_card_that_every_command_then_uses(user_models, tmp_path):
    model = tmp_path / "classifier.onnx"
    shutil.copy(user_models["image"], model)
    written = run("card", "init", str(model), "--mean", "0.5,0.5,0.5", "--std", "0.5,0.5,0.5", "--size", "224")
    assert written.returncode == 0, written.stderr
    card = json.loads((tmp_path / "classifier.card.json").read_text())
    assert card["preprocess"]["mean"] == [0.5, 0.5, 0.5] and card["task"] == "classify"
    again = run("card", "init", str(model))
    assert again.returncode == 2 and "exists" in again.stderr
    bad_options = ((("--tokenizer", "x.json", "--force"), "for text models"),
                   (("--max-length", "8", "--force"), "for text models"),
                   (("--mean", "0.5,0.5", "--force"), "takes 3 values"))  # fmt: skip
    for args, message in bad_options:
        bad = run("card", "init", str(model), *args)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    profiled = run("profile", str(model), "--quick", "--pipeline", "none")
    assert profiled.returncode == 0 and "inferred:" not in profiled.stdout  # the card speaks now, not the graph


def test_optimize_a_text_model_without_a_tokenizer_names_what_to_give(user_models, tmp_path):
    result = run("optimize", str(user_models["text"]), "--quick", "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "has no tokenizer: pass --tokenizer" in result.stderr and "preprocess.tokenizer" in result.stderr


@pytest.mark.parametrize(
    "kind", [pytest.param("image", marks=pytest.mark.slow), "text", pytest.param("tensor", marks=pytest.mark.slow)]
)
def test_optimize_then_serve_a_bare_onnx_model(user_models, kind, minilm, tmp_path):
    out = tmp_path / "out"
    extra = ["--tokenizer", str(minilm.folder / "tokenizer.json")] if kind == "text" else []
    optimized = run("optimize", str(user_models[kind]), "--quick", "--out", str(out), *extra)
    log = json.loads((out / "decision-log.json").read_text())
    assert optimized.returncode == (0 if log["budget_met"] else 3), optimized.stderr  # 3: nothing faster kept it
    assert "chosen:" in optimized.stdout and "Traceback" not in optimized.stderr
    assert log["chosen"]["judged_by"] and log["inputs"]["origin"]

    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "turboinfer.cli.main", "serve", str(out / "chosen.variant.json"),
                                "--port", str(port), "--log-level", "warning"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process)
        with urllib.request.urlopen(f"{base}/v2/repository/index", data=b"") as response:
            name = json.loads(response.read())[0]["name"]
        with urllib.request.urlopen(f"{base}/v2/models/{name}") as response:
            inputs = json.loads(response.read())["inputs"]
        body = {"inputs": [{"name": i["name"], "datatype": i["datatype"],
                            "shape": [1, *[d if d > 0 else 8 for d in i["shape"][1:]]]} for i in inputs]}  # fmt: skip
        for entry in body["inputs"]:
            entry["data"] = [1] * int(np.prod(entry["shape"]))
        request = urllib.request.Request(f"{base}/v2/models/{name}/infer", data=json.dumps(body).encode())
        with urllib.request.urlopen(request) as response:
            assert response.status == 200 and json.loads(response.read())["outputs"]
    finally:
        process.terminate()
        process.wait(30)


def test_a_labelled_image_folder_judges_by_true_accuracy(effnet, tmp_path):
    folder = image_folder(tmp_path / "labelled")
    out = tmp_path / "out"
    result = run("optimize", "efficientnet-lite0", "--quick", "--inputs", str(folder), "--budget", "2pt", "--out",
                 str(out))  # fmt: skip
    log = json.loads((out / "decision-log.json").read_text())
    assert result.returncode == (0 if log["budget_met"] else 3), result.stderr
    assert log["inputs"]["labelled"] == 20 and "ImageFolder" in log["inputs"]["origin"]
    assert "true top-1 accuracy" in log["chosen"]["judged_by"] and "on 20 labelled inputs" in log["chosen"]["judged_by"]
    judged = [o for o in log["outcomes"] if o["fidelity"]]
    assert all("accuracy" in o["fidelity"] for o in judged)
    assert any("cannot resolve" in o["warning"] for o in judged) or "cannot resolve" not in result.stdout


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ("empty-dir", "holds no photos"),
        ("lines.txt", "takes images (photos or an ImageFolder); --inputs"),
        ("wrong.npz", "takes images"),
    ],
)
def test_bad_inputs_are_one_line_errors(effnet, tmp_path, inputs, message):
    (tmp_path / "empty-dir").mkdir()
    (tmp_path / "lines.txt").write_text("a sentence\n")
    np.savez(tmp_path / "wrong.npz", image=np.zeros((2, 3, 224, 224), np.float32))
    result = run("optimize", "efficientnet-lite0", "--quick", "--inputs", str(tmp_path / inputs))
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
