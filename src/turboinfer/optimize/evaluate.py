"""Measuring a candidate against the original: fidelity on the evaluation inputs, and interleaved timing.

Timing starts from decoded pixels (image models) or tokens (text), so a candidate that folds normalization
into the graph is credited with the data-path work it removes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from turboinfer.core.card import ModelCard
from turboinfer.measure.fidelity import DECISIVE_P, unit_rows
from turboinfer.measure.stats import PairedRatio, paired_ratio_ci
from turboinfer.measure.timer import interleave
from turboinfer.optimize.accuracy import Fidelity, UserMetric, fidelity, judged
from turboinfer.optimize.data import InputSets, Items, count, feeds
from turboinfer.runtime.session import Session

EVAL_BATCH = 16
"""Inputs per call when computing fidelity."""


def fixed_batch(card: ModelCard) -> int | None:
    """The batch size a model's graph fixes, or None when the batch dim is symbolic."""
    first = card.inputs[0].shape[0] if card.inputs[0].shape else None
    return first if isinstance(first, int) else None


def batches(card: ModelCard, items: Items, size: int) -> Iterator[dict[str, np.ndarray]]:
    """Feeds over all items in chunks of size (the model's fixed batch wins)."""
    fixed = fixed_batch(card)
    step = fixed or size
    total = count(items) - count(items) % step if fixed else count(items)
    for start in range(0, total, step):
        yield feeds(card, items, start, start + step)


def run_all(session: Session, card: ModelCard, items: Items) -> dict[str, np.ndarray]:
    """Outputs of session on every item, concatenated per output name."""
    parts = [session.run(f) for f in batches(card, items, EVAL_BATCH)]
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


@dataclass(frozen=True)
class Timed:
    """Interleaved timing of a candidate against the original."""

    median_s: float
    """Median latency of one candidate call, seconds."""
    p99_s: float
    """99th percentile of the same calls, seconds."""
    ratio: PairedRatio
    """Time per item, candidate over original."""


class Reference:
    """The original model's outputs on the real inputs, and the yardsticks built from them."""

    def __init__(
        self,
        card: ModelCard,
        session: Session,
        sets: InputSets,
        user_metric: UserMetric | None = None,
        output: str | None = None,
        decisive: float = DECISIVE_P,
    ) -> None:
        self.card, self.session, self.sets, self.decisive = card, session, sets, decisive
        self.task, self.output = judged(card, output)
        self.user_metric = user_metric
        self.evaluation = run_all(session, card, sets.evaluation)
        self.calibration = run_all(session, card, sets.calibration)
        self._calibration_units = unit_rows(self.calibration[self.output])

    def fidelity(self, session: Session, card: ModelCard, tuning: bool = False) -> Fidelity:
        """Candidate fidelity to the original on the evaluation inputs (or, tuning, the calibration inputs)."""
        if tuning:
            items, expected, user, labels = self.sets.calibration, self.calibration, None, None
        else:
            items, expected, user, labels = self.sets.evaluation, self.evaluation, self.user_metric, self.sets.labels
        outputs = run_all(session, card, items)
        n = len(outputs[self.output])  # a fixed-batch model leaves the last partial batch out
        reference = {k: v[:n] for k, v in expected.items()}
        return fidelity(self.task, reference, outputs, self.output, user, labels, self.decisive)

    def item_score(self, index: int, outputs: dict[str, np.ndarray]) -> float:
        """Per-item fidelity on calibration item index: same top-1 (classify, 0/1) or cosine (embed)."""
        reference = self.calibration[self.output][index]
        candidate = np.asarray(outputs[self.output])[0]
        if self.task == "classify":
            return float(reference.argmax() == candidate.argmax())
        return float(self._calibration_units[index] @ unit_rows(candidate[None])[0])

    def timing_feeds(self, card: ModelCard, batch: int) -> dict[str, np.ndarray]:
        """A batch of real evaluation inputs as card wants them."""
        return feeds(card, self.sets.evaluation, 0, batch)

    def original(self, batch: int) -> Runner:
        """The original model as a timing contestant."""
        return Runner(self.session, self.card, batch)

    def compare(self, first: Runner, second: Runner, seconds: float) -> Timed:
        """Interleave two contestants (each preparing its own inputs from the same pixels or tokens) after a
        short warm-up; the ratio is second's time per item over first's."""
        calls: dict[str, Callable[[], object]] = {
            "first": lambda: first.session.run(self.timing_feeds(first.card, first.batch)),
            "second": lambda: second.session.run(self.timing_feeds(second.card, second.batch)),
        }
        for _ in range(3):
            for call in calls.values():
                call()
        samples = interleave(calls, rounds=100_000, max_seconds=seconds, min_rounds=20)
        ratio = paired_ratio_ci(samples["first"] / first.batch, samples["second"] / second.batch)
        second_s = samples["second"]
        return Timed(float(np.median(second_s)), float(np.percentile(second_s, 99)), ratio)


@dataclass(frozen=True)
class Runner:
    """An open session with its card and the batch it is timed at."""

    session: Session
    card: ModelCard
    batch: int
