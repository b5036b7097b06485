import json
import time

import pytest

from turboinfer.core.errors import DataUnavailable, InvalidInput
from turboinfer.profile.pipeline import profile_pipeline


def fail_on_negative(x: int) -> int:
    if x < 0:
        raise InvalidInput("negative input")
    return x


def test_stage_shares_follow_where_the_time_goes():
    stages = [
        ("check", fail_on_negative),
        ("slow", lambda x: time.sleep(0.004) or x),
        ("fast", lambda x: x + 1),
    ]
    result = profile_pipeline(stages, [1, 2, -1, 3], min_requests=20, max_seconds=0.2)
    assert [s.name for s in result.stages] == ["check", "slow", "fast"]
    assert result.inputs_used == 3
    assert result.inputs_skipped == ("-1: negative input",)
    assert result.requests >= 20
    shares = {s.name: s.share for s in result.stages}
    assert shares["slow"] > 0.9
    assert sum(shares.values()) == pytest.approx(1.0)
    assert result.stages[1].summary.median >= 0.004
    json.dumps(result.to_dict())


def test_no_usable_input_is_a_clear_error():
    with pytest.raises(DataUnavailable, match="none of the 2 inputs"):
        profile_pipeline([("check", fail_on_negative)], [-1, -2])
