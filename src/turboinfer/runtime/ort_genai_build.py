"""ONNX Runtime GenAI's model builder, run as `python -m turboinfer.runtime.ort_genai_build ARGS` (the builder's own
arguments). One adaptation, in this child process only: transformers 5 reads a Gemma 3 config's RoPE as one entry
per attention type (`rope_parameters: {"full_attention": …, "sliding_attention": …}`), while the builder (0.18)
expects the flat form it had before (`rope_theta`, `rope_local_base_freq`, one `rope_parameters`) and otherwise
stops with KeyError 'rope_type'. The config is handed to it in that form; nothing else changes."""

from __future__ import annotations

import runpy
import sys
from typing import Any


def flat_rope(config: Any) -> Any:
    """The config with per-attention-type RoPE parameters written the flat way (global theta, local base)."""
    rope = getattr(config, "rope_parameters", None)
    if isinstance(rope, dict) and isinstance(rope.get("full_attention"), dict):
        full = rope["full_attention"]
        local = rope.get("sliding_attention") or full
        config.rope_theta, config.rope_local_base_freq = full["rope_theta"], local["rope_theta"]
        config.rope_parameters = dict(full)
    return config


def main() -> None:
    """Run the builder with its configs read through flat_rope."""
    import transformers

    read = transformers.AutoConfig.from_pretrained
    transformers.AutoConfig.from_pretrained = lambda *a, **k: flat_rope(read(*a, **k))
    sys.argv = ["onnxruntime_genai.models.builder", *sys.argv[1:]]
    runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__")


if __name__ == "__main__":
    main()
