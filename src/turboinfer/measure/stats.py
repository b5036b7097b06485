"""Statistics over raw latency samples: percentiles, jitter, confidence intervals, paired ratios."""

from __future__ import annotations

from dataclasses import dataclass
from math import sqrt
from typing import Any

import numpy as np

Z95 = 1.959963984540054
"""Two-sided 95% normal quantile."""


def median_ci(samples: np.ndarray, z: float = Z95) -> tuple[float, float]:
    """Distribution-free CI of the median from order statistics (normal approximation to the binomial).

    Ranks n/2 ± z·√n/2 (Conover, Practical Nonparametric Statistics, §3.2); exact enough for n ≥ 10.
    """
    x = np.sort(np.asarray(samples, dtype=float))
    n = len(x)
    if n < 3:
        return (float(x.min()), float(x.max())) if n else (float("nan"), float("nan"))
    half = z * sqrt(n) / 2
    low = max(0, int(np.floor(n / 2 - half)))
    high = min(n - 1, int(np.ceil(n / 2 + half)))
    return float(x[low]), float(x[high])


def bootstrap_ci(
    samples: np.ndarray, statistic: str | float = "median", n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap 95% CI of the median, the "mean", or a percentile (a number, e.g. 99) of samples."""
    x = np.asarray(samples, dtype=float)
    rng = np.random.default_rng(seed)
    resampled = x[rng.integers(0, len(x), size=(n_boot, len(x)))]
    if statistic == "median":
        stats = np.median(resampled, axis=1)
    elif statistic == "mean":
        stats = resampled.mean(axis=1)
    else:
        stats = np.percentile(resampled, float(statistic), axis=1)
    return float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5))


@dataclass(frozen=True)
class PairedRatio:
    """Ratio of medians B/A from paired samples, with its bootstrap 95% CI."""

    ratio: float
    ci: tuple[float, float]

    def contains(self, value: float) -> bool:
        """True when value lies inside the CI (e.g. 1.0: no detectable difference)."""
        return self.ci[0] <= value <= self.ci[1]


def paired_ratio_ci(a: np.ndarray, b: np.ndarray, n_boot: int = 2000, seed: int = 0) -> PairedRatio:
    """Ratio median(b)/median(a) with a paired bootstrap CI (pairs resampled together).

    a[i] and b[i] must come from the same interleaved round so drift affects both.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError("paired samples need two 1-D arrays of equal length >= 2")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n_boot, len(a)))
    ratios = np.median(b[idx], axis=1) / np.median(a[idx], axis=1)
    point = float(np.median(b) / np.median(a))
    return PairedRatio(point, (float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5))))


def unpaired_ratio_ci(a: np.ndarray, b: np.ndarray, n_boot: int = 2000, seed: int = 0) -> PairedRatio:
    """Ratio median(b)/median(a) for samples taken at different times, each resampled on its own."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        raise ValueError("need at least 2 samples on each side")
    rng = np.random.default_rng(seed)
    med_a = np.median(a[rng.integers(0, len(a), size=(n_boot, len(a)))], axis=1)
    med_b = np.median(b[rng.integers(0, len(b), size=(n_boot, len(b)))], axis=1)
    ratios = med_b / med_a
    point = float(np.median(b) / np.median(a))
    return PairedRatio(point, (float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5))))


def outlier_rate(samples: np.ndarray) -> float:
    """Share of samples beyond Tukey's far-out fence Q3 + 3·IQR."""
    x = np.asarray(samples, dtype=float)
    q1, q3 = np.percentile(x, [25, 75])
    return float(np.mean(x > q3 + 3 * (q3 - q1)))


@dataclass(frozen=True)
class Summary:
    """Distribution of one set of latency samples, in seconds."""

    n: int
    median: float
    median_ci: tuple[float, float]
    mean: float
    p90: float
    p99: float
    min: float
    max: float
    cv: float
    """Coefficient of variation, std/mean: the jitter figure."""
    outlier_rate: float
    first_call_penalty: float | None
    """First call divided by the median (1.0 = no penalty), when the first call was timed."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (seconds)."""
        data = dict(self.__dict__)
        data["median_ci"] = list(self.median_ci)
        return data


def summarize(samples: np.ndarray, first_call_s: float | None = None) -> Summary:
    """Median (with CI), mean, p90, p99, extremes, CV, outlier rate and first-call penalty."""
    x = np.asarray(samples, dtype=float)
    if len(x) == 0:
        raise ValueError("no samples to summarize")
    median = float(np.median(x))
    mean = float(x.mean())
    return Summary(
        n=len(x),
        median=median,
        median_ci=median_ci(x),
        mean=mean,
        p90=float(np.percentile(x, 90)),
        p99=float(np.percentile(x, 99)),
        min=float(x.min()),
        max=float(x.max()),
        cv=float(x.std(ddof=1) / mean) if len(x) > 1 and mean > 0 else 0.0,
        outlier_rate=outlier_rate(x),
        first_call_penalty=first_call_s / median if first_call_s is not None and median > 0 else None,
    )
