"""`turboinfer profile`: stages, operators, roofline, latency distribution and scaling on real inputs, then a
ranked diagnosis. One function, profile_model; the CLI only parses and renders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import DataUnavailable, InvalidInput
from turboinfer.core.settings import Settings
from turboinfer.core.types import ImagePreprocess, TextPreprocess
from turboinfer.hardware.capsule import environment_capsule
from turboinfer.hardware.peaks import gemm_fp32_gflops, memory_bandwidth_gbps
from turboinfer.hardware.probe import probe_cpu
from turboinfer.measure.sentences import real_sentences
from turboinfer.measure.stats import Summary, summarize
from turboinfer.measure.timer import TimingPolicy, time_call
from turboinfer.models.photos import IMAGE_SUFFIXES, all_photos, files_with_suffix
from turboinfer.models.variant import sample_feeds
from turboinfer.profile.diagnose import Evidence, Recommendation, diagnose
from turboinfer.profile.operators import OperatorProfile, operator_profile
from turboinfer.profile.pipeline import PipelineProfile, image_stages, profile_pipeline, text_stages
from turboinfer.profile.roofline import Ceilings, RooflinePoint, graph_costs, place
from turboinfer.profile.scaling import Sweep, batch_sweep, sequence_sweep, thread_sweep
from turboinfer.runtime.microbench import gemm_throughput
from turboinfer.runtime.profiling import node_runs
from turboinfer.runtime.session import SessionOptions, open_session
from turboinfer.runtime.shapes import observed_shapes

PipelineKind = Literal["auto", "image", "text", "none"]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class ProfileRequest:
    """What to profile and how long to spend on it."""

    backend: str = "ort"
    options: SessionOptions = field(default_factory=SessionOptions)
    pipeline: PipelineKind = "auto"
    inputs: Path | None = None
    """Folder of input photos; default: every real photo shipped by installed packages."""
    seconds: float = 3.0
    """Time cap for the latency distribution and the pipeline, seconds each."""
    batches: tuple[int, ...] = (1, 2, 4, 8, 16)
    threads: tuple[int, ...] = ()
    """Thread counts to sweep; empty = 1..usable CPUs."""
    sequences: tuple[int, ...] = (32, 64, 128, 256)
    operator_runs: int = 20

    @classmethod
    def quick(cls, **overrides: Any) -> ProfileRequest:
        """Short caps and small sweeps (tests, CI, `--quick`): the same report, less precise."""
        preset: dict[str, Any] = dict(seconds=0.5, batches=(1, 4), threads=(1,), sequences=(16, 64), operator_runs=3)
        return cls(**{**preset, **overrides})


@dataclass(frozen=True)
class ProfileReport:
    """Result of `turboinfer profile`, JSON-ready via to_dict (seconds, FLOPs and bytes throughout)."""

    model: str
    backend: dict[str, Any]
    model_latency: Summary
    model_stop_reason: str
    model_samples_s: tuple[float, ...]
    pipeline: PipelineProfile | None
    operators: OperatorProfile | None
    whole_model: RooflinePoint | None
    ceilings: Ceilings
    sweeps: tuple[Sweep, ...]
    recommendations: tuple[Recommendation, ...]
    environment: dict[str, Any]

    def new_shape_penalty(self) -> float | None:
        """First call at the first new batch size (after warm-up at batch 1), divided by its median."""
        batch = self.sweep("batch")
        later = [p for p in batch.points if p.value != 1] if batch else []
        return later[0].extra.get("first_call_penalty") if later else None

    def sweep(self, parameter: str) -> Sweep | None:
        """The sweep over one parameter, if it ran."""
        return next((s for s in self.sweeps if s.parameter == parameter), None)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (schema in docs/cli.md)."""
        return {
            "model": self.model,
            "backend": self.backend,
            "model_latency": {
                **self.model_latency.to_dict(),
                "stop_reason": self.model_stop_reason,
                "new_shape_penalty": self.new_shape_penalty(),
            },
            "model_samples_s": list(self.model_samples_s),
            "pipeline": self.pipeline.to_dict() if self.pipeline else None,
            "operators": {
                **self.operators.to_dict(),
                "node_sum_over_latency": self.operators.total_seconds / self.model_latency.median,
            }
            if self.operators
            else None,
            "roofline": {
                "peak_gflops": self.ceilings.peak_gflops,
                "bandwidth_gbps": self.ceilings.bandwidth_gbps,
                "int8_gops": self.ceilings.int8_gops,
                "ridge_flop_per_byte": self.ceilings.ridge,
                "whole_model": self.whole_model.to_dict() if self.whole_model else None,
                "bytes_method": "per node, every tensor read and written once (an upper bound on DRAM traffic)",
            },
            "sweeps": [s.to_dict() for s in self.sweeps],
            "recommendations": [r.to_dict() for r in self.recommendations],
            "environment": self.environment,
        }


