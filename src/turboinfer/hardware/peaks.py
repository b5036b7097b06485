"""Measured ceilings of this machine: FP32 GEMM throughput and memory bandwidth (never looked up)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from turboinfer.core.types import Metric
from turboinfer.measure.timer import TimingPolicy, time_call

PEAK_POLICY = TimingPolicy(warmup=2, min_runs=5, max_runs=50, max_seconds=2.0, target_rel_ci=0.02)


def gemm_fp32_gflops(threads: int, n: int = 1024, policy: TimingPolicy = PEAK_POLICY) -> Metric:
    """FP32 GEMM throughput of numpy's BLAS on n×n matrices with `threads` BLAS threads.

    FLOPs per call = 2·n³ (one multiply and one add per inner-product term).
    """
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    with threadpool_limits(limits=threads, user_api="blas"):
        timing = time_call(lambda: np.matmul(a, b, out=out), policy)
    median_s = float(np.median(timing.samples_s))
    flops = 2.0 * n**3
    return Metric(
        name=f"fp32_gemm_{threads}t",
        value=flops / median_s / 1e9,
        unit="GFLOP/s",
        method=f"numpy matmul {n}x{n}x{n} fp32, {threads} BLAS thread(s), median of {len(timing.samples_s)}",
        extra={"best": flops / float(timing.samples_s.min()) / 1e9, "runs": len(timing.samples_s)},
    )


def memory_bandwidth_gbps(threads: int, mib: int = 128, policy: TimingPolicy = PEAK_POLICY) -> Metric:
    """Copy bandwidth between two arrays of `mib` MiB (far beyond the caches), split over `threads`.

    Bytes counted per copy = 2 × array size (one read, one write), the STREAM "copy" convention;
    numpy releases the GIL in copies, so the threads run in parallel.
    """
    count = mib * 2**20 // 4
    src = np.ones(count, dtype=np.float32)
    dst = np.zeros_like(src)
    chunks = np.array_split(np.arange(count), threads)
    bounds = [(int(c[0]), int(c[-1]) + 1) for c in chunks]

    def copy_part(bound: tuple[int, int]) -> None:
        np.copyto(dst[bound[0] : bound[1]], src[bound[0] : bound[1]])

    with ThreadPoolExecutor(max_workers=threads) as pool:
        timing = time_call(lambda: list(pool.map(copy_part, bounds)), policy)
    median_s = float(np.median(timing.samples_s))
    moved = 2.0 * src.nbytes
    return Metric(
        name=f"mem_copy_{threads}t",
        value=moved / median_s / 1e9,
        unit="GB/s",
        method=f"numpy copyto {mib} MiB -> {mib} MiB, {threads} thread(s), 2 bytes moved per byte copied, "
        f"median of {len(timing.samples_s)}",
        extra={"best": moved / float(timing.samples_s.min()) / 1e9, "runs": len(timing.samples_s)},
    )
