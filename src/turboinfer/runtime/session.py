"""The Session protocol every backend speaks, its options, and the factory that opens one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from turboinfer.core.errors import InvalidInput, InvalidModel, ModelNotFound
from turboinfer.core.types import TensorSpec, check_shapes

Backend = Literal["ort", "openvino"]
BACKENDS: tuple[str, ...] = ("ort", "openvino")
"""Backends that run an ONNX file; the PyTorch eager baseline is opened from the zoo (models.catalog)."""


@dataclass(frozen=True)
class SessionOptions:
    """Knobs shared by the backends; each backend maps them onto its own settings."""

    intra_threads: int = 0
    """Threads inside one operator; 0 = the backend's default (all usable cores)."""
    inter_threads: int = 1
    """Threads across independent operators (ORT parallel mode only)."""
    graph_level: Literal["disabled", "basic", "extended", "all"] = "all"
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    """Precision hint. OpenVINO needs it explicitly: on AMX CPUs it runs BF16 unless told f32."""
    provider: Literal["auto", "cpu", "cuda", "tensorrt"] = "auto"
    """ORT execution provider; auto picks TensorRT, then CUDA, when present, else CPU."""
    parallel: bool = False
    """ORT execution mode: run independent branches in parallel."""
    memory_arena: bool = True
    """ORT's CPU memory arena (faster allocation, memory held for reuse) and its memory-pattern planning."""
    spin: bool = False
    """Let idle ORT intra-op threads spin. Off by default: on a small CPU the spinning threads steal the cores
    from everything else in the process (the data path, a second session, the server)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


class Session(Protocol):
    """A loaded model that maps named numpy arrays to named numpy arrays."""

    backend: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one inference; feeds must match `inputs` by name, dtype and rank."""
        ...

    def describe(self) -> dict[str, Any]:
        """What actually runs: backend, device/provider, precision, threads."""
        ...


def check_feeds(specs: tuple[TensorSpec, ...], feeds: Mapping[str, np.ndarray]) -> None:
    """Raise InvalidInput unless feeds match the specs' names and dtypes, and their shapes fit (check_shapes)."""
    expected = {s.name for s in specs}
    if set(feeds) != expected:
        raise InvalidInput(f"expected inputs {sorted(expected)}, got {sorted(feeds)}")
    for spec in specs:
        array = feeds[spec.name]
        if not isinstance(array, np.ndarray):
            raise InvalidInput(f"input {spec.name!r} must be a numpy array, got {type(array).__name__}")
        if array.dtype != spec.numpy_dtype():
            raise InvalidInput(f"input {spec.name!r} must be {spec.dtype}, got {array.dtype}")
    check_shapes(specs, {name: array.shape for name, array in feeds.items()})


def check_model_file(path: Path) -> None:
    """Raise ModelNotFound/InvalidModel unless path is a readable, non-empty file."""
    if not path.is_file():
        raise ModelNotFound(f"model file not found: {path}")
    if path.stat().st_size == 0:
        raise InvalidModel(f"model file is empty: {path}")


def open_session(path: Path, backend: str = "ort", options: SessionOptions | None = None) -> Session:
    """Open an ONNX file with the named backend ("ort" or "openvino")."""
    options = options or SessionOptions()
    check_model_file(path)
    if path.suffix == ".xml" and backend != "openvino":
        raise InvalidModel(f"{path.name} is an OpenVINO IR: run it on the openvino backend")
    if backend == "ort":
        from turboinfer.runtime.onnxruntime import OrtSession

        return OrtSession(path, options)
    if backend == "openvino":
        from turboinfer.runtime.openvino import OpenVinoSession

        return OpenVinoSession(path, options)
    raise InvalidInput(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
