"""OpenVINO backend (CPU plugin). The precision hint is always explicit: on AMX CPUs the default is BF16."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.errors import InvalidModel, MissingExtra
from turboinfer.core.types import UNNAMED, TensorSpec
from turboinfer.runtime.session import SessionOptions, check_feeds

OV_TO_NUMPY = {
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f64": "float64",
    "i64": "int64",
    "i32": "int32",
    "i8": "int8",
    "u8": "uint8",
    "boolean": "bool",
}
PRECISION_HINTS = {"fp32": "f32", "bf16": "bf16", "fp16": "f16"}


def import_openvino() -> Any:
    """The openvino module, or MissingExtra naming the extra to install."""
    try:
        import openvino
    except ImportError:
        raise MissingExtra("openvino", "openvino") from None
    return openvino


def spec_from_port(port: Any) -> TensorSpec:
    """TensorSpec from an OpenVINO port; dynamic dims become names."""
    shape = tuple(
        d.get_length() if d.is_static else ("batch" if i == 0 else UNNAMED)
        for i, d in enumerate(port.get_partial_shape())
    )
    element = port.get_element_type().get_type_name()
    return TensorSpec(port.get_any_name(), shape, OV_TO_NUMPY.get(element, element))


def compile_config(options: SessionOptions) -> dict[str, str]:
    """OpenVINO CPU plugin properties from our options (one stream, latency hint)."""
    config = {
        "INFERENCE_PRECISION_HINT": PRECISION_HINTS[options.precision],
        "PERFORMANCE_HINT": "LATENCY",
        "NUM_STREAMS": "1",
    }
    if options.intra_threads:
        config["INFERENCE_NUM_THREADS"] = str(options.intra_threads)
    return config


class OpenVinoSession:
    """A Session over an OpenVINO compiled model with one reusable infer request."""

    backend = "openvino"

    def __init__(self, path: Path, options: SessionOptions, device: str = "CPU") -> None:
        ov = import_openvino()
        self.options = options
        core = ov.Core()
        try:
            model = core.read_model(str(path))
            self._compiled = core.compile_model(model, device, compile_config(options))
        except RuntimeError as err:
            raise InvalidModel(f"OpenVINO cannot load {path}: {str(err).splitlines()[0]}") from None
        self._request = self._compiled.create_infer_request()
        self.inputs = tuple(spec_from_port(p) for p in self._compiled.inputs)
        self.outputs = tuple(spec_from_port(p) for p in self._compiled.outputs)
        self._version = ov.get_version()

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one inference; outputs are copies, safe to keep."""
        check_feeds(self.inputs, feeds)
        results = self._request.infer(dict(feeds))
        return {spec.name: np.array(results[spec.name]) for spec in self.outputs}

    def describe(self) -> dict[str, Any]:
        """Device, the precision the plugin actually runs, threads, OpenVINO version."""
        return {
            "backend": self.backend,
            "openvino": self._version,
            "devices": list(self._compiled.get_property("EXECUTION_DEVICES")),
            "precision": self._compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name(),
            "threads": int(self._compiled.get_property("INFERENCE_NUM_THREADS")),
            "options": self.options.to_dict(),
        }
