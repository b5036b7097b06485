"""Decoder LLMs a user would bring, written here with seeded random weights: a transformers config of two layers per
architecture family, saved as a Hugging Face folder (config.json, model.safetensors, the real SmolLM2 tokenizer
and its chat template) and, through llama.cpp's own converter, as GGUF files (re-quantized to other layouts by
llm.gguf_convert)."""

from __future__ import annotations

import json
from pathlib import Path

SIZES = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 2048}  # fmt: skip
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {"tie_word_embeddings": True}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"tie_word_embeddings": True, "head_dim": 128}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"sliding_window": 32, "attn_logit_softcapping": 50.0,
                                                     "final_logit_softcapping": 30.0, "query_pre_attn_scalar": 16}),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", {"sliding_window": 32, "query_pre_attn_scalar": 16,
                                                         "layer_types": ["sliding_attention", "full_attention"]}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {"original_max_position_embeddings": 2048, "pad_token_id": 0}),
}  # fmt: skip
"""Family → (transformers config class, model class, what the family adds: tied embeddings, sliding windows,
soft-capping, QK norms come with the class). Qwen3 keeps its real head size, 128: transformers' GGUF reader
assumes it for every Qwen3 file."""


def smollm2_tokenizer(out: Path) -> Path:
    """The real SmolLM2 tokenizer (byte-level BPE, 49,152 tokens) and chat template, from the zoo's GGUF."""
    from transformers import AutoTokenizer

    from turboinfer.llm.card import gguf_path, llm_entry

    if not (out / "tokenizer.json").is_file():
        gguf = gguf_path(llm_entry("smollm2-135m"))
        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(out)
    return out


def hf_folder(family: str, out: Path, tokenizer: Path, seed: int = 0) -> Path:
    """A two-layer random-weight model of the family with the SmolLM2 tokenizer, saved as a Hugging Face folder."""
    import torch
    import transformers

    config_class, model_class, extra = FAMILIES[family]
    vocab = len(json.loads((tokenizer / "tokenizer.json").read_text())["model"]["vocab"])
    ids = {"bos_token_id": 1, "eos_token_id": 2, **({"pad_token_id": 2} if family != "phi3" else {})}
    config = getattr(transformers, config_class)(vocab_size=vocab, **{**SIZES, **ids, **extra})
    torch.manual_seed(seed)
    model = getattr(transformers, model_class)(config).eval()
    with torch.no_grad():  # random weights large enough that the next token depends on the context
        for name, param in model.named_parameters():
            if param.ndim == 2:
                param.normal_(0, 0.5 if "embed" in name else 0.2)
    model.save_pretrained(out)
    for name in ("tokenizer.json", "special_tokens_map.json", "chat_template.jinja"):
        if (tokenizer / name).is_file():
            (out / name).write_bytes((tokenizer / name).read_bytes())
    # the class a user's folder names: Phi-4's GPT-2 tokenizer for phi3 (llama.cpp's converter reads a GPT-2 vocab
    # for phi3 only then), the tokenizer.json as it is for the rest
    tokenizer_config = json.loads((tokenizer / "tokenizer_config.json").read_text())
    tokenizer_config["tokenizer_class"] = "GPT2Tokenizer" if family == "phi3" else "PreTrainedTokenizerFast"
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2))
    return out


class OwnLlms:
    """The tiny models, made on first use and kept for the session: `folder(family)` and `gguf(family, quant)`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tokenizer = smollm2_tokenizer(root / "tokenizer")

    def folder(self, family: str) -> Path:
        """The family's Hugging Face folder."""
        out = self.root / family
        return out if (out / "config.json").is_file() else hf_folder(family, out, self.tokenizer)

    def gguf(self, family: str, quant: str = "f32") -> Path:
        """The family's GGUF in a layout: f32 from llama.cpp's converter, others re-quantized from it."""
        from turboinfer.llm.gguf_convert import folder_to_gguf, requantize_gguf

        out = self.root / f"{family}.{quant}.gguf"
        if not out.is_file():
            f32 = self.root / f"{family}.f32.gguf"
            if not f32.is_file():
                folder_to_gguf(self.folder(family), f32, "f32")
            if quant != "f32":
                requantize_gguf(f32, out, quant)
        return out
