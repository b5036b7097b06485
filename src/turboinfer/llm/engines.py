"""The LLM engines, in one registry: for each, the architectures it runs, the weight layouts it reads of a given
model, its KV cache, the options `optimize` searches, and how it opens on a built model. profile, bench, optimize
and serve ask this table, never an engine's name: adding an engine is its runtime module and one entry here.

An opener gets the card, the variant and, when a server opens it, the ServeShape (streams, KV cache tokens, tokens
per step) its scheduler was sized for; one stream otherwise."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turboinfer.core.errors import InvalidModel
from turboinfer.llm.card import (
    OPENVINO_GGUF_ARCHITECTURES,
    ORT_PRECISIONS,
    REQUANTIZED,
    LlmCard,
    openvino_gguf,
    openvino_ir,
    openvino_layouts,
    ort_genai_model,
)
from turboinfer.llm.ir_export import IR_WEIGHTS
from turboinfer.llm.source import ARCHITECTURES

if TYPE_CHECKING:
    from turboinfer.llm.variant import GeneratorVariant

ORT_DEFAULT_FIRST = ("int8", *(p for p in ORT_PRECISIONS if p != "int8"))
OPENVINO_KV = ("u8", "f16", "bf16", "f32")
PROFILE_STREAMS = 16
"""Streams an engine that batches is opened for outside a server (profile's and optimize's stream sweeps)."""


@dataclass(frozen=True)
class ServeShape:
    """What a server sized an engine for."""

    streams: int
    kv_tokens: int
    """Tokens the KV cache holds: all streams together for a shared cache, each stream's context otherwise."""
    max_batched_tokens: int = 256


@dataclass(frozen=True)
class Search:
    """What `optimize` may try on one model."""

    quick: bool
    grounded: bool
    """Also f32 numerics with prompt lookup (engines that draft)."""
    lookups: tuple[int, ...]
    threads: int


@dataclass(frozen=True)
class EngineEntry:
    """One engine: what it runs, what it reads, what it keeps, how it opens."""

    name: str
    architectures: tuple[str, ...]
    weights: Callable[[str, bool], tuple[str, ...]]
    """The layouts it runs of a model whose file has this layout (a GGUF: True; a folder), its default first."""
    kv_caches: tuple[str, ...]
    """KV cache precisions, the default first."""
    shared_kv: bool
    """One KV cache all streams share (paged or unified) rather than one per stream at full context."""
    batches: bool
    """Schedules many streams itself (continuous batching)."""
    search: Callable[[LlmCard, Search], list[dict[str, Any]]]
    """The option sets optimize measures (weights, kv_cache, threads, prompt_lookup)."""
    open: Callable[[LlmCard, GeneratorVariant, ServeShape | None], Any]
    drafts: bool = False
    """Runs prompt lookup (kv_cache f32)."""
    default_for: tuple[str, ...] = ("gguf", "folder")
    """The sources (a GGUF file, a Hugging Face folder) it is the default engine for, where it comes first."""
    note: str = ""

    def layouts(self, card: LlmCard) -> tuple[str, ...]:
        """The layouts it runs of this model, its default first."""
        return self.weights(card.layout, card.gguf is not None)

    def refusal(self, card: LlmCard) -> str | None:
        """Why this engine cannot run the model, or None."""
        if card.architecture not in self.architectures:
            return f"{self.name} does not run {card.architecture} (it runs {', '.join(self.architectures)})"
        return None


def open_openvino(card: LlmCard, variant: GeneratorVariant, shape: ServeShape | None) -> Any:
    """OpenVINO GenAI's continuous-batching pipeline on the GGUF of the variant's layout."""
    return openvino_pipeline(openvino_gguf(card, variant.weights), card, variant, shape)


def open_openvino_ir(card: LlmCard, variant: GeneratorVariant, shape: ServeShape | None) -> Any:
    """OpenVINO GenAI's continuous-batching pipeline on the IR optimum-intel exported at the variant's layout."""
    return openvino_pipeline(openvino_ir(card, variant.weights), card, variant, shape)


