"""ONNX Runtime GenAI's model builder, run as `python -m turboinfer.runtime.llm.ort_genai_build ARGS` (the builder's own
arguments). Two adaptations of the config it reads, in this child process only, nothing else changed:
- transformers 5 reads a Gemma 3 config's RoPE as one entry per attention type (`rope_parameters:
  {"full_attention": …, "sliding_attention": …}`), while the builder (0.18) expects the flat form it had before
  (`rope_theta`, `rope_local_base_freq`, one `rope_parameters`) and otherwise stops with KeyError 'rope_type';
- a Phi-3 config de-quantized from a GGUF keeps transformers' default `original_max_position_embeddings` (4096)
  beside the file's context, and the builder then takes it for a LongRoPE model (KeyError 'multi_cache') though its
  RoPE is plain: with plain RoPE the two are made equal."""

from __future__ import annotations

import runpy
import sys
from typing import Any


def builder_view(config: Any) -> Any:
    """The config as the builder reads it: per-attention-type RoPE parameters written the flat way (global theta,
    local base); a plain-RoPE context that is not mistaken for LongRoPE."""
    rope = getattr(config, "rope_parameters", None)
    if isinstance(rope, dict) and isinstance(rope.get("full_attention"), dict):
        full = rope["full_attention"]
        local = rope.get("sliding_attention") or full
        config.rope_theta, config.rope_local_base_freq = full["rope_theta"], local["rope_theta"]
        config.rope_parameters = rope = dict(full)
    plain = not isinstance(rope, dict) or rope.get("rope_type", "default") == "default"
    if plain and getattr(config, "original_max_position_embeddings", None) is not None:
        config.original_max_position_embeddings = config.max_position_embeddings
    return config


def main() -> None:
    """Run the builder with its configs read through builder_view."""
    import transformers

    read = transformers.AutoConfig.from_pretrained
    transformers.AutoConfig.from_pretrained = lambda *a, **k: builder_view(read(*a, **k))
    sys.argv = ["onnxruntime_genai.models.builder", *sys.argv[1:]]
    runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__")


if __name__ == "__main__":
    main()
