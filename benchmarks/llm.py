"""Decoder-LLM engines side by side in one run → markdown for docs/benchmarks.md.

Run: .venv/bin/pip install llama-cpp-python   # the peer: a source build, about 6 minutes on 2 cores
     .venv/bin/python benchmarks/llm.py [engines|streams|cache ...]
- engines: llama-bench style pp512 and tg128 (after a 16-token prompt) with 95% CIs, 2 threads: llama.cpp on the
  GGUF as shipped, OpenVINO GenAI (continuous-batching pipeline, as turboinfer serves it) on the Q8_0 GGUF and on
  the shipped Q4_1, ONNX Runtime GenAI at fp32 / int8 / int4, each next to the bandwidth bound of its weights.
- streams: aggregate output tok/s of 16 streams (16 distinct 512-token windows of real prose, 128 new tokens
  each): OpenVINO GenAI's LLMPipeline with the 16 prompts in one generate (the issue's reference) against
  turboinfer's continuous-batching engine, both on the Q8_0 GGUF.
- cache: transformers decode tok/s with and without its KV cache after a 512-token prompt.
- fidelity: each engine and weight layout against the transformers oracle on held-out prose (8 prompts of 48
  tokens, 32 greedy tokens each; teacher-forced metrics on 256 tokens where the engine exposes logits).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from turboinfer.core.settings import Settings
from turboinfer.hardware.peaks import memory_bandwidth_gbps
from turboinfer.llm.card import build_llm, gguf_path, llm_entry, openvino_gguf, openvino_weights
from turboinfer.llm.prose import Prose
from turboinfer.llm.speed import GenBenchConfig, bench_generator
from turboinfer.llm.variant import GeneratorVariant, open_generator
from turboinfer.optimize.generation import fidelity_of
from turboinfer.profile.generation import GenProfileRequest, cache_gain
from turboinfer.runtime.llm.generate import GenerationRequest, GenerationResult, OnText, TextAssembler, prompt_ids

THREADS = 2
CONFIG = GenBenchConfig(prompt=512, generate=128, depths=(16,), repeats=3)


class LlamaCpp:
    """llama.cpp (llama-cpp-python) as a Generator, for this benchmark only: greedy, timed per token."""

    engine = "llama.cpp"

    def __init__(self, path: str, threads: int) -> None:
        from llama_cpp import Llama

        self.llm = Llama(model_path=path, n_ctx=4096, n_threads=threads, n_threads_batch=threads, n_batch=512,
                         verbose=False)  # fmt: skip
        self.context, self.eos = 4096, frozenset([self.llm.token_eos()])

    def tokenize(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode(), add_bos=False, special=True))

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self.llm.detokenize(list(tokens)).decode("utf-8", errors="replace")

    def generate(self, request: GenerationRequest, on_text: OnText | None = None) -> GenerationResult:
        ids = prompt_ids(self, request)
        begin = time.perf_counter()
        self.llm.reset()  # no prompt cache between requests
        tokens, times = [], []
        text = TextAssembler(self.detokenize, ())
        for token in self.llm.generate(ids, temp=0.0, reset=True):
            times.append(time.perf_counter() - begin)
            tokens.append(int(token))
            text.add(int(token))
            if len(tokens) >= request.max_tokens:
                break
        total = time.perf_counter() - begin
        return GenerationResult(tokens, text.sent, "length", len(ids), times[0], times, total)

    def describe(self) -> dict[str, Any]:
        import llama_cpp

        return {"engine": "llama.cpp", "weights": "q4_1 (the GGUF as shipped)", "version": llama_cpp.__version__}


def llamacpp_problem(gguf: str) -> str:
    """Why llama.cpp cannot be measured here ("" when it can): not installed, or crashing on a tiny completion
    (tried in a child process, so that a crash in its native code cannot end this benchmark)."""
    probe = (
        "import sys; from llama_cpp import Llama; Llama(model_path=sys.argv[1], n_ctx=4096, n_batch=512, "
        "n_threads=2, verbose=False).create_completion('word ' * 500, max_tokens=4)"
    )  # as the benchmark runs it
    done = subprocess.run([sys.executable, "-c", probe, gguf], capture_output=True, text=True, timeout=300)
    if done.returncode == 0:
        return ""
    if "No module named 'llama_cpp'" in done.stderr:
        return "not installed (`pip install llama-cpp-python`)"
    return f"crashed on a 500-word prompt (exit code {done.returncode})"


def engines(settings: Settings) -> None:
    card = build_llm("smollm2-135m", settings)
    bandwidth = memory_bandwidth_gbps(THREADS).value
    print(f"#### Engines: pp{CONFIG.prompt} and tg{CONFIG.generate}, {THREADS} threads, median (95% CI) of "
          f"{CONFIG.repeats}; memory bandwidth {bandwidth:.1f} GB/s measured\n")  # fmt: skip
    print("| engine | weights | pp512 tok/s | tg128 tok/s | weight-bandwidth bound tok/s | tg / bound |\n"
          + "| --- " * 6 + "|")  # fmt: skip
    runs: list[tuple[str, str, Any]] = []
    gguf = str(gguf_path(llm_entry(card.name)))
    problem = llamacpp_problem(gguf)
    if problem:
        print(f"| llama.cpp (llama-cpp-python) | q4_1 | {problem} | | | |")
    else:
        runs.append(("llama.cpp (llama-cpp-python)", "q4_1", LlamaCpp(gguf, THREADS)))
    for weights in openvino_weights(card):
        variant = GeneratorVariant(card.name, weights=weights, threads=THREADS)
        runs.append((f"OpenVINO GenAI {weights}{' (what turboinfer serves)' if weights == 'q8_0' else ''}", weights,
                     open_generator(variant, settings)))  # fmt: skip
    for weights in ("fp32", "int8", "int4"):
        variant = GeneratorVariant(card.name, "ort-genai", weights, threads=THREADS)
        runs.append((f"ONNX Runtime GenAI {weights}", weights, open_generator(variant, settings)))
    for label, weights, generator in runs:
        result = bench_generator(label, generator, CONFIG).summary()
        bound = bandwidth * 1e9 / card.weight_bytes(weights)
        tg = result.tg[CONFIG.depths[0]]
        print(f"| {label} | {weights} | {result.pp.text()} | {tg.text()} | {bound:.0f} | {tg.median / bound:.2f} |",
              flush=True)  # fmt: skip
        del generator
    print()


def streams(settings: Settings, count: int = 16) -> None:
    import openvino_genai

    card = build_llm("smollm2-135m", settings)
    ours = open_generator(GeneratorVariant(card.name, threads=THREADS), settings)
    prose = Prose(ours)
    prompts = [ours.detokenize(prose.window(512)) for _ in range(count)]  # text: LLMPipeline takes strings
    requests = [GenerationRequest(p, max_tokens=128, ignore_eos=True) for p in prompts]
    ours.generate_many(requests[:2])  # warm-up
    begin = time.perf_counter()
    tokens = sum(r.completion_tokens for r in ours.generate_many(requests))
    ours_rate = tokens / (time.perf_counter() - begin)
    del ours
    pipe = openvino_genai.LLMPipeline(str(openvino_gguf(card, "q8_0")), "CPU", INFERENCE_NUM_THREADS=THREADS)
    config = openvino_genai.GenerationConfig()
    config.max_new_tokens, config.ignore_eos = 128, True
    pipe.generate(prompts[:2], config)  # warm-up
    begin = time.perf_counter()
    pipe.generate(prompts, config)
    raw_rate = count * 128 / (time.perf_counter() - begin)
    print(f"#### {count} streams, 512-token prompts, 128 new tokens each, {THREADS} threads, Q8_0 GGUF\n")
    print("| engine | output tok/s |\n| --- | --- |")
    print(f"| OpenVINO GenAI LLMPipeline, {count} prompts in one generate | {raw_rate:.1f} |")
    print(f"| turboinfer's engine (ContinuousBatchingPipeline, generate_many) | {ours_rate:.1f} |")
    print(f"\nRatio: {ours_rate / raw_rate:.2f}.\n")


def cache(settings: Settings) -> None:
    card = build_llm("smollm2-135m", settings)
    oracle = open_generator(GeneratorVariant(card.name, "transformers", "fp32", threads=THREADS), settings)
    request = GenProfileRequest(generate=128, no_cache_tokens=16)
    gain = cache_gain(GeneratorVariant(card.name, threads=THREADS), settings, Prose(oracle), request, lambda _: None)
    print("#### The KV cache: transformers eager FP32 decode after a 512-token prompt\n")
    print(
        f"With the cache {gain.with_cache:.1f} tok/s (128 new tokens), without {gain.without_cache:.2f} "
        f"tok/s (16 new tokens; every step recomputes the whole sequence): {gain.gain:.0f}×.\n"
    )


def fidelity(settings: Settings) -> None:
    card = build_llm("smollm2-135m", settings)
    oracle = open_generator(GeneratorVariant(card.name, "transformers", "fp32", threads=THREADS), settings)
    prose = Prose(oracle)
    prose.window(4096)  # past the benchmarks' prompts, as optimize does
    text, prompts = list(prose.window(256)), [prose.window(48) for _ in range(8)]
    print("#### Fidelity against the oracle (transformers FP32 on the de-quantized GGUF)\n")
    print("| engine | weights | teacher-forced agreement | perplexity ratio | greedy-path agreement | "
          "greedy exact match, tokens of 32 |\n" + "| --- " * 6 + "|")  # fmt: skip
    variants = [GeneratorVariant(card.name, weights=w, threads=THREADS) for w in openvino_weights(card)]
    variants += [GeneratorVariant(card.name, "ort-genai", w, threads=THREADS) for w in ("int8", "int4")]
    for variant in variants:
        f = fidelity_of(open_generator(variant, settings), oracle, text, prompts)
        forced = (f"{f['next_token_agreement']:.3f} | {f['perplexity_ratio']:.3f}" if "next_token_agreement" in f
                  else "— (no logits) | —")  # fmt: skip
        print(f"| {variant.engine} | {variant.weights} | {forced} | {f['path_agreement']:.3f} | "
              f"{f['greedy_exact_match_tokens']:.1f} |", flush=True)  # fmt: skip
    print()


def main() -> None:
    settings = Settings.from_env(os.environ)
    parts = sys.argv[1:] or ["engines", "streams", "cache", "fidelity"]
    for part in parts:
        {"engines": engines, "streams": streams, "cache": cache, "fidelity": fidelity}[part](settings)


if __name__ == "__main__":
    main()