def openvino_pipeline(model: Path, card: LlmCard, variant: GeneratorVariant, shape: ServeShape | None) -> Any:
    """OpenVINO GenAI's pipeline on a GGUF or IR folder: one stream's defaults, or sized as a server asks."""
    from turboinfer.runtime.llm.generate import KV_VALUE_BYTES
    from turboinfer.runtime.llm.openvino_genai import EngineConfig, OpenVinoGenAiGenerator

    config = EngineConfig(threads=variant.threads, kv_precision=variant.kv_cache, prompt_lookup=variant.prompt_lookup)
    if shape is not None:
        gib = shape.kv_tokens * card.kv_values_per_token() * KV_VALUE_BYTES[variant.kv_cache] / 2**30
        config = EngineConfig(**{**config.to_dict(), "cache_gb": gib, "max_streams": shape.streams,
                                 "max_batched_tokens": shape.max_batched_tokens})  # fmt: skip
    return OpenVinoGenAiGenerator(model, card.context, config)


def search_openvino(card: LlmCard, search: Search) -> list[dict[str, Any]]:
    """The Q8_0 re-quantization and the file's own layout (u8 KV); f32 numerics without and with prompt lookup for
    the grounded objective and a full run; f16 KV and one thread in a full run."""
    t = search.threads
    out = [dict(weights=w, kv_cache="u8", threads=t) for w in openvino_layouts(card.layout, card.gguf is not None)]
    if search.grounded or not search.quick:
        out += [dict(weights=REQUANTIZED, kv_cache="f32", threads=t, prompt_lookup=n) for n in (0, *search.lookups)]
    if not search.quick:
        out += [
            dict(weights=REQUANTIZED, kv_cache="f16", threads=t),
            dict(weights=REQUANTIZED, kv_cache="u8", threads=1),
        ]
    return out


def search_openvino_ir(card: LlmCard, search: Search) -> list[dict[str, Any]]:
    """int8, int4 data-free and int4 data-aware weights (u8 KV); for the grounded objective and a full run f32
    numerics without and with prompt lookup on the int8 weights; fp32 weights, f16 KV and one thread in a full run."""
    t = search.threads
    out = [dict(weights=w, kv_cache="u8", threads=t) for w in ("int8", "int4", "int4-awq")]
    if search.grounded or not search.quick:
        out += [dict(weights="int8", kv_cache="f32", threads=t, prompt_lookup=n) for n in (0, *search.lookups)]
    if not search.quick:
        out += [dict(weights="fp32", kv_cache="f32", threads=t), dict(weights="int8", kv_cache="f16", threads=t),
                dict(weights="int8", kv_cache="u8", threads=1)]  # fmt: skip
    return out


def open_ort(card: LlmCard, variant: GeneratorVariant, shape: ServeShape | None) -> Any:
    """ONNX Runtime GenAI on the model its builder wrote at the variant's precision."""
    from turboinfer.runtime.llm.ort_genai import OrtGenAiGenerator

    return OrtGenAiGenerator(ort_genai_model(card, variant.weights), variant.threads)


def search_ort(card: LlmCard, search: Search) -> list[dict[str, Any]]:
    """4-bit and 8-bit weights; FP32 and one thread in a full run."""
    out = [dict(weights=w, threads=search.threads) for w in ("int4", "int8")]
    if not search.quick:
        out += [dict(weights="fp32", threads=search.threads), dict(weights="int8", threads=1)]
    return out


def open_llamacpp(card: LlmCard, variant: GeneratorVariant, shape: ServeShape | None) -> Any:
    """llama.cpp on the GGUF as shipped (a folder: the Q8_0 GGUF llama.cpp's converter writes of it)."""
    from turboinfer.runtime.llm.llamacpp import LlamaCppConfig, LlamaCppGenerator

    gguf = card.gguf if card.gguf is not None else openvino_gguf(card, REQUANTIZED)
    streams, tokens = (shape.streams, shape.kv_tokens) if shape else (PROFILE_STREAMS, min(card.context, 16384))
    return LlamaCppGenerator(gguf, card.context, LlamaCppConfig(variant.threads, streams, tokens))


