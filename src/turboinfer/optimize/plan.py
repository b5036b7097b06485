"""The optimizer's plan (what to search, under which budget) and its outcomes, all JSON round-trippable.

`turboinfer optimize --dry-run` prints a Plan; `turboinfer.optimize.run.run(plan, settings)` executes it; a
YAML or JSON file with the same fields is a plan too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from turboinfer.core.errors import InvalidInput
from turboinfer.measure.fidelity import DECISIVE_P
from turboinfer.runtime.session import SessionOptions

Objective = Literal["latency", "throughput"]
Strategy = Literal["staged", "exhaustive", "random"]
Status = Literal["chosen", "rejected", "not chosen", "failed", "skipped", "original"]


@dataclass(frozen=True)
class Step:
    """One pass and its config, as JSON values."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        """e.g. "ort-int8-static(calibration=entropy)"."""
        if not self.config:
            return self.name
        shown = ",".join(f"{k}={v}" for k, v in self.config.items() if k != "exclude_nodes")
        excluded = self.config.get("exclude_nodes")
        shown += f"{',' if shown else ''}{len(excluded)} nodes in float" if excluded else ""
        return f"{self.name}({shown})"


@dataclass(frozen=True)
class Candidate:
    """A point of the search space: passes applied to a model, then a backend with its options."""

    steps: tuple[Step, ...] = ()
    backend: str = "ort"
    options: SessionOptions = field(default_factory=SessionOptions)
    model: str = ""
    """Another model to swap in (a lighter candidate); empty = the plan's model."""
    batch: int = 0
    """Batch size for the throughput objective; 0 = the plan's batch."""

    @property
    def label(self) -> str:
        """Readable and unique within a plan, e.g. "mobilenetv2: fold-normalize > nncf-int8 @openvino bf16 1t"."""
        parts = [" > ".join(s.label() for s in self.steps) or "original"]
        precision = f" {self.options.precision}" if self.options.precision != "fp32" else ""
        threads = f" {self.options.intra_threads}t" if self.options.intra_threads else ""
        parallel = " parallel" if self.options.parallel else ""
        batch = f" batch {self.batch}" if self.batch else ""
        prefix = f"{self.model}: " if self.model else ""
        return f"{prefix}{' > '.join(parts)} @{self.backend}{precision}{threads}{parallel}{batch}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"steps": [asdict(s) for s in self.steps], "backend": self.backend,
                "options": self.options.to_dict(), "model": self.model, "batch": self.batch}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        """Inverse of to_dict; InvalidInput names a bad field."""
        try:
            return cls(
                steps=tuple(Step(s["name"], dict(s.get("config", {}))) for s in data.get("steps", [])),
                backend=str(data.get("backend", "ort")),
                options=SessionOptions(**data.get("options", {})),
                model=str(data.get("model", "")),
                batch=int(data.get("batch", 0)),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise InvalidInput(f"bad candidate in plan: {err}") from None


@dataclass(frozen=True)
class Plan:
    """Everything one optimization run needs to know."""

    model: str
    inputs: str | None = None
    """Calibration and evaluation inputs in any form of models.datasets (photos, an ImageFolder, a text file,
    tensors); default: every packaged photo, real sentences, or seeded random tensors."""
    label_map: str | None = None
    """An ImageFolder's class names → indices (lines "name index"); default: its labels.txt, integer folder
    names or ImageNet class names."""
    tokenizer: str | None = None
    """A tokenizer.json for a text model whose card has none."""
    budget: float = 0.01
    """Allowed fidelity drop: with labels, accuracy ≥ (1 − budget) × the original's; else (decisive) top-1
    agreement / mean cosine ≥ 1 − budget, min cosine ≥ 1 − 2·budget."""
    budget_points: bool = False
    """With labels: the budget is a drop in accuracy points (--budget 1pt), not relative to the original's."""
    decisive: float = DECISIVE_P
    """An input is decisive when the original's top-1 probability is at least this (optimize.accuracy)."""
    objective: Objective = "latency"
    batch: int = 1
    p99_target_ms: float | None = None
    """Latency bound per call: a candidate whose p99 exceeds it is rejected, so with the throughput objective
    the search finds the most items/s under a p99 target."""
    sequence: int = 128
    """Token length of text inputs."""
    swap: tuple[str, ...] = ()
    """Lighter models to try instead (same task), under the same budget."""
    strategy: Strategy = "staged"
    trials: int = 12
    """Candidates the random strategy draws."""
    seed: int = 0
    n_calibration: int = 128
    calibration_batch: int = 16
    """Calibration inputs held in memory per step at most (lower it when calibration runs out of memory)."""
    n_evaluation: int = 500
    seconds_per_candidate: float = 4.0
    """Interleaved timing of each candidate against the original, wall-clock seconds."""
    threshold: float = 0.02
    """Ratio CIs inside 1 ± threshold are "no practical difference"."""
    culprits: bool = True
    """Run the culprit finder on the best ORT INT8 candidate that breaks the budget."""
    output: str | None = None
    """The output the budget judges (default: the first); a classifier's "features" is judged as an embedding
    (mean/min cosine, 10-NN overlap): the budget an image-search application needs."""
    metric: str | None = None
    """A user metric "module:function" (reference outputs, candidate outputs) → float."""
    metric_min: float | None = None
    quick: bool = False
    """A short run for demos and tests: few inputs, short timing, no slow candidates, no culprit search."""
    space: tuple[Candidate, ...] = ()
    """Explicit candidates; empty = the default space for this model and machine."""
    out_dir: str = "out/optimize"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["swap"] = list(self.swap)
        data["space"] = [c.to_dict() for c in self.space]
        return data

    def to_json(self) -> str:
        """Indented JSON text."""
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        """Inverse of to_dict; InvalidInput names unknown or bad fields."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInput(f"unknown plan fields: {', '.join(unknown)}")
        if "model" not in data:
            raise InvalidInput("a plan needs a model")
        values = dict(data)
        values["swap"] = tuple(values.get("swap", ()))
        values["space"] = tuple(Candidate.from_dict(c) for c in values.get("space", ()))
        try:
            plan = cls(**values)
        except TypeError as err:
            raise InvalidInput(f"bad plan: {err}") from None
        return plan.checked()

    def checked(self) -> Plan:
        """self, or InvalidInput for out-of-range values."""
        if self.objective not in ("latency", "throughput"):
            raise InvalidInput(f"objective is latency or throughput, got {self.objective!r}")
        if self.strategy not in ("staged", "exhaustive", "random"):
            raise InvalidInput(f"strategy is staged, exhaustive or random, got {self.strategy!r}")
        if min(self.batch, self.n_calibration, self.calibration_batch, self.trials) < 1 or self.n_evaluation < 10:
            raise InvalidInput("batch, trials, n_calibration and calibration_batch must be ≥ 1, n_evaluation ≥ 10")
        if self.p99_target_ms is not None and self.p99_target_ms <= 0:
            raise InvalidInput(f"p99_target_ms must be positive, got {self.p99_target_ms}")
        if not 0 <= self.budget < 1:
            raise InvalidInput(f"budget is an allowed drop between 0 and 1, got {self.budget}")
        if not 0 < self.decisive < 1:
            raise InvalidInput(f"decisive is a top-1 probability between 0 and 1, got {self.decisive}")
        return self


def quick_plan(plan: Plan) -> Plan:
    """The plan cut down to a short run (about a minute for EfficientNet-Lite0 on 2 cores)."""
    return replace(plan, quick=True, n_evaluation=100, n_calibration=32, seconds_per_candidate=1.0, culprits=False)


def load_plan(path: Path, overrides: dict[str, Any] | None = None) -> Plan:
    """A plan from a YAML or JSON file, with command-line overrides applied on top."""
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise InvalidInput(f"plan file not found: {path}") from None
    except yaml.YAMLError as err:
        raise InvalidInput(f"plan file {path} is not valid YAML/JSON: {err}") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"plan file {path} must hold a mapping of plan fields")
    return Plan.from_dict({**data, **(overrides or {})})


@dataclass
class Outcome:
    """What happened to one candidate: fidelity, latency against the original, and the decision with its reason."""

    candidate: Candidate
    status: Status = "skipped"
    reason: str = ""
    fidelity: dict[str, float] = field(default_factory=dict)
    median_s: float | None = None
    """Median latency of one call at the candidate's batch, seconds."""
    p99_s: float | None = None
    ratio: float | None = None
    """Time per item, candidate over original (< 1 = faster), from interleaved runs."""
    ratio_ci: tuple[float, float] | None = None
    size_bytes: int | None = None
    precision: str = ""
    """What the backend reports it actually ran."""
    card_path: str = ""
    build_s: float = 0.0
    judged: str = ""
    """The fidelity key that judged (accuracy, decisive_agreement, top1_agreement, cosine_mean)."""
    judged_by: str = ""
    """The metric that judged the fidelity, with its threshold, in words."""
    warning: str = ""
    """Why that judgement is weak (too few labels or decisive inputs), if it is."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data = asdict(self)
        data["candidate"] = self.candidate.to_dict()
        data["label"] = self.candidate.label
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        """Inverse of to_dict (an outcome read back from a decision log)."""
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        values["candidate"] = Candidate.from_dict(data["candidate"])
        if values.get("ratio_ci") is not None:
            values["ratio_ci"] = tuple(values["ratio_ci"])
        return cls(**values)

    def with_status(self, status: Status, reason: str) -> Outcome:
        """A copy with a new decision."""
        return replace(self, status=status, reason=reason)
