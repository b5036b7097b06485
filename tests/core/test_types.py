import numpy as np
import pytest

from turboinfer.core.errors import InvalidModel
from turboinfer.core.settings import Settings
from turboinfer.core.types import Metric, TensorSpec


def test_concrete_shape_fills_symbolic_dims():
    spec = TensorSpec("ids", ("batch", "sequence"), "int64")
    assert spec.concrete_shape(batch=4, sequence=128) == (4, 128)
    assert spec.numpy_dtype() == np.int64
    with pytest.raises(InvalidModel, match="sequence"):
        spec.concrete_shape(batch=4)


def test_metric_json_carries_ci_and_method():
    data = Metric("lat", 1.5, "ms", ci=(1.4, 1.6), method="median of 30").to_dict()
    assert data == {"name": "lat", "value": 1.5, "unit": "ms", "ci95": [1.4, 1.6], "method": "median of 30"}


def test_settings_come_from_an_explicit_environment(tmp_path):
    assert Settings.from_env({"TURBOINFER_CACHE": str(tmp_path)}).zoo_dir == tmp_path / "zoo"
    assert Settings.from_env({}).cache_dir.name == "turboinfer"
