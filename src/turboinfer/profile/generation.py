"""`turboinfer profile` for a decoder LLM: TTFT and prefill speed by prompt length (where attention's quadratic
share shows), time per output token by context depth, what the KV cache saves (the oracle without it), aggregate
output by concurrent streams, KV bytes, peak memory, both phases on the roofline, and ranked recommendations with
their evidence. Prompts are windows of real prose; every number is measured here."""

from __future__ import annotations

import resource
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from turboinfer.core.settings import Settings
from turboinfer.hardware.peaks import gemm_fp32_gflops, memory_bandwidth_gbps
from turboinfer.hardware.probe import probe_cpu
from turboinfer.llm.card import BYTES_PER_WEIGHT, LlmCard, build_llm
from turboinfer.llm.engines import ORACLE
from turboinfer.llm.prose import Prose
from turboinfer.llm.speed import concurrent_run
from turboinfer.llm.variant import GeneratorVariant, open_generator
from turboinfer.profile.diagnose import Recommendation
from turboinfer.runtime.llm.generate import KV_VALUE_BYTES, GenerationRequest, check_kv_capacity
from turboinfer.runtime.microbench import gemm_throughput

Progress = Callable[[str], None]


@dataclass(frozen=True)
class GenProfileRequest:
    """What to sweep."""

    prompts: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048, 4096)
    depths: tuple[int, ...] = (16, 512, 2048)
    streams: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    generate: int = 64
    no_cache_tokens: int = 16
    """Tokens the oracle generates without its cache (each step recomputes the whole sequence)."""

    @classmethod
    def quick(cls) -> GenProfileRequest:
        """Seconds, not minutes: the same report, fewer points."""
        return cls(prompts=(64, 256, 512), depths=(16, 512), streams=(1, 4), generate=16, no_cache_tokens=4)


@dataclass(frozen=True)
class PrefillRow:
    """One prompt length: time to the first token and prefill speed."""

    prompt: int
    ttft_s: float
    tokens_per_s: float


@dataclass(frozen=True)
class DecodeRow:
    """One context depth: decode speed and time per output token."""

    depth: int
    tokens_per_s: float
    tpot_s: float


@dataclass(frozen=True)
class StreamsRow:
    """One number of concurrent streams: aggregate output and per-stream latencies."""

    streams: int
    output_tokens_per_s: float
    ttft_p50_s: float
    tpot_p50_s: float


@dataclass(frozen=True)
class CacheGain:
    """The oracle's decode with and without its KV cache, after `prompt` tokens."""

    with_cache: float
    without_cache: float
    gain: float
    prompt: int


@dataclass(frozen=True)
class PrefixReuse:
    """TTFT of a 512-token prompt, and of the same prefix again."""

    first_ttft_s: float
    shared_prefix_ttft_s: float
    speedup: float


@dataclass(frozen=True)
class KvFootprint:
    """What the KV cache holds per token and per stream at the full context."""

    bytes_per_token: float
    bytes_per_stream_at_context: float
    precision_bytes: float
    context: int


@dataclass(frozen=True)
class GenRoofline:
    """Decode against memory bandwidth, prefill against the GEMM peaks."""

    bandwidth_gbps: float
    fp32_peak_gflops: float
    decode_bytes_per_token: float
    decode_achieved_gbps: float
    decode_bound_tokens_per_s: float
    decode_share_of_bound: float
    prefill_achieved_gflops: float
    prefill_share_of_peak: float
    int8_peak_gops: float
    prefill_share_of_int8_peak: float
    weight_bytes: float


