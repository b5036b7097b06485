"""Plots as embedded PNG data URIs (matplotlib's object API: no global state, no display, no network)."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def new_figure(**options: Any) -> Figure:
    """A matplotlib Figure (imported on first use: a command that draws nothing does not pay for matplotlib)."""
    from matplotlib.figure import Figure

    return Figure(**options)


def to_data_uri(figure: Figure) -> str:
    """A figure as a base64 PNG data URI."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def bars(labels: Sequence[str], values: Sequence[float], xlabel: str, title: str) -> str:
    """Horizontal bar chart."""
    figure = new_figure(figsize=(6.4, 0.45 * len(labels) + 1.2))
    axes = figure.subplots()
    axes.barh(list(labels)[::-1], list(values)[::-1], color="#3b6ea8")
    axes.set_xlabel(xlabel)
    axes.set_title(title)
    return to_data_uri(figure)


def stacked_bars(labels: Sequence[str], parts: dict[str, Sequence[float]], xlabel: str, title: str) -> str:
    """Horizontal bars split into named parts (e.g. time per stage), with a legend."""
    figure = new_figure(figsize=(6.4, 0.5 * len(labels) + 1.6))
    axes = figure.subplots()
    left = [0.0] * len(labels)
    for name, values in parts.items():
        axes.barh(list(labels)[::-1], list(values)[::-1], left=left[::-1], label=name)
        left = [a + b for a, b in zip(left, values, strict=True)]
    axes.set_xlabel(xlabel)
    axes.set_title(title)
    axes.legend(loc="lower right", fontsize="small")
    return to_data_uri(figure)


def histogram(samples_ms: Sequence[float], title: str) -> str:
    """Latency histogram with the median and p99 marked."""
    import numpy as np

    figure = new_figure(figsize=(6.4, 3.2))
    axes = figure.subplots()
    axes.hist(samples_ms, bins=40, color="#3b6ea8")
    for q, style in ((50, "-"), (99, "--")):
        axes.axvline(float(np.percentile(samples_ms, q)), color="#c0392b", linestyle=style, label=f"p{q}")
    axes.set_xlabel("latency, ms")
    axes.set_ylabel("runs")
    axes.set_title(title)
    axes.legend()
    return to_data_uri(figure)


def curve(xs: Sequence[float], ys: Sequence[float], xlabel: str, ylabel: str, title: str, log_x: bool = False) -> str:
    """One line with markers."""
    figure = new_figure(figsize=(4.8, 3.2))
    axes = figure.subplots()
    axes.plot(xs, ys, marker="o", color="#3b6ea8")
    if log_x:
        axes.set_xscale("log", base=2)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    return to_data_uri(figure)


def roofline(points: Sequence[tuple[float, float, str]], peak_gflops: float, bandwidth_gbps: float, title: str) -> str:
    """Log-log roofline: the memory roof (bandwidth × intensity) and the compute roof, with (intensity, GFLOP/s)
    points; labels starting "model" are drawn larger."""
    import numpy as np

    figure = new_figure(figsize=(6.4, 4.2))
    axes = figure.subplots()
    intensities = [p[0] for p in points] or [1.0]
    x = np.logspace(np.log10(min(min(intensities), 0.05)), np.log10(max(max(intensities), 100)), 200)
    axes.plot(x, np.minimum(peak_gflops, bandwidth_gbps * x), color="black", label="measured roofs")
    for intensity, gflops, label in points:
        big = label.startswith("model")
        axes.scatter([intensity], [gflops], s=80 if big else 14, color="#c0392b" if big else "#3b6ea8", zorder=3)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("arithmetic intensity, FLOP/byte")
    axes.set_ylabel("attained GFLOP/s")
    axes.set_title(title)
    axes.legend()
    axes.grid(alpha=0.3, which="both")
    return to_data_uri(figure)


def pareto(points: Sequence[tuple[float, float, str, bool]], least: float, xlabel: str, title: str) -> str:
    """Speed-up (×, higher is faster) against fidelity, one point per candidate: filled when inside the budget,
    hollow when not; the budget's least fidelity as a dashed line; the chosen point labelled."""
    figure = new_figure(figsize=(6.8, 4.4))
    axes = figure.subplots()
    for speedup, fid, label, fits in points:
        face = "#3b6ea8" if fits else "none"
        axes.scatter([fid], [speedup], s=46, facecolors=face, edgecolors="#3b6ea8", zorder=3)
        if label:
            axes.annotate(label, (fid, speedup), textcoords="offset points", xytext=(6, 4), fontsize=8)
    axes.axvline(least, color="#c0392b", linestyle="--", label="budget")
    axes.axhline(1.0, color="grey", linewidth=0.8)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("speed-up over the original, ×")
    axes.set_title(title)
    axes.legend()
    axes.grid(alpha=0.3)
    return to_data_uri(figure)
