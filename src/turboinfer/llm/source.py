"""The decoder LLM a user brings: a GGUF file (any quant type the `gguf` package de-quantizes) or a Hugging Face
folder (config.json, safetensors, tokenizer). Its facts — architecture, sizes, context, layout, chat template,
tokenizer — are read from the file itself (no framework, no weights loaded) and said in one line; what no engine
can run is refused here with the reason."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from turboinfer.core.errors import InvalidModel, MissingExtra, ModelNotFound

ARCHITECTURES = {"llama": "llama", "mistral": "mistral", "qwen2": "qwen2", "qwen3": "qwen3", "gemma2": "gemma2",
                 "gemma3": "gemma3_text", "phi3": "phi3"}  # fmt: skip
"""Architectures every command takes: GGUF's general.architecture → Hugging Face's model_type (Llama 2/3, SmolLM
and Mistral-style models are llama or mistral; Qwen2/2.5; Qwen3; Gemma 2; Gemma 3 text; Phi-3/3.5/4-mini)."""
HF_TO_GGUF = {hf: gguf for gguf, hf in ARCHITECTURES.items()} | {"gemma3": "gemma3"}
SAFETENSORS_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I8": 1, "U8": 1, "I32": 4, "I64": 8}


@dataclass(frozen=True)
class LlmFacts:
    """What a model file says about itself."""

    architecture: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    context: int
    parameters: int
    layout: str
    """Weight layout: the GGUF file type (Q4_K_M, Q8_0, F16, …) or the safetensors dtype (BF16, F32, …)."""
    tensor_types: dict[str, int]
    sliding_window: int = 0
    tied_embeddings: bool = False
    chat_template: bool = False
    tokenizer: str = ""
    bos_token: str = ""
    eos_token: str = ""

    def line(self) -> str:
        """One line, as `profile` and `zoo build` say it."""
        mix = ", ".join(f"{k} ×{v}" for k, v in sorted(self.tensor_types.items(), key=lambda kv: -kv[1]))
        extras = [f"sliding window {self.sliding_window}"] if self.sliding_window else []
        extras += ["tied embeddings"] if self.tied_embeddings else []
        extras += [f"tokenizer {self.tokenizer}", "chat template" if self.chat_template else "no chat template"]
        return (f"{self.architecture}, {self.parameters / 1e6:.1f} M parameters, {self.layers} layers, hidden "
                f"{self.hidden}, {self.heads} query / {self.kv_heads} KV heads × {self.head_dim}, vocab "
                f"{self.vocab:,}, context {self.context:,}, {self.layout} ({mix}), {', '.join(extras)}")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def check_architecture(architecture: str, where: Path) -> str:
    """architecture, or InvalidModel naming it and the supported ones."""
    if architecture not in ARCHITECTURES:
        raise InvalidModel(f"{where}: architecture {architecture!r} is not supported; supported: "
                           f"{', '.join(ARCHITECTURES)}")  # fmt: skip
    return architecture


def gguf_chat_template(path: Path) -> str:
    """The chat template a GGUF file carries ("" when it has none)."""
    item = read_gguf(path).fields.get("tokenizer.chat_template")
    return str(item.contents()) if item is not None else ""


def read_gguf(path: Path) -> Any:
    """A GGUFReader over path, parsed once per process while the file keeps its size and modification time (the
    gguf package parses every token of the vocabulary: seconds for a 49k-token file, and every command asks more
    than once); InvalidModel naming the file when it is not a whole GGUF file."""
    with open(path, "rb") as handle:
        if handle.read(4) != b"GGUF":
            raise InvalidModel(f"{path} is not a GGUF file (no GGUF magic)")
        stat = os.fstat(handle.fileno())
    return parsed_gguf(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def parsed_gguf(path: str, size: int, mtime_ns: int) -> Any:
    """The GGUFReader of one version (size, mtime) of a file."""
    try:
        from gguf import GGUFReader
    except ImportError:
        raise MissingExtra("gguf", "llm") from None
    try:
        return GGUFReader(path)
    except Exception as err:  # gguf raises ValueError, struct.error, ... on a truncated or corrupt file
        raise InvalidModel(f"{path} is a corrupt or truncated GGUF file: {str(err).splitlines()[0][:200]}") from None


def gguf_facts(path: Path) -> LlmFacts:
    """The facts of a GGUF file from its metadata and tensor table."""
    import gguf

    reader = read_gguf(path)

    def field(key: str, default: Any = None) -> Any:
        item = reader.fields.get(key)
        return item.contents() if item is not None else default

    def token(index: Any) -> str:
        item = reader.fields.get("tokenizer.ggml.tokens")
        return str(item.contents(int(index))) if item is not None and index is not None else ""

    arch = check_architecture(str(field("general.architecture", "")), path)
    heads = int(field(f"{arch}.attention.head_count", 0))
    hidden = int(field(f"{arch}.embedding_length", 0))
    if not heads or not hidden:
        raise InvalidModel(f"{path}: the GGUF metadata lacks {arch}.attention.head_count or embedding_length")
    names = {t.name for t in reader.tensors}
    types = Counter(t.tensor_type.name for t in reader.tensors if len(t.shape) > 1)
    try:
        layout = gguf.LlamaFileType(int(field("general.file_type", -1))).name
    except ValueError:  # absent or a type this gguf package does not know: named by its commonest tensor type
        layout = ""
    layout = layout.removeprefix("MOSTLY_").removeprefix("ALL_")
    return LlmFacts(
        architecture=arch, layers=int(field(f"{arch}.block_count", 0)), hidden=hidden, heads=heads,
        kv_heads=int(field(f"{arch}.attention.head_count_kv", heads)),
        head_dim=int(field(f"{arch}.attention.key_length", hidden // heads)),
        vocab=len(field("tokenizer.ggml.tokens", [])), context=int(field(f"{arch}.context_length", 0)),
        parameters=sum(int(t.n_elements) for t in reader.tensors),
        layout=layout or (types.most_common(1)[0][0] if types else "F32"), tensor_types=dict(types),
        sliding_window=int(field(f"{arch}.attention.sliding_window", 0) or 0),
        tied_embeddings="output.weight" not in names, chat_template="tokenizer.chat_template" in reader.fields,
        tokenizer=str(field("tokenizer.ggml.model", "")), bos_token=token(field("tokenizer.ggml.bos_token_id")),
        eos_token=token(field("tokenizer.ggml.eos_token_id")),
    )  # fmt: skip


def safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a .safetensors file (names, dtypes, shapes), read without loading a weight."""
    try:
        with open(path, "rb") as handle:
            (size,) = struct.unpack("<Q", handle.read(8))
            if size > 100 * 2**20:
                raise ValueError(f"header of {size} bytes")
            header = json.loads(handle.read(size))
    except (OSError, struct.error, ValueError) as err:
        raise InvalidModel(f"{path} is not a readable safetensors file: {err}") from None
    header.pop("__metadata__", None)
    return dict(header)