def llamacpp_weights(layout: str, gguf: bool) -> tuple[str, ...]:
    """A GGUF's own layout (any K-quant), or the Q8_0 GGUF of a folder."""
    return (layout.lower(),) if gguf else (REQUANTIZED,)


def search_llamacpp(card: LlmCard, search: Search) -> list[dict[str, Any]]:
    """The file as shipped; one thread too in a full run."""
    weights = llamacpp_weights(card.layout, card.gguf is not None)[0]
    out = [dict(weights=weights, kv_cache="f16", threads=search.threads)]
    return out if search.quick else [*out, dict(weights=weights, kv_cache="f16", threads=1)]


def open_transformers(card: LlmCard, variant: GeneratorVariant, shape: ServeShape | None) -> Any:
    """The oracle: transformers in FP32 on the de-quantized weights."""
    from turboinfer.runtime.llm.transformers import TransformersGenerator

    return TransformersGenerator(card.hf_folder, variant.threads, variant.use_cache)


ENGINES = (
    EngineEntry("openvino-genai", OPENVINO_GGUF_ARCHITECTURES, openvino_layouts, OPENVINO_KV, True,
                True, search_openvino, open_openvino, drafts=True, note="its GGUF reader"),
    EngineEntry("openvino-ir", tuple(ARCHITECTURES), lambda layout, gguf: tuple(IR_WEIGHTS), OPENVINO_KV, True, True,
                search_openvino_ir, open_openvino_ir, drafts=True, default_for=(), note="IR from optimum-intel"),
    EngineEntry("llama.cpp", tuple(ARCHITECTURES), llamacpp_weights, ("f16",), True, True, search_llamacpp,
                open_llamacpp, default_for=("gguf",), note="the file as shipped"),
    EngineEntry("ort-genai", tuple(ARCHITECTURES), lambda layout, gguf: ORT_DEFAULT_FIRST, ("f32",), False, False,
                search_ort, open_ort, note="its model builder"),
    EngineEntry("transformers", tuple(ARCHITECTURES), lambda layout, gguf: ("fp32",), ("f32",), False, False,
                lambda card, search: [], open_transformers, note="the oracle"),
)  # fmt: skip
"""In the order a model's default engine is chosen: the first that runs its architecture."""
ORACLE = "transformers"


def engine_names() -> tuple[str, ...]:
    """Every engine's name."""
    return tuple(entry.name for entry in ENGINES)


def engine_entry(name: str) -> EngineEntry:
    """The engine called name; InvalidModel naming the known ones."""
    for entry in ENGINES:
        if entry.name == name:
            return entry
    raise InvalidModel(f"unknown engine {name!r}; choose one of {', '.join(engine_names())}")


def default_variant_fields(architecture: str, layout: str, gguf: bool) -> tuple[str, str, str]:
    """(engine, weights, kv_cache) of a model by default: the first engine that runs its architecture, with that
    engine's default layout and KV cache (read from the file, nothing built)."""
    kind = "gguf" if gguf else "folder"
    entry = next(e for e in ENGINES if architecture in e.architectures and kind in e.default_for)
    return entry.name, entry.weights(layout, gguf)[0], entry.kv_caches[0]


def drafting_engines() -> tuple[str, ...]:
    """The engines that run prompt lookup."""
    return tuple(e.name for e in ENGINES if e.drafts)


def engine_table() -> str:
    """The registry as the markdown table docs/llm.md shows (its test keeps the two equal)."""
    head = ("engine (`MODEL@ENGINE`)", "architectures", "weights of a Q4_K_M GGUF", "weights of a BF16 folder",
            "KV cache", "batches streams", "default for", "reads")  # fmt: skip
    rows = ["| " + " | ".join(head) + " |", "| --- " * len(head) + "|"]
    for e in ENGINES:
        kv = ", ".join(e.kv_caches) + (" shared" if e.shared_kv else "")
        cells = (f"`{e.name}`", ", ".join(e.architectures), ", ".join(e.weights("Q4_K_M", True)),
                 ", ".join(e.weights("BF16", False)), kv, "yes" if e.batches else "no",
                 ", ".join(e.default_for) if e.name != ORACLE and e.default_for else "—", e.note)  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)