def photos_in(folder: Path) -> list[Path]:
    """Image files in a folder (by suffix), sorted; corrupt ones are caught later and counted."""
    if not folder.is_dir():
        raise InvalidInput(f"inputs folder not found: {folder}")
    files = files_with_suffix(folder, IMAGE_SUFFIXES)
    if not files:
        raise DataUnavailable(f"no image files ({', '.join(sorted(IMAGE_SUFFIXES))}) in {folder}")
    return files


def pipeline_kind(card: ModelCard, requested: PipelineKind) -> PipelineKind:
    """The pipeline to run: the card's preprocessing kind when "auto", else the request (checked)."""
    if requested == "none":
        return "none"
    kind = card.preprocess.kind if card.preprocess else "none"
    if requested != "auto" and requested != kind:
        raise InvalidInput(f"{card.name} takes {kind} input, not {requested}")
    if requested == "auto" and isinstance(card.preprocess, TextPreprocess) and not card.preprocess.tokenizer:
        return "none"  # token ids with no tokenizer: the model alone (--pipeline text says what to give)
    return kind


def measure_ceilings(threads: int) -> Ceilings:
    """FP32 and INT8 GEMM peaks and copy bandwidth at the thread count the model runs with (a quick probe)."""
    return Ceilings(
        gemm_fp32_gflops(threads).value, memory_bandwidth_gbps(threads).value, gemm_throughput("int8", threads).value
    )


def run_pipeline(card: ModelCard, request: ProfileRequest, settings: Settings, session: Any) -> PipelineProfile | None:
    """Stage timing through the real pipeline, or None when the model has none (or it was turned off)."""
    kind = pipeline_kind(card, request.pipeline)
    if kind == "image" and isinstance(card.preprocess, ImagePreprocess):
        photos = photos_in(request.inputs) if request.inputs else all_photos(settings)
        return profile_pipeline(image_stages(card, session), photos, max_seconds=request.seconds)
    if kind == "text" and isinstance(card.preprocess, TextPreprocess):
        return profile_pipeline(text_stages(card, session), real_sentences(200), max_seconds=request.seconds)
    return None


def run_sweeps(card: ModelCard, request: ProfileRequest, session: Any, threads: list[int]) -> tuple[Sweep, ...]:
    """Batch, thread and (for text models) sequence-length sweeps."""
    text = isinstance(card.preprocess, TextPreprocess) or any(s.name == "input_ids" for s in card.inputs)
    batches = [b for b in request.batches if b <= 16] if text else list(request.batches)
    sweeps = [batch_sweep(session, lambda b: sample_feeds(card, b), batches)]

    def open_with(t: int) -> Any:
        return open_session(
            card.onnx_path, request.backend, SessionOptions(**{**request.options.to_dict(), "intra_threads": t})
        )

    sweeps.append(thread_sweep(open_with, sample_feeds(card), threads))
    if text:

        def attention_share(feeds: Any) -> float:
            runs = node_runs(card.onnx_path, request.backend, request.options, feeds, runs=5)
            return operator_profile(runs, None).share_matching(("attention", "softmax"))

        lengths = list(request.sequences)
        sweeps.append(sequence_sweep(session, lambda n: sample_feeds(card, 1, n), lengths, attention_share))
    return tuple(sweeps)


