"""The choice: the fastest candidate inside the budget whose speed-up the confidence interval confirms.

A candidate counts as faster than the original only when its time-per-item ratio CI lies wholly below 1 and
the ratio is beyond the practical threshold; the two fastest then meet head to head. Every candidate gets
the reason it was or was not chosen.
"""

from __future__ import annotations

from collections.abc import Callable

from turboinfer.optimize.plan import Outcome

HeadToHead = Callable[[Outcome, Outcome], tuple[float, tuple[float, float]]]
"""(first, second) → time-per-item ratio second/first and its 95% CI, measured interleaved."""


def ratio_text(ratio: float, ci: tuple[float, float]) -> str:
    """ "×0.62 (CI 0.60–0.64)"."""
    return f"×{ratio:.2f} (CI {ci[0]:.2f}–{ci[1]:.2f})"


def is_faster(outcome: Outcome, threshold: float) -> bool:
    """Faster than the original beyond the noise and beyond the practical threshold."""
    return (
        outcome.ratio is not None
        and outcome.ratio_ci is not None
        and outcome.ratio_ci[1] < 1
        and outcome.ratio < 1 - threshold
    )


def pending(outcome: Outcome) -> bool:
    """Measured, inside the budget, not yet decided."""
    return outcome.status == "not chosen" and not outcome.reason.startswith("not chosen")


def decide(outcomes: list[Outcome], threshold: float, head_to_head: HeadToHead) -> Outcome:
    """Mark every fitting candidate chosen or not chosen (with the reason) and return the chosen outcome."""
    original = next(o for o in outcomes if o.status == "original")
    fits = [o for o in outcomes if pending(o)]
    faster = sorted((o for o in fits if is_faster(o, threshold)), key=lambda o: o.ratio or 1.0)
    for o in fits:
        if o not in faster:
            assert o.ratio is not None and o.ratio_ci is not None
            why = "faster but inside the noise" if o.ratio < 1 else "not faster than the original"
            o.status, o.reason = "not chosen", f"not chosen: {why}, {ratio_text(o.ratio, o.ratio_ci)}"
    if not faster:
        original.status = "chosen"
        original.reason = (
            "chosen: no candidate inside the budget was faster beyond the noise"
            if fits
            else "chosen: no optimized candidate fits the budget"
        )
        return original
    best = faster[0]
    if len(faster) > 1:
        runner_up = faster[1]
        ratio, ci = head_to_head(best, runner_up)
        if ratio < 1:  # the runner-up won the head-to-head
            best, runner_up, ratio, ci = runner_up, best, 1 / ratio, (1 / ci[1], 1 / ci[0])
        verdict = "no difference head to head" if ci[0] <= 1 else "slower head to head"
        runner_up.status = "not chosen"
        runner_up.reason = f"not chosen: {verdict} with the chosen, {ratio_text(ratio, ci)}"
    for o in faster:
        if o is not best and not o.reason.startswith("not chosen"):
            o.status, o.reason = (
                "not chosen",
                f"not chosen: slower than the chosen, {ratio_text(o.ratio or 1, o.ratio_ci or (1, 1))}",
            )
    assert best.ratio is not None and best.ratio_ci is not None
    prefix = best.reason + "; " if best.reason else ""
    best.status = "chosen"
    best.reason = (
        f"{prefix}chosen: fastest inside the budget, {ratio_text(best.ratio, best.ratio_ci)} of the original's time"
    )
    return best
