"""ONNX Runtime backend: CPU execution provider, CUDA and TensorRT when the build and device have them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from turboinfer.core.errors import InvalidModel
from turboinfer.core.types import ONNX_TO_NUMPY, UNNAMED, TensorSpec
from turboinfer.runtime.session import SessionOptions, check_feeds

GRAPH_LEVELS = {
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
PROVIDERS = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
}


def choose_providers(requested: str, available: list[str]) -> list[str]:
    """Execution providers to ask for, best first, always ending with CPU."""
    if requested == "auto":
        order = [PROVIDERS["tensorrt"], PROVIDERS["cuda"]]
        return [p for p in order if p in available] + [PROVIDERS["cpu"]]
    wanted = PROVIDERS[requested]
    if wanted not in available:
        raise InvalidModel(f"{wanted} is not available in this onnxruntime build ({', '.join(available)})")
    return [wanted] if wanted == PROVIDERS["cpu"] else [wanted, PROVIDERS["cpu"]]


def spec_from_node_arg(arg: Any) -> TensorSpec:
    """TensorSpec from an ORT NodeArg ("tensor(float)" -> float32; an unnamed first dim is the batch)."""
    element = arg.type.removeprefix("tensor(").removesuffix(")")
    shape = tuple(d if isinstance(d, int) else (d or ("batch" if i == 0 else UNNAMED)) for i, d in enumerate(arg.shape))
    return TensorSpec(arg.name, shape, ONNX_TO_NUMPY.get(element, element))


def session_options(options: SessionOptions) -> ort.SessionOptions:
    """ORT SessionOptions from our options."""
    so = ort.SessionOptions()
    so.graph_optimization_level = GRAPH_LEVELS[options.graph_level]
    so.intra_op_num_threads = options.intra_threads
    so.inter_op_num_threads = options.inter_threads
    so.execution_mode = ort.ExecutionMode.ORT_PARALLEL if options.parallel else ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    so.enable_cpu_mem_arena = so.enable_mem_pattern = options.memory_arena
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if options.spin else "0")
    return so


class OrtSession:
    """A Session over onnxruntime.InferenceSession."""

    backend = "ort"

    def __init__(self, path: Path, options: SessionOptions) -> None:
        if options.precision != "fp32":
            raise InvalidModel(
                f"ONNX Runtime runs the precision stored in the graph; convert the model for {options.precision}"
            )
        self.options = options
        providers = choose_providers(options.provider, ort.get_available_providers())
        try:
            self._session = ort.InferenceSession(str(path), session_options(options), providers=providers)
        except Exception as err:  # ORT raises its own exception types (Fail, InvalidGraph, ...)
            raise InvalidModel(f"onnxruntime cannot load {path}: {str(err).splitlines()[0]}") from None
        self.inputs = tuple(spec_from_node_arg(a) for a in self._session.get_inputs())
        self.outputs = tuple(spec_from_node_arg(a) for a in self._session.get_outputs())
        self._output_names = [o.name for o in self.outputs]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one inference."""
        check_feeds(self.inputs, feeds)
        results = self._session.run(self._output_names, dict(feeds))
        return dict(zip(self._output_names, results, strict=True))

    def describe(self) -> dict[str, Any]:
        """Providers actually in use, graph level, threads, precision."""
        return {
            "backend": self.backend,
            "onnxruntime": ort.__version__,
            "providers": self._session.get_providers(),
            "precision": "as stored in the graph",
            "options": self.options.to_dict(),
        }


def has_cuda() -> bool:
    """True when this onnxruntime build offers the CUDA execution provider (a GPU may still be absent)."""
    return PROVIDERS["cuda"] in ort.get_available_providers()
