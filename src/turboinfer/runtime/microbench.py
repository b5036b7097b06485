"""GEMM ceilings that numpy cannot measure: INT8 (ORT MatMulInteger) and BF16 (OpenVINO precision hint)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from turboinfer.core.types import Metric
from turboinfer.measure.timer import TimingPolicy, time_call
from turboinfer.runtime.session import SessionOptions, open_session

MICRO_POLICY = TimingPolicy(warmup=2, min_runs=5, max_runs=50, max_seconds=1.5, target_rel_ci=0.02)


def gemm_model(n: int, int8: bool) -> onnx.ModelProto:
    """One-node ONNX graph: A[n,n] @ B[n,n] with B a constant (uint8×int8→int32, or fp32)."""
    rng = np.random.default_rng(0)
    if int8:
        weight = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
        node = helper.make_node("MatMulInteger", ["A", "B"], ["Y"])
        a_type, y_type = TensorProto.UINT8, TensorProto.INT32
    else:
        weight = rng.standard_normal((n, n)).astype(np.float32)
        node = helper.make_node("MatMul", ["A", "B"], ["Y"])
        a_type = y_type = TensorProto.FLOAT
    graph = helper.make_graph(
        [node],
        "gemm",
        [helper.make_tensor_value_info("A", a_type, [n, n])],
        [helper.make_tensor_value_info("Y", y_type, [n, n])],
        initializer=[numpy_helper.from_array(weight, "B")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def gemm_throughput(kind: str, threads: int, n: int = 1024) -> Metric:
    """Measured GEMM throughput for kind "int8" (ORT) or "bf16" (OpenVINO), in GOP/s.

    Ops per call = 2·n³. For bf16 the metric records the precision OpenVINO actually ran: on a CPU without
    native BF16 (avx512_bf16/AMX) it runs f32, and the figure is labelled as not a BF16 ceiling.
    """
    int8 = kind == "int8"
    backend = "ort" if int8 else "openvino"
    options = SessionOptions(intra_threads=threads, precision="fp32" if int8 else "bf16")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gemm.onnx"
        onnx.save(gemm_model(n, int8), path)
        session = open_session(path, backend, options)
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, size=(n, n), dtype=np.uint8) if int8 else rng.standard_normal((n, n))
    feeds = {"A": a if int8 else a.astype(np.float32)}
    timing = time_call(lambda: session.run(feeds), MICRO_POLICY)
    median_s = float(np.median(timing.samples_s))
    ran = "int8" if int8 else str(session.describe()["precision"])
    native = ran == kind
    if not native:
        ran += f" (this CPU has no native {kind}: not a {kind} ceiling)"
    return Metric(
        name=f"{kind}_gemm_{threads}t",
        value=2.0 * n**3 / median_s / 1e9,
        unit="GOP/s",
        method=f"{backend} {n}x{n}x{n} {'MatMulInteger u8s8' if int8 else 'MatMul'}, ran {ran}, "
        f"{threads} thread(s), median of {len(timing.samples_s)}",
        extra={"ran_precision": ran, "native": native, "runs": len(timing.samples_s)},
    )


def measurable_kinds() -> list[str]:
    """Which low-precision GEMMs can be measured here (bf16 needs the openvino extra)."""
    kinds = ["int8"]
    try:
        import openvino  # noqa: F401
    except ImportError:
        return kinds
    return [*kinds, "bf16"]
