"""Which engine runs an LLM, and how: a GeneratorVariant (model × engine × weights × KV cache × threads ×
prompt lookup) parsed from "MODEL[@ENGINE]" or a .generator.json, and opened as a loaded Generator with the model's
overrides applied. MODEL is a zoo name, a .gguf file or a Hugging Face folder."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from turboinfer.core.errors import InvalidModel
from turboinfer.core.settings import Settings
from turboinfer.llm.card import REQUANTIZED, LlmCard, build_llm, llm_names, llm_source
from turboinfer.llm.engines import ServeShape, default_variant_fields, drafting_engines, engine_entry
from turboinfer.llm.overrides import overrides_path
from turboinfer.llm.source import facts_of, is_hf_folder


@dataclass(frozen=True)
class GeneratorVariant:
    """One runnable configuration of an LLM: engine, weight and KV cache precision, threads, prompt lookup."""

    model: str
    """A zoo name, a .gguf path or a Hugging Face folder."""
    engine: str = "openvino-genai"
    weights: str = REQUANTIZED
    """q8_0 or the file's own layout (OpenVINO GenAI's GGUF), the file's own (llama.cpp), fp32/int8/int4 (ONNX
    Runtime GenAI), fp32 (transformers): llm.engines says which of a model."""
    kv_cache: str = "u8"
    """OpenVINO GenAI: u8, f16, bf16 or f32; llama.cpp f16; the others keep it in fp32 (the engine's first is
    taken when it keeps only one)."""
    threads: int = 0
    use_cache: bool = True
    """transformers only: False recomputes the whole sequence every step (what the KV cache saves)."""
    prompt_lookup: int = 0
    """OpenVINO GenAI only, with kv_cache f32: draft this many tokens per step from n-grams of the prompt (0: off)."""

    @property
    def name(self) -> str:
        """The model's short name (a zoo name, a file's stem, a folder's name)."""
        return self.model if self.model in llm_names() else Path(self.model).stem

    @property
    def label(self) -> str:
        """e.g. "smollm2-135m@openvino-genai q8_0 kv u8 2t"."""
        kv = f" kv {self.kv_cache}" if len(engine_entry(self.engine).kv_caches) > 1 else ""
        kv = kv if self.use_cache else " no cache"
        lookup = f" lookup {self.prompt_lookup}" if self.prompt_lookup else ""
        return f"{self.name}@{self.engine} {self.weights}{kv}{lookup}{f' {self.threads}t' if self.threads else ''}"

    def checked(self) -> GeneratorVariant:
        """self, or InvalidModel for a combination no engine runs (the file's own layout is checked on opening)."""
        llm_source(self.model)
        entry = engine_entry(self.engine)
        if self.kv_cache not in entry.kv_caches:
            if len(entry.kv_caches) > 1:
                raise InvalidModel(f"{self.engine} keeps its KV cache in {', '.join(entry.kv_caches)}, not "
                                   f"{self.kv_cache!r}")  # fmt: skip
            return replace(self, kv_cache=entry.kv_caches[0]).checked()
        if self.prompt_lookup and not entry.drafts:
            raise InvalidModel(f"prompt lookup runs in {', '.join(drafting_engines())} only, not {self.engine}")
        if self.prompt_lookup and self.kv_cache != "f32":
            raise InvalidModel(
                "prompt lookup runs with kv_cache f32 (f32 numerics keep its greedy output identical to plain decoding)"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def parse_generator(text: str, settings: Settings, threads: int = 0) -> GeneratorVariant:
    """A GeneratorVariant from "MODEL[@ENGINE]" or a .generator.json file (what optimize writes)."""
    if text.endswith(".generator.json"):
        try:
            variant = GeneratorVariant(**json.loads(Path(text).read_text()))
        except (OSError, json.JSONDecodeError, TypeError) as err:
            raise InvalidModel(f"generator variant {text} is not valid: {err}") from None
    else:
        model, _, engine = text.rpartition("@") if "@" in text else (text, "", "")
        variant = default_variant(model, engine)
    if threads:
        variant = replace(variant, threads=threads)
    return variant.checked()


def default_variant(model: str, engine: str = "") -> GeneratorVariant:
    """The model on an engine (without one: the first of llm.engines that runs its architecture) with that
    engine's default weights and KV cache (read from the file, nothing built)."""
    _, path = llm_source(model)
    facts = facts_of(path)
    default, _, _ = default_variant_fields(facts.architecture, facts.layout, path.suffix == ".gguf")
    entry = engine_entry(engine or default)
    return GeneratorVariant(model, entry.name, entry.weights(facts.layout, path.suffix == ".gguf")[0],
                            entry.kv_caches[0])  # fmt: skip


def open_generator(variant: GeneratorVariant, settings: Settings, shape: ServeShape | None = None,
                   card: LlmCard | None = None) -> Any:  # fmt: skip
    """A loaded Generator for the variant, the model's overrides applied; InvalidModel with the reason when the
    engine cannot run the model. `card` is the model already resolved (a server's engine process gets it, so the
    model is not read and hashed again there); without it the LLM is built or found first. `shape` is what a
    server sized the engine for (streams, KV cache tokens, tokens per step)."""
    card = card or build_llm(variant.model, settings)
    entry = engine_entry(variant.engine)
    refusal = entry.refusal(card)
    if refusal:
        raise InvalidModel(f"{card.name}: {refusal}")
    return with_overrides(entry.open(card, variant, shape), card)


def with_overrides(generator: Any, card: LlmCard) -> Any:
    """The generator with the model's overrides: its chat template (or a clear refusal when the model has none),
    extra stop tokens, a capped context."""
    from turboinfer.runtime.llm.chat import ChatTemplate, NoChatTemplate

    fixes = card.overrides
    if fixes.chat_template:
        generator.chat = ChatTemplate(fixes.chat_template, card.bos_token, card.eos_token)
    elif not card.chat_template:
        generator.chat = NoChatTemplate(card.name, str(overrides_path(card.source)))
    if fixes.stop_token_ids:
        generator.eos = frozenset(generator.eos) | frozenset(fixes.stop_token_ids)
    generator.context = min(generator.context, card.context)
    return generator


def is_llm(name: str) -> bool:
    """True for a zoo LLM's name, MODEL@ENGINE, a .generator.json, a .gguf file or a Hugging Face LLM folder."""
    if name.endswith(".generator.json"):
        return True
    model = name.rpartition("@")[0] if "@" in name else name
    return model in llm_names() or model.endswith(".gguf") or is_hf_folder(Path(model))