@dataclass(frozen=True)
class GenProfile:
    """Everything measured; JSON through to_dict (each part a mapping, each sweep a list of them)."""

    variant: dict[str, Any]
    engine: dict[str, Any]
    machine: dict[str, Any]
    prefill: list[PrefillRow]
    decode: list[DecodeRow]
    cache: CacheGain
    streams: list[StreamsRow]
    prefix: PrefixReuse
    kv: KvFootprint
    roofline: GenRoofline
    recommendations: list[Recommendation] = field(default_factory=list)
    peak_rss_mib: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (seconds, bytes, tokens/s)."""
        return asdict(self)


def profile_generator(
    variant: GeneratorVariant, request: GenProfileRequest, settings: Settings, progress: Progress | None = None
) -> GenProfile:
    """Measure the variant on this machine and diagnose it."""
    say = progress or (lambda label: None)
    card = build_llm(variant.model, settings)
    cpu = probe_cpu()
    threads = variant.threads or cpu.usable_cpus
    say(f"loading {variant.label}")
    generator = open_generator(variant, settings)
    prose = Prose(generator)
    generator.generate(GenerationRequest(prose.window(32), max_tokens=4, ignore_eos=True))  # warm-up
    prefill = []
    for length in (n for n in request.prompts if n < card.context):  # the model's context bounds the sweep
        say(f"prefill, {length}-token prompt")
        result = generator.generate(GenerationRequest(prose.window(length), max_tokens=1, ignore_eos=True))
        prefill.append(PrefillRow(length, result.ttft_s, length / result.ttft_s))
    decode = []
    for depth in (d for d in request.depths if d + request.generate <= card.context):
        say(f"decode at depth {depth}")
        result = generator.generate(
            GenerationRequest(prose.window(depth), max_tokens=request.generate, ignore_eos=True)
        )
        decode.append(DecodeRow(depth, result.decode_rate, 1 / result.decode_rate))
    streams = stream_sweep(generator, prose, request, card, say)
    prefix = prefix_reuse(generator, prose)
    cache = cache_gain(variant, settings, prose, request, say)
    kv_bytes = KV_VALUE_BYTES.get(variant.kv_cache, 4.0)
    per_token = card.kv_values_per_token() * kv_bytes
    kv = KvFootprint(per_token, per_token * card.context, kv_bytes, card.context)
    say("roofline ceilings")
    roof = roofline(card, variant, prefill, decode, kv, threads)
    out = GenProfile(variant.to_dict(), generator.describe(), {"cpu": cpu.model, "usable_cpus": cpu.usable_cpus},
                     prefill, decode, cache, streams, prefix, kv, roof,
                     peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # fmt: skip
    return replace(out, recommendations=diagnose_generation(out, variant))


def stream_sweep(generator: Any, prose: Prose, request: GenProfileRequest, card: LlmCard,
                 say: Progress) -> list[StreamsRow]:  # fmt: skip
    """Aggregate output tokens/s by concurrent streams (engines that batch streams; one stream for the others)."""
    rows = []
    for streams in request.streams if hasattr(generator, "generate_many") else (1,):
        check_kv_capacity(card.kv_values_per_token() * 4, streams, 64 + request.generate, 2**34)
        say(f"{streams} concurrent streams")
        results, seconds = concurrent_run(generator, prose, streams, 64, request.generate)
        tpots = [r.tpot_s for r in results if r.tpot_s]
        rows.append(StreamsRow(streams, sum(r.completion_tokens for r in results) / seconds,
                               float(np.median([r.ttft_s for r in results])),
                               float(np.median(tpots)) if tpots else float("nan")))  # fmt: skip
    return rows


def prefix_reuse(generator: Any, prose: Prose) -> PrefixReuse:
    """TTFT of a 512-token prompt, then of the same prompt again with another ending (a shared system prompt)."""
    shared = prose.window(512)
    first = generator.generate(GenerationRequest(shared + prose.window(8), max_tokens=1, ignore_eos=True))
    again = generator.generate(GenerationRequest(shared + prose.window(8), max_tokens=1, ignore_eos=True))
    return PrefixReuse(first.ttft_s, again.ttft_s, first.ttft_s / again.ttft_s)


def cache_gain(
    variant: GeneratorVariant, settings: Settings, prose: Prose, request: GenProfileRequest, say: Progress
) -> CacheGain:
    """Decode tokens/s of the transformers oracle with and without its KV cache, after a 512-token prompt."""
    rates = {}
    prompt = prose.window(512)
    for use_cache in (True, False):
        say(f"transformers oracle, KV cache {'on' if use_cache else 'off'}")
        oracle = open_generator(GeneratorVariant(variant.model, ORACLE, "fp32", threads=variant.threads,
                                                 use_cache=use_cache), settings)  # fmt: skip
        tokens = request.generate if use_cache else request.no_cache_tokens
        result = oracle.generate(GenerationRequest(prompt, max_tokens=tokens, ignore_eos=True))
        rates["with_cache" if use_cache else "without_cache"] = result.decode_rate
    return CacheGain(rates["with_cache"], rates["without_cache"], rates["with_cache"] / rates["without_cache"], 512)


def roofline(card: LlmCard, variant: GeneratorVariant, prefill: list[PrefillRow], decode: list[DecodeRow],
             kv: KvFootprint, threads: int) -> GenRoofline:  # fmt: skip
    """Decode against memory bandwidth (weights + KV read per token) and prefill against the FP32 GEMM peak."""
    bandwidth = memory_bandwidth_gbps(threads).value * 1e9
    peak = gemm_fp32_gflops(threads).value * 1e9
    int8 = gemm_throughput("int8", threads).value * 1e9  # engines run 4/8-bit weights on integer units
    weights = card.weight_bytes(variant.weights)
    first = decode[0]
    per_token = weights + kv.bytes_per_token * first.depth
    best = max(row.tokens_per_s for row in prefill)
    flops = 2 * card.parameters  # per token, weights only (attention adds 4·layers·hidden·context)
    return GenRoofline(
        bandwidth_gbps=bandwidth / 1e9, fp32_peak_gflops=peak / 1e9, decode_bytes_per_token=per_token,
        decode_achieved_gbps=per_token * first.tokens_per_s / 1e9, decode_bound_tokens_per_s=bandwidth / per_token,
        decode_share_of_bound=first.tokens_per_s / (bandwidth / per_token),
        prefill_achieved_gflops=flops * best / 1e9, prefill_share_of_peak=flops * best / peak,
        int8_peak_gops=int8 / 1e9, prefill_share_of_int8_peak=flops * best / int8, weight_bytes=weights,
    )  # fmt: skip


def diagnose_generation(p: GenProfile, variant: GeneratorVariant) -> list[Recommendation]:
    """Ranked recommendations from the measurements, each with its evidence."""
    out = []
    r = p.roofline
    if variant.weights in ("fp32", "bf16", "fp16", "int8", "q8_0"):
        four_bit = r.weight_bytes * BYTES_PER_WEIGHT["int4"] / BYTES_PER_WEIGHT[variant.weights]
        out.append(Recommendation(
            "weight-quantization", "quantize the weights to 4 bits (ORT GenAI int4) if `turboinfer optimize` finds "
            "them inside the fidelity budget",
            f"decode reads {r.weight_bytes / 2**20:.0f} MiB of {variant.weights} weights per token; the bound "
            f"at {r.bandwidth_gbps:.0f} GB/s is {r.decode_bound_tokens_per_s:.0f} tok/s",
            f"a bandwidth bound {r.weight_bytes / four_bit:.1f}× higher", 0.9,
        ))  # fmt: skip
    if r.decode_share_of_bound < 0.5:
        out.append(Recommendation(
            "decode-overhead", "the per-token fixed cost dominates: batch streams, or an engine with fused kernels",
            f"decode runs at {r.decode_share_of_bound:.0%} of its bandwidth bound ({p.decode[0].tokens_per_s:.0f}"
            f" of {r.decode_bound_tokens_per_s:.0f} tok/s): small kernels, sampling and Python cost more than the "
            "weights",
            "closer to the bound", 0.5 + 0.4 * (1 - r.decode_share_of_bound),
        ))  # fmt: skip
    if len(p.streams) > 1 and p.streams[-1].output_tokens_per_s > 1.5 * p.streams[0].output_tokens_per_s:
        gain = p.streams[-1].output_tokens_per_s / p.streams[0].output_tokens_per_s
        out.append(Recommendation(
            "continuous-batching", "serve with continuous batching (many streams per engine step)",
            f"{p.streams[-1].streams} streams give {p.streams[-1].output_tokens_per_s:.0f} output tok/s against "
            f"{p.streams[0].output_tokens_per_s:.0f} for one", f"{gain:.1f}× output throughput", 0.8,
        ))  # fmt: skip
    if p.prefix.speedup > 1.5:
        out.append(Recommendation(
            "prefix-caching", "keep prefix caching on for requests that share a system prompt",
            f"a repeated 512-token prefix: TTFT {p.prefix.first_ttft_s * 1e3:.0f} → "
            f"{p.prefix.shared_prefix_ttft_s * 1e3:.0f} ms", f"{p.prefix.speedup:.1f}× TTFT", 0.6,
        ))  # fmt: skip
    long = p.decode[-1]
    if len(p.decode) > 1 and long.tokens_per_s < 0.8 * p.decode[0].tokens_per_s:
        out.append(Recommendation(
            "kv-precision", "store the KV cache in 8 bits at long contexts (OpenVINO GenAI KV_CACHE_PRECISION=u8)",
            f"decode slows from {p.decode[0].tokens_per_s:.0f} to {long.tokens_per_s:.0f} tok/s at depth "
            f"{long.depth} ({p.kv.bytes_per_token * long.depth / 2**20:.0f} MiB of KV read per token)",
            "less KV traffic per token", 0.4,
        ))  # fmt: skip
    out.append(Recommendation(
        "prompt-lookup", "for input-grounded tasks (summaries, edits, RAG) try prompt-lookup speculative decoding",
        "decode is bound by the per-token pass, not by compute: checking several drafted tokens per pass costs little",
        "up to 2× decode on outputs that copy the prompt", 0.3,
    ))  # fmt: skip
    return sorted(out, key=lambda rec: -rec.score)