def hf_facts(folder: Path) -> LlmFacts:
    """The facts of a Hugging Face folder from config.json, the safetensors headers and the tokenizer files."""
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise InvalidModel(f"{folder}/config.json is missing or not JSON: {err}") from None
    model_type = str(config.get("model_type", ""))
    arch = check_architecture(HF_TO_GGUF.get(model_type, model_type), folder)
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        raise InvalidModel(f"{folder} has no *.safetensors weights (pickled .bin weights are never loaded)")
    tokenizer = next((n for n in ("tokenizer.json", "tokenizer.model") if (folder / n).is_file()), None)
    if tokenizer is None:
        raise InvalidModel(f"{folder} has no tokenizer (tokenizer.json or tokenizer.model)")
    parameters, dtypes = 0, Counter[str]()
    for path in weights:
        for tensor in safetensors_header(path).values():
            count = 1
            for dim in tensor["shape"]:
                count *= int(dim)
            parameters += count
            dtypes[tensor["dtype"]] += 1
    tokenizer_config = folder / "tokenizer_config.json"
    special = json.loads(tokenizer_config.read_text()) if tokenizer_config.is_file() else {}
    template = (
        (folder / "chat_template.jinja").is_file()
        or (folder / "chat_template.json").is_file()
        or ("chat_template" in special)
    )
    heads = int(config["num_attention_heads"])
    return LlmFacts(
        architecture=arch, layers=int(config["num_hidden_layers"]), hidden=int(config["hidden_size"]), heads=heads,
        kv_heads=int(config.get("num_key_value_heads") or heads),
        head_dim=int(config.get("head_dim") or config["hidden_size"] // heads), vocab=int(config["vocab_size"]),
        context=int(config.get("max_position_embeddings", 0)), parameters=parameters,
        layout=dtypes.most_common(1)[0][0], tensor_types=dict(dtypes),
        sliding_window=int(config.get("sliding_window") or 0) if config.get("use_sliding_window", True) else 0,
        tied_embeddings=bool(config.get("tie_word_embeddings", False)), chat_template=bool(template),
        tokenizer=tokenizer, bos_token=token_text(special.get("bos_token")),
        eos_token=token_text(special.get("eos_token")),
    )  # fmt: skip


def token_text(entry: Any) -> str:
    """A special token as tokenizer_config.json writes it (a string, or a dict with its content)."""
    return str(entry.get("content", "")) if isinstance(entry, dict) else str(entry or "")


def is_hf_folder(path: Path) -> bool:
    """True for a folder whose config.json names a generative model (an encoder folder is not an LLM)."""
    config = path / "config.json"
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text())
    except (OSError, json.JSONDecodeError):
        return True  # an LLM folder with a broken config: hf_facts says what is wrong
    heads = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")  # a generative head, supported or not
    return data.get("model_type") in HF_TO_GGUF or any(str(a).endswith(heads) for a in data.get("architectures") or [])


def source_kind(path: Path) -> str:
    """gguf or hf; ModelNotFound for a path that is neither."""
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ModelNotFound(f"GGUF file not found: {path}")
        return "gguf"
    if path.is_dir() and is_hf_folder(path):
        return "hf"
    raise ModelNotFound(f"{path} is neither a .gguf file nor a Hugging Face folder with config.json")


def facts_of(path: Path) -> LlmFacts:
    """The facts of a GGUF file or a Hugging Face folder."""
    return gguf_facts(path) if source_kind(path) == "gguf" else hf_facts(path)


def source_sha256(path: Path) -> str:
    """sha256 of a GGUF file, or of a folder's config, tokenizer and weight files (names and contents); hashed once
    per process while the files keep their size and modification time (every command asks more than once)."""
    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file() and p.suffix in
                                                 (".json", ".safetensors", ".model", ".jinja"))  # fmt: skip
    return files_sha256(tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))


@functools.lru_cache(maxsize=16)
def files_sha256(files: tuple[tuple[str, int, int], ...]) -> str:
    """sha256 over (path, size, mtime) files' names and contents."""
    digest = hashlib.sha256()
    for name, _, _ in files:
        digest.update(Path(name).name.encode())
        with open(name, "rb") as handle:
            while block := handle.read(2**22):
                digest.update(block)
    return digest.hexdigest()
