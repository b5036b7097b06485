"""Per-node execution times from the runtimes' own profilers (ORT's JSON trace, OpenVINO's perf counters)."""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from turboinfer.core.errors import InvalidInput
from turboinfer.runtime.openvino import compile_config, import_openvino
from turboinfer.runtime.session import SessionOptions, check_model_file

Shape = tuple[int, ...]


@dataclass(frozen=True)
class NodeRun:
    """One executed node (after the runtime's own fusions), its median time per inference and tensor shapes."""

    name: str
    op_type: str
    seconds: float
    input_shapes: tuple[Shape, ...] = ()
    output_shapes: tuple[Shape, ...] = ()
    bytes: float | None = None
    """Activations + parameters read and outputs written, as the runtime reports them."""


def shapes_of(entries: list[dict[str, list[int]]]) -> tuple[Shape, ...]:
    """Shapes from ORT's [{"float": [1, 3, 224, 224]}, ...] lists."""
    return tuple(tuple(next(iter(entry.values()))) for entry in entries)


def ort_node_runs(path: Path, options: SessionOptions, feeds: Mapping[str, np.ndarray], runs: int) -> list[NodeRun]:
    """Run the model `runs` times with ONNX Runtime's profiler on; median duration of each executed node."""
    import onnxruntime as ort

    from turboinfer.runtime.onnxruntime import choose_providers, session_options

    check_model_file(path)
    with tempfile.TemporaryDirectory() as tmp:
        so = session_options(options)
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(tmp) / "ort")
        session = ort.InferenceSession(
            str(path), so, providers=choose_providers(options.provider, ort.get_available_providers())
        )
        for _ in range(runs):
            session.run(None, dict(feeds))
        events = json.loads(Path(session.end_profiling()).read_text())
    durations: dict[str, list[float]] = defaultdict(list)
    first: dict[str, dict] = {}
    for event in events:
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        name = event["name"].removesuffix("_kernel_time")
        durations[name].append(event["dur"] * 1e-6)  # µs → s
        first.setdefault(name, event["args"])
    out = []
    for name, values in durations.items():
        args = first[name]
        size = sum(float(args.get(k, 0)) for k in ("activation_size", "parameter_size", "output_size"))
        out.append(
            NodeRun(
                name=name,
                op_type=str(args.get("op_name", "?")),
                seconds=float(np.median(values)),
                input_shapes=shapes_of(args.get("input_type_shape", [])),
                output_shapes=shapes_of(args.get("output_type_shape", [])),
                bytes=size or None,
            )
        )
    return out


def openvino_node_runs(
    path: Path, options: SessionOptions, feeds: Mapping[str, np.ndarray], runs: int
) -> list[NodeRun]:
    """Run the model `runs` times with OpenVINO's performance counters; median real time of each executed node."""
    ov = import_openvino()
    check_model_file(path)
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {**compile_config(options), "PERF_COUNT": "YES"})
    request = compiled.create_infer_request()
    durations: dict[tuple[str, str], list[float]] = defaultdict(list)
    for _ in range(runs):
        request.infer(dict(feeds))
        for info in request.get_profiling_info():
            if info.status == info.Status.EXECUTED:
                durations[(info.node_name, info.node_type)].append(info.real_time.total_seconds())
    return [NodeRun(name, op, float(np.median(v))) for (name, op), v in durations.items()]


def node_runs(
    path: Path, backend: str, options: SessionOptions, feeds: Mapping[str, np.ndarray], runs: int = 20
) -> list[NodeRun]:
    """Per-node times for the named backend ("ort" or "openvino")."""
    if backend == "ort":
        return ort_node_runs(path, options, feeds, runs)
    if backend == "openvino":
        return openvino_node_runs(path, options, feeds, runs)
    raise InvalidInput(f"operator profiling supports ort and openvino, not {backend!r}")
