import numpy as np
import pytest

from turboinfer.profile.scaling import ScalingPoint, Sweep, sweep, thread_sweep
from turboinfer.runtime.session import SessionOptions, open_session


def point(value: int, seconds: float, items: int = 1) -> ScalingPoint:
    return ScalingPoint(value, seconds, seconds, items / seconds, {})


def test_knee_and_gain_of_a_batch_sweep():
    # throughput 100, 180, 300, 320, 330 items/s
    result = Sweep("batch", tuple(point(b, b / t, b) for b, t in [(1, 100), (2, 180), (4, 300), (8, 320), (16, 330)]))
    assert result.gain() == pytest.approx(3.3)
    assert result.knee() == 4  # 300 ≥ 0.9 · 330


def test_quadratic_term_of_a_sequence_sweep():
    lengths = [32, 64, 128, 256, 512]
    exact = Sweep("sequence", tuple(point(n, 1e-3 + 2e-5 * n + 1e-7 * n * n) for n in lengths))
    top = 512
    expected = 1e-7 * top**2 / (1e-3 + 2e-5 * top + 1e-7 * top**2)
    assert exact.quadratic_share() == pytest.approx(expected, rel=1e-6)
    linear = Sweep("sequence", tuple(point(n, 1e-3 + 2e-5 * n) for n in lengths))
    assert linear.quadratic_share() == pytest.approx(0.0, abs=1e-6)


def test_sweep_stops_at_out_of_memory_and_says_where():
    def measure(batch: int) -> ScalingPoint:
        if batch >= 8:
            raise RuntimeError("Failed to allocate memory for requested buffer of size 12345")
        return point(batch, 0.01 * batch, batch)

    result = sweep("batch", [1, 2, 4, 8, 16], measure)
    assert [p.value for p in result.points] == [1, 2, 4]
    assert "stopped at batch 8" in result.stopped and "out of memory" in result.stopped


def test_other_errors_are_not_swallowed():
    with pytest.raises(ValueError):
        sweep("batch", [1], lambda b: (_ for _ in ()).throw(ValueError("bug")))


def test_thread_sweep_reports_speedup_and_efficiency(tiny_model):
    feeds = {"x": np.ones((64, 4), np.float32)}
    result = thread_sweep(lambda t: open_session(tiny_model, "ort", SessionOptions(intra_threads=t)), feeds, [1, 2])
    assert [p.value for p in result.points] == [1, 2]
    assert result.points[0].extra["speedup"] == pytest.approx(1.0)
    assert result.points[1].extra["efficiency"] == pytest.approx(result.points[1].extra["speedup"] / 2)
