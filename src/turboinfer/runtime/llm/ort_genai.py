"""ONNX Runtime GenAI: a decoder exported by its model builder (FP32, or INT8 / 4-bit weights as MatMulNBits)
with past/present KV inputs, driven step by step through the shared decode loop (so every engine samples, stops
and streams alike, and teacher forcing reads the logits of every position)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from turboinfer.core.errors import InvalidModel, MissingExtra
from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult, OnText, decode


def import_ort_genai() -> Any:
    """The onnxruntime_genai module, or MissingExtra naming the extra."""
    try:
        import onnxruntime_genai
    except ImportError:
        raise MissingExtra("onnxruntime-genai", "llm") from None
    return onnxruntime_genai


class OgStream:
    """One sequence in an onnxruntime_genai Generator (its KV cache lives inside)."""

    def __init__(self, owner: OrtGenAiGenerator, ids: list[int]) -> None:
        og = owner.og
        params = og.GeneratorParams(owner.model)
        params.set_search_options(max_length=owner.context, batch_size=1)
        self._generator = og.Generator(owner.model, params)
        self._generator.append_tokens(np.asarray([ids], dtype=np.int32))

    def logits(self) -> np.ndarray:
        """Scores of the next token."""
        return np.asarray(self._generator.get_logits())[0, -1]

    def append(self, token: int) -> None:
        """One decode step through the cache."""
        self._generator.append_tokens(np.asarray([[token]], dtype=np.int32))


class OrtGenAiGenerator:
    """A Generator on an ONNX Runtime GenAI model folder (genai_config.json + model.onnx)."""

    engine = "ort-genai"

    def __init__(self, folder: Path, threads: int = 0) -> None:
        self.og = import_ort_genai()
        if not (folder / "genai_config.json").is_file():
            raise InvalidModel(f"{folder} has no genai_config.json: not an ONNX Runtime GenAI model")
        config_data = json.loads((folder / "genai_config.json").read_text())
        start = time.perf_counter()
        config = self.og.Config(str(folder))
        if threads:
            config.overlay(json.dumps({"model": {"decoder": {"session_options": {"intra_op_num_threads": threads}}}}))
        try:
            self.model = self.og.Model(config)
        except Exception as err:  # onnxruntime_genai raises RuntimeError with the ORT message
            raise InvalidModel(f"ONNX Runtime GenAI cannot load {folder}: {str(err).splitlines()[0][:200]}") from None
        self.load_s = time.perf_counter() - start
        self.tokenizer = self.og.Tokenizer(self.model)
        self.text = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.folder, self.threads = folder, threads
        self.context = int(config_data["model"]["context_length"])
        eos = config_data["model"]["eos_token_id"]
        self.eos = frozenset(eos if isinstance(eos, list) else [eos])
        self.precision = precision_of(folder)

    def tokenize(self, text: str) -> list[int]:
        """Token ids of text, by the tokenizer.json the builder copied (with its post-processor: ONNX Runtime
        GenAI's own tokenizer leaves out the BOS token that Gemma needs)."""
        return list(self.text.encode(text).ids)

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of token ids."""
        return str(self.text.decode(list(tokens), skip_special_tokens=True))

    def chat(self, messages: list[dict[str, str]]) -> str:
        """A conversation rendered by the model's chat template, ready for the assistant's turn."""
        return str(self.tokenizer.apply_chat_template(json.dumps(messages), add_generation_prompt=True))

    def start(self, ids: list[int]) -> OgStream:
        """Prefill: the stream whose logits() are the first generated token's."""
        return OgStream(self, ids)

    def teacher_forced(self, ids: Sequence[int]) -> np.ndarray:
        """Next-token logits [len(ids), vocab] at every position: the prefix fed one token at a time through the
        cache (the engine returns only the last position's logits)."""
        stream = OgStream(self, [int(ids[0])])
        rows = [stream.logits()]
        for token in ids[1:]:
            stream.append(int(token))
            rows.append(stream.logits())
        return np.stack(rows)

    def generate(self, request: GenerationRequest, on_text: OnText | None = None) -> GenerationResult:
        """Continue the prompt through the shared decode loop."""
        return decode(self, self.start, request, on_text)

    def describe(self) -> dict[str, Any]:
        """Engine, weight precision, threads."""
        return {"engine": self.engine, "weights": self.precision, "kv_cache": "fp32",
                "threads": self.threads or "default", "folder": str(self.folder)}  # fmt: skip


def precision_of(folder: Path) -> str:
    """The weight precision a model-builder folder was written at (from its folder name, else "unknown")."""
    name = folder.name
    return next((p for p in ("int4", "int8", "fp32", "fp16") if name.endswith(p)), "unknown")
