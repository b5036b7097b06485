import numpy as np
import pytest

from turboinfer.measure.stats import (
    bootstrap_ci,
    median_ci,
    outlier_rate,
    paired_ratio_ci,
    summarize,
)


def test_summary_of_known_samples():
    samples = np.arange(1, 101, dtype=float)  # 1..100
    s = summarize(samples, first_call_s=101.0)
    assert s.n == 100
    assert s.median == 50.5
    assert s.mean == 50.5
    assert s.p90 == pytest.approx(90.1)
    assert s.p99 == pytest.approx(99.01)
    assert (s.min, s.max) == (1.0, 100.0)
    assert s.cv == pytest.approx(np.std(samples, ddof=1) / 50.5)
    assert s.first_call_penalty == pytest.approx(2.0)
    assert s.median_ci[0] < 50.5 < s.median_ci[1]


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    true_median = np.log(2)  # exponential(1)
    trials = 600
    covered = sum(
        low <= true_median <= high for low, high in (median_ci(rng.exponential(size=60)) for _ in range(trials))
    )
    assert 0.92 <= covered / trials <= 0.99


def test_bootstrap_ci_brackets_the_median_and_narrows_with_more_samples():
    rng = np.random.default_rng(2)
    small, large = rng.normal(10, 1, 30), rng.normal(10, 1, 3000)
    low_s, high_s = bootstrap_ci(small)
    low_l, high_l = bootstrap_ci(large)
    assert low_l < 10 < high_l
    assert (high_l - low_l) < (high_s - low_s) / 3


def test_paired_ratio_detects_a_real_difference():
    rng = np.random.default_rng(3)
    a = rng.lognormal(0, 0.1, 200)
    b = 2.0 * a * rng.lognormal(0, 0.05, 200)
    ratio = paired_ratio_ci(a, b)
    assert ratio.ratio == pytest.approx(2.0, rel=0.05)
    assert not ratio.contains(1.0)
    assert ratio.ci[0] > 1.8


def test_paired_ratio_of_identical_distributions_contains_one():
    rng = np.random.default_rng(4)
    drift = np.linspace(1, 1.5, 300)  # slow drift hits both arms of each pair
    a = drift * rng.lognormal(0, 0.1, 300)
    b = drift * rng.lognormal(0, 0.1, 300)
    assert paired_ratio_ci(a, b).contains(1.0)


def test_paired_ratio_rejects_unpaired_input():
    with pytest.raises(ValueError):
        paired_ratio_ci(np.ones(3), np.ones(4))


def test_outlier_rate_counts_far_out_points():
    samples = np.concatenate([np.full(95, 1.0) + np.linspace(0, 0.1, 95), np.full(5, 10.0)])
    assert outlier_rate(samples) == pytest.approx(0.05)
