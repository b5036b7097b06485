from turboinfer.runtime.microbench import gemm_throughput, measurable_kinds


def test_int8_and_bf16_gemm_are_measured_and_labelled():
    assert measurable_kinds() == ["int8", "bf16"]
    int8 = gemm_throughput("int8", 1, n=128)
    assert int8.value > 0 and int8.unit == "GOP/s"
    assert "MatMulInteger" in int8.method
    bf16 = gemm_throughput("bf16", 1, n=128)
    assert bf16.value > 0
    assert "native" in bf16.extra
