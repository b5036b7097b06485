from turboinfer.hardware.peaks import gemm_fp32_gflops, memory_bandwidth_gbps
from turboinfer.measure.timer import TimingPolicy

QUICK = TimingPolicy(warmup=1, min_runs=3, max_runs=5, max_seconds=0.5)


def test_gemm_peak_is_measured_with_its_method():
    metric = gemm_fp32_gflops(1, n=256, policy=QUICK)
    assert metric.unit == "GFLOP/s"
    assert 0.1 < metric.value < 100_000
    assert "256x256x256" in metric.method
    assert metric.extra["best"] >= metric.value


def test_memory_bandwidth_is_measured_with_its_method():
    metric = memory_bandwidth_gbps(2, mib=16, policy=QUICK)
    assert metric.unit == "GB/s"
    assert 0.1 < metric.value < 10_000
    assert "2 thread(s)" in metric.method
