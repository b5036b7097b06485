import time

import numpy as np

from turboinfer.measure.timer import TimingPolicy, time_call


def busy(n: int = 20_000) -> float:
    return float(np.sum(np.arange(n, dtype=np.float64) ** 2))


def test_first_call_is_timed_apart_from_the_samples():
    calls = []

    def slow_first() -> None:
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.05)

    timing = time_call(slow_first, TimingPolicy(warmup=2, min_runs=5, max_runs=5))
    assert timing.first_call_s >= 0.05
    assert timing.samples_s.max() < 0.05
    assert len(calls) == 1 + 2 + 5


def test_run_cap():
    timing = time_call(busy, TimingPolicy(min_runs=5, max_runs=7, target_rel_ci=0.0))
    assert (len(timing.samples_s), timing.stop_reason) == (7, "run cap")


def test_converges_when_the_target_is_loose():
    timing = time_call(busy, TimingPolicy(min_runs=10, max_runs=1000, target_rel_ci=10.0))
    assert (len(timing.samples_s), timing.stop_reason) == (10, "converged")


def test_time_cap():
    timing = time_call(lambda: time.sleep(0.01), TimingPolicy(min_runs=1000, max_runs=5000, max_seconds=0.1))
    assert timing.stop_reason == "time cap"
    assert 5 <= len(timing.samples_s) <= 15


def test_interleave_rotates_the_order_and_pairs_rounds():
    from turboinfer.measure.timer import interleave

    calls: list[str] = []
    samples = interleave({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, rounds=3)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert [len(v) for v in samples.values()] == [3, 3]


def test_interleave_runs_at_least_min_rounds_then_stops_at_the_time_cap():
    from turboinfer.measure.timer import interleave

    samples = interleave({"x": lambda: time.sleep(0.01)}, rounds=1000, max_seconds=0.0, min_rounds=4)
    assert len(samples["x"]) == 4
