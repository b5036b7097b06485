"""Admission against a time-to-first-token target: how long a new request would wait for its first token, from
the requests still ahead of it (queued, or admitted and not yet prefilled) and the time one prefill has recently
taken. Refusing at the door what would miss the target keeps the admitted requests' TTFT near the unloaded one
under overload, at the price of more refusals."""

from __future__ import annotations


class FirstTokenForecast:
    """The recent time one request's prefill takes, learned from first tokens as they come.

    A request's prefill is timed from when it could start — its admission, or the previous first token if that
    came later (it waited behind another prompt) — to its own first token; an exponential average smooths it.
    Prompts prefilled in the same engine step give gaps near zero, so the average follows the engine's rate of
    first tokens, whatever the prompt lengths."""

    def __init__(self, smoothing: float = 0.3) -> None:
        self.smoothing = smoothing
        self.prefill_s = 0.0
        """The averaged time of one prefill; 0 until a first token has been seen."""
        self._last_first = 0.0

    def first_token(self, admitted: float, now: float) -> None:
        """A request admitted at `admitted` got its first token at `now` (perf_counter seconds)."""
        sample = now - max(admitted, self._last_first)
        self.prefill_s = sample if not self.prefill_s else self.prefill_s + self.smoothing * (sample - self.prefill_s)
        self._last_first = now

    def wait_s(self, ahead: int) -> float:
        """Predicted seconds to a new request's first token with `ahead` requests before it still to prefill."""
        return (ahead + 1) * self.prefill_s
