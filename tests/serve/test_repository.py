"""A repository folder of model cards with a per-model serving config."""

from __future__ import annotations

import shutil

import pytest

from tests.support.http import call, running
from turboinfer.core.errors import InvalidInput, ModelNotFound
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.run import build_server
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import read_config, repository


@pytest.fixture()
def repo(effnet, tmp_path):
    folder = tmp_path / "repo" / "efficientnet-lite0"
    folder.mkdir(parents=True)
    shutil.copy(effnet.onnx_path, folder / "model.onnx")
    shutil.copy(effnet.card_path, folder / "model.card.json")
    return tmp_path / "repo"


def test_repository_with_per_model_config_serves(repo, settings):
    (repo / "serve.yaml").write_text(
        "models:\n  efficientnet-lite0:\n    max_batch: 2\n    max_delay_ms: 1\n    preferred: [2]\n"
        "    shadow: efficientnet-lite0@openvino\n"
    )
    served = repository(repo, settings, read_config(repo / "serve.yaml"), BatcherConfig())
    [entry] = served
    assert (entry.batcher.max_batch, entry.batcher.max_delay_s, entry.batcher.preferred) == (2, 0.001, (2,))
    assert entry.split is not None and entry.split.mode == "shadow" and entry.second.backend == "openvino"
    server = build_server(served, ServeConfig())
    with running(server) as base:
        assert call(f"{base}/v2/models/efficientnet-lite0/ready")[0] == 200
    assert server.frontends["v2"].batching["efficientnet-lite0"].max_batch == 2


def test_bad_configs_and_folders_are_clear_errors(repo, settings, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  efficientnet-lite0:\n    max_bacth: 2\n")
    with pytest.raises(InvalidInput, match="unknown keys .*max_bacth"):
        read_config(bad)
    bad.write_text("models: [1, 2")
    with pytest.raises(InvalidInput, match="not valid"):
        read_config(bad)
    with pytest.raises(InvalidInput, match="not in the repository"):
        repository(repo, settings, {"resnet9000": {}}, BatcherConfig())
    with pytest.raises(ModelNotFound, match="no model cards"):
        repository(tmp_path, settings, {}, BatcherConfig())  # cards sit two levels down from here


def test_cards_pointing_outside_the_repository_are_refused(effnet, settings, tmp_path):
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "model.onnx").symlink_to(effnet.onnx_path)
    shutil.copy(effnet.card_path, folder / "model.card.json")
    with pytest.raises(InvalidInput, match="outside the repository"):
        repository(folder, settings, {}, BatcherConfig())
