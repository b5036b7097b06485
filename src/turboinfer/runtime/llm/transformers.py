"""transformers eager (the torch extra) as the oracle: the reference logits every other engine is checked against,
decoding with or without the KV cache, and the safetensors export other engines build from."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.errors import InvalidModel, MissingExtra
from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult, OnText, decode
from turboinfer.runtime.torch import import_torch


def import_transformers() -> Any:
    """The transformers module (GGUF loading also needs gguf and accelerate), or MissingExtra."""
    try:
        import transformers
    except ImportError:
        raise MissingExtra("transformers", "torch") from None
    return transformers


def load(source: Path) -> tuple[Any, Any]:
    """(model, tokenizer) in FP32 from a GGUF file (de-quantized) or a safetensors folder."""
    torch, transformers = import_torch(), import_transformers()
    transformers.utils.logging.disable_progress_bar()  # the CLI draws its own progress
    folder, gguf = (source.parent, source.name) if source.suffix == ".gguf" else (source, None)
    kwargs = {"gguf_file": gguf} if gguf else {}
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **kwargs)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kwargs)
    except (OSError, ValueError) as err:
        raise InvalidModel(f"transformers cannot load {source}: {str(err).splitlines()[0][:200]}") from None
    return model.eval(), tokenizer


def export_safetensors(gguf: Path, out: Path) -> dict[str, int]:
    """Write the GGUF's de-quantized FP32 weights, tokenizer and chat template as a safetensors folder; return the
    architecture facts (layers, hidden, heads, kv_heads, head_dim, vocab, context, parameters)."""
    model, tokenizer = load(gguf)
    model.hf_quantizer = None  # "quantized with gguf": save_pretrained refuses until this is cleared
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    use_tokenizer_json(out)
    c = model.config
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return {"layers": c.num_hidden_layers, "hidden": c.hidden_size, "heads": c.num_attention_heads,
            "kv_heads": c.num_key_value_heads, "head_dim": head_dim, "vocab": c.vocab_size,
            "context": c.max_position_embeddings, "parameters": sum(p.numel() for p in model.parameters())}  # fmt: skip


def use_tokenizer_json(folder: Path) -> None:
    """Make the folder's tokenizer load as the tokenizer.json it saved: a GGUF's tokenizer is saved under a class
    name that, loaded again, may pre-tokenize differently (a byte-level BPE saved as CodeLlamaTokenizer turned every
    space into an unknown token in transformers 5.5)."""
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(config, indent=2))


class CachedStream:
    """One sequence through the model with a DynamicCache: each step feeds one token."""

    def __init__(self, generator: TransformersGenerator, ids: list[int]) -> None:
        self._g = generator
        self._cache = generator.transformers.DynamicCache()
        self._logits = generator.forward(ids, self._cache)[-1]

    def logits(self) -> np.ndarray:
        """Scores of the next token."""
        return self._logits

    def append(self, token: int) -> None:
        """One decode step through the cache."""
        self._logits = self._g.forward([token], self._cache)[-1]


class RecomputeStream:
    """One sequence without a KV cache: every step runs the whole sequence again (what the cache saves)."""

    def __init__(self, generator: TransformersGenerator, ids: list[int]) -> None:
        self._g, self._ids = generator, list(ids)
        self._logits = generator.forward(self._ids)[-1]

    def logits(self) -> np.ndarray:
        """Scores of the next token."""
        return self._logits

    def append(self, token: int) -> None:
        """Recompute the sequence with the new token."""
        self._ids.append(token)
        self._logits = self._g.forward(self._ids)[-1]


class TransformersGenerator:
    """A Generator on transformers eager FP32, step by step through the shared decode loop."""

    engine = "transformers"

    def __init__(self, source: Path, threads: int = 0, use_cache: bool = True) -> None:
        self.torch, self.transformers = import_torch(), import_transformers()
        if threads:
            self.torch.set_num_threads(threads)
        start = time.perf_counter()
        self.model, self.tokenizer = load(source)
        self.load_s = time.perf_counter() - start
        self.use_cache, self.threads, self.source = use_cache, threads, source
        self.context = int(self.model.config.max_position_embeddings)
        eos = self.model.generation_config.eos_token_id
        self.eos = frozenset(
            eos if isinstance(eos, list) else [eos if eos is not None else self.tokenizer.eos_token_id]
        )

    def tokenize(self, text: str) -> list[int]:
        """Token ids of text."""
        return list(self.tokenizer(text).input_ids)

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of token ids."""
        return str(self.tokenizer.decode(list(tokens), skip_special_tokens=True))

    def chat(self, messages: list[dict[str, str]]) -> str:
        """A conversation rendered by the model's chat template, ready for the assistant's turn."""
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def forward(self, ids: Sequence[int], cache: Any = None) -> np.ndarray:
        """Logits [len(ids), vocab] of a forward pass (through the cache when given one)."""
        with self.torch.inference_mode():
            tensor = self.torch.tensor([list(ids)], dtype=self.torch.long)
            out = self.model(tensor, cache=cache, use_cache=cache is not None)
        return out.logits[0].float().numpy()

    def teacher_forced(self, ids: Sequence[int]) -> np.ndarray:
        """The oracle's next-token logits [len(ids), vocab] at every position of a text, in one forward pass."""
        return self.forward(ids)

    def start(self, ids: list[int]) -> CachedStream | RecomputeStream:
        """Prefill: the stream whose logits() are the first generated token's."""
        return CachedStream(self, ids) if self.use_cache else RecomputeStream(self, ids)

    def generate(self, request: GenerationRequest, on_text: OnText | None = None) -> GenerationResult:
        """Continue the prompt through the shared decode loop."""
        return decode(self, self.start, request, on_text)

    def describe(self) -> dict[str, Any]:
        """Engine, precision, cache, threads."""
        return {"engine": self.engine, "weights": "fp32 (de-quantized from the GGUF)", "kv_cache": "fp32" if
                self.use_cache else "none (recomputes every step)", "threads": self.torch.get_num_threads(),
                "transformers": self.transformers.__version__}  # fmt: skip
