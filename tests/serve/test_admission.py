"""The first-token forecast behind --ttft-target-ms: prefills timed from when each could start, averaged."""

from __future__ import annotations

import pytest

from turboinfer.serve.openai.admission import FirstTokenForecast


def test_a_prefill_is_timed_from_admission_or_from_the_first_token_before_it():
    forecast = FirstTokenForecast(smoothing=0.5)
    assert forecast.wait_s(3) == 0.0  # nothing learned: no refusal on a guess
    forecast.first_token(admitted=10.0, now=10.2)  # alone: its own 200 ms
    assert forecast.prefill_s == pytest.approx(0.2)
    forecast.first_token(admitted=10.1, now=10.3)  # waited behind the first: 100 ms of its own
    assert forecast.prefill_s == pytest.approx(0.15)
    forecast.first_token(admitted=10.1, now=10.3)  # the same engine step: no time of its own
    assert forecast.prefill_s == pytest.approx(0.075)
    assert forecast.wait_s(ahead=3) == pytest.approx(0.3)
