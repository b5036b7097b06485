"""How a model's traffic is shared with a second variant: the configuration both front-ends' splits read (V2:
serve/v2/traffic.py; OpenAI: serve/openai/split.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SplitConfig:
    """How a model's traffic is shared with a second variant."""

    mode: Literal["canary", "shadow"]
    share: float = 0.1
    """Canary only: the fraction of requests answered by the second variant."""
