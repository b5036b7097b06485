"""Single and A/B benches on real models; the verdict logic."""

import json

import pytest

from turboinfer.bench.ab import BenchConfig, bench_ab, bench_single, verdict
from turboinfer.measure.stats import PairedRatio
from turboinfer.models.variant import parse_variant


@pytest.fixture(scope="module")
def ort_variant(effnet, settings):
    return parse_variant("efficientnet-lite0", settings)


def test_single_bench_reports_cis_throughput_and_memory(ort_variant):
    result = bench_single(ort_variant, BenchConfig(runs=30, batch=2))
    s = result.summary
    assert s.n == 30 and s.median_ci[0] <= s.median <= s.median_ci[1]
    assert result.p99_ci[0] <= result.p99_ci[1]
    assert result.throughput == pytest.approx(2 / s.median)
    assert result.throughput_ci[0] <= result.throughput <= result.throughput_ci[1]
    assert result.peak_rss_mib > 0 and s.first_call_penalty is not None
    assert json.dumps(result.to_dict())


def test_a_a_reports_no_difference(ort_variant):
    result = bench_ab(ort_variant, ort_variant, BenchConfig(runs=200))
    # A 95% CI leaves out the true ratio (1) in about one A/A run in twenty by construction (CI saw B/A 1.01, CI
    # 1.00–1.06, on a loaded machine); what must hold every time is a ratio of about 1 whose CI reaches 1 ± 2%.
    low, high = result.ratio.ci
    assert abs(result.ratio.ratio - 1) < 0.03 and low <= 1.02 and high >= 0.98, result.verdict


def test_ort_against_pytorch_eager_is_a_significant_difference(ort_variant, settings):
    eager = parse_variant("efficientnet-lite0@torch", settings)
    result = bench_ab(ort_variant, eager, BenchConfig(runs=20))
    assert result.ratio.ci[0] > 1.5  # eager is slower, and the CI says so
    assert "slower" in result.verdict
    assert result.b.variant["backend"] == "torch"


@pytest.mark.parametrize(
    ("ratio", "ci", "expected"),
    [
        (1.003, (0.98, 1.02), "no difference"),
        (1.008, (1.004, 1.012), "no practical difference"),
        (0.5, (0.45, 0.55), "2.00× faster"),
        (1.3, (1.2, 1.4), "1.30× slower"),
    ],
)
def test_verdicts(ratio, ci, expected):
    assert expected in verdict(PairedRatio(ratio, ci), 0.02, "A", "B")
