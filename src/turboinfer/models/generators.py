"""Which engine runs an LLM, and how: a GeneratorVariant (model × engine × weights × KV cache × threads ×
prompt lookup) parsed from "MODEL[@ENGINE]" or a .generator.json, and opened as a loaded Generator with the model's
overrides applied. MODEL is a zoo name, a .gguf file or a Hugging Face folder."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from turboinfer.core.errors import InvalidModel
from turboinfer.core.settings import Settings
from turboinfer.models.llm import (
    ORT_PRECISIONS,
    REQUANTIZED,
    LlmCard,
    build_llm,
    llm_names,
    llm_source,
    openvino_gguf,
    ort_genai_model,
)
from turboinfer.models.llm_overrides import overrides_path
from turboinfer.models.llm_source import engine_refusal, facts_of, is_hf_folder

ENGINES = ("openvino-genai", "ort-genai", "transformers")
DEFAULT_WEIGHTS = {"openvino-genai": REQUANTIZED, "ort-genai": "int8", "transformers": "fp32"}


@dataclass(frozen=True)
class GeneratorVariant:
    """One runnable configuration of an LLM: engine, weight and KV cache precision, threads, prompt lookup."""

    model: str
    """A zoo name, a .gguf path or a Hugging Face folder."""
    engine: str = "openvino-genai"
    weights: str = REQUANTIZED
    """q8_0 or the file's own layout (OpenVINO GenAI's GGUF), fp32/int8/int4 (ONNX Runtime GenAI), fp32
    (transformers)."""
    kv_cache: str = "u8"
    """OpenVINO GenAI: u8, f16, bf16 or f32; the other engines keep it in fp32."""
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
        kv = f" kv {self.kv_cache}" if self.engine == "openvino-genai" else "" if self.use_cache else " no cache"
        lookup = f" lookup {self.prompt_lookup}" if self.prompt_lookup else ""
        return f"{self.name}@{self.engine} {self.weights}{kv}{lookup}{f' {self.threads}t' if self.threads else ''}"

    def checked(self) -> GeneratorVariant:
        """self, or InvalidModel for a combination no engine runs (the file's own layout is checked on opening)."""
        llm_source(self.model)
        if self.engine not in ENGINES:
            raise InvalidModel(f"unknown engine {self.engine!r}; choose one of {', '.join(ENGINES)}")
        allowed = {"ort-genai": ORT_PRECISIONS, "transformers": ("fp32",)}.get(self.engine)
        if allowed is not None and self.weights not in allowed:
            raise InvalidModel(f"{self.engine} runs {', '.join(allowed)} weights, not {self.weights!r}")
        if self.prompt_lookup and self.engine != "openvino-genai":
            raise InvalidModel("prompt lookup runs in OpenVINO GenAI's pipeline only (engine openvino-genai)")
        if self.prompt_lookup and self.kv_cache != "f32":
            raise InvalidModel(
                "prompt lookup runs with kv_cache f32 (f32 numerics keep its greedy output identical to plain decoding)"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def parse_generator(text: str, settings: Settings, threads: int = 0) -> GeneratorVariant:
    """A GeneratorVariant from "MODEL[@ENGINE]" or a .generator.json file (what optimize writes). Without an engine,
    OpenVINO GenAI where it runs the model, else ONNX Runtime GenAI."""
    if text.endswith(".generator.json"):
        try:
            variant = GeneratorVariant(**json.loads(Path(text).read_text()))
        except (OSError, json.JSONDecodeError, TypeError) as err:
            raise InvalidModel(f"generator variant {text} is not valid: {err}") from None
    else:
        model, _, engine = text.rpartition("@") if "@" in text else (text, "", "")
        engine = engine or default_engine(model)
        variant = GeneratorVariant(model, engine, DEFAULT_WEIGHTS.get(engine, ""))
    if threads:
        variant = GeneratorVariant(**{**variant.to_dict(), "threads": threads})
    return variant.checked()


def default_engine(model: str) -> str:
    """OpenVINO GenAI where it runs the model (read from the file, nothing built), else ONNX Runtime GenAI."""
    _, path = llm_source(model)
    refusal = engine_refusal(facts_of(path).architecture, "openvino-genai")
    return "openvino-genai" if refusal is None else "ort-genai"


def open_generator(variant: GeneratorVariant, settings: Settings, engine: Any = None) -> Any:
    """A loaded Generator for the variant (the LLM built first when it is not yet), the model's overrides applied;
    InvalidModel with the reason when the engine cannot run the model. `engine` is OpenVINO GenAI's EngineConfig
    when a server sets the scheduler's knobs (streams, KV cache size, tokens per step)."""
    card = build_llm(variant.model, settings)
    refusal = card.refusal(variant.engine)
    if refusal:
        raise InvalidModel(f"{card.name}: {refusal}")
    if variant.engine == "transformers":
        from turboinfer.runtime.transformers import TransformersGenerator

        generator: Any = TransformersGenerator(card.hf_folder, variant.threads, variant.use_cache)
    elif variant.engine == "ort-genai":
        from turboinfer.runtime.ort_genai import OrtGenAiGenerator

        generator = OrtGenAiGenerator(ort_genai_model(card, variant.weights), variant.threads)
    else:
        from turboinfer.runtime.openvino_genai import EngineConfig, OpenVinoGenAiGenerator

        config = engine or EngineConfig()
        config = EngineConfig(**{**config.to_dict(), "threads": variant.threads, "kv_precision": variant.kv_cache,
                                 "prompt_lookup": variant.prompt_lookup})  # fmt: skip
        generator = OpenVinoGenAiGenerator(openvino_gguf(card, variant.weights), card.context, config)
    return with_overrides(generator, card)


def with_overrides(generator: Any, card: LlmCard) -> Any:
    """The generator with the model's overrides: its chat template (or a clear refusal when the model has none),
    extra stop tokens, a capped context."""
    from turboinfer.runtime.chat import ChatTemplate, NoChatTemplate

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