def evidence_from(report: ProfileReport, threads: int, isa: tuple[str, ...], usable: int) -> Evidence:
    """Reduce a report's measurements to what the diagnosis rules read."""
    pipeline, latency, operators, ceilings = report.pipeline, report.model_latency, report.operators, report.ceilings
    batch, sweep_threads, sequence = report.sweep("batch"), report.sweep("threads"), report.sweep("sequence")
    return Evidence(
        stage_shares={s.name: s.share for s in pipeline.stages} if pipeline else {},
        model_cv=latency.cv,
        first_call_penalty=latency.first_call_penalty,
        precision=str(report.backend.get("precision", "fp32")),
        isa=isa,
        int8_over_fp32=ceilings.int8_gops / ceilings.peak_gflops if ceilings.int8_gops else None,
        usable_cpus=usable,
        threads=threads,
        batch_gain=batch.gain() if batch and batch.points else None,
        batch_knee=batch.knee() if batch else None,
        thread_efficiency=(
            sweep_threads.points[-1].extra["efficiency"] if sweep_threads and len(sweep_threads.points) > 1 else None
        ),
        attention_share_longest=sequence.points[-1].extra["attention_share"] if sequence and sequence.points else None,
        longest_sequence=sequence.points[-1].value if sequence and sequence.points else None,
        memory_bound_share=operators.memory_bound_share() if operators and operators.points else None,
    )


def profile_model(
    card: ModelCard, request: ProfileRequest, settings: Settings, progress: Progress | None = None
) -> ProfileReport:
    """Latency distribution (first call included), pipeline stages, operators on the roofline, sweeps, diagnosis."""
    say = progress or (lambda _: None)
    cpu = probe_cpu()
    threads = request.options.intra_threads or cpu.usable_cpus
    session = open_session(card.onnx_path, request.backend, request.options)
    feeds = sample_feeds(card)
    say("latency distribution")
    timing = time_call(lambda: session.run(feeds), TimingPolicy(max_seconds=request.seconds))
    latency = summarize(timing.samples_s, timing.first_call_s)
    say("pipeline stages")
    pipeline = run_pipeline(card, request, settings, session)
    say("machine ceilings")
    ceilings = measure_ceilings(threads)
    say("operators and roofline")
    operators = operator_profile(
        node_runs(card.onnx_path, request.backend, request.options, feeds, request.operator_runs), ceilings
    )
    model, shapes = observed_shapes(card.onnx_path, feeds)
    costs = graph_costs(model, shapes)
    flops = sum(c.flops or 0 for c in costs)
    whole = place(card.name, "model", flops, sum(c.bytes for c in costs), latency.median, ceilings) if flops else None
    say("scaling sweeps")
    sweeps = run_sweeps(card, request, session, list(request.threads) or list(range(1, cpu.usable_cpus + 1)))
    report = ProfileReport(
        model=card.name,
        backend=session.describe(),
        model_latency=latency,
        model_stop_reason=timing.stop_reason,
        model_samples_s=tuple(float(x) for x in timing.samples_s),
        pipeline=pipeline,
        operators=operators,
        whole_model=whole,
        ceilings=ceilings,
        sweeps=sweeps,
        recommendations=(),
        environment=environment_capsule(settings={"backend": request.backend, **request.options.to_dict()}),
    )
    evidence = evidence_from(report, request.options.intra_threads, cpu.isa, cpu.usable_cpus)
    return replace(report, recommendations=tuple(diagnose(evidence)))
