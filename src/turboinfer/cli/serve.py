"""`turboinfer serve`: KServe V2 for ONNX models, the OpenAI API for LLMs (zoo LLMs, MODEL@ENGINE or the
.generator.json that optimize chose), on one server."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from turboinfer.cli import render
from turboinfer.cli.options import (
    LogFormatOption,
    LogLevelOption,
    OverloadStatusOption,
    int_list,
    server_logging,
    settings,
)
from turboinfer.llm.variant import is_llm
from turboinfer.models.variant import parse_variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.openai.scheduler import SchedulerConfig
from turboinfer.serve.run import build_server, llm_serving, run_app
from turboinfer.serve.split_config import SplitConfig
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import model_serving, read_config, repository


def serve(
    models: Annotated[
        list[str],
        typer.Argument(help="A repository folder of model cards, or models: zoo names, cards, MODEL@BACKEND."),
    ],
    config_path: Annotated[
        Path | None, typer.Option("--config", help="Per-model serving config (YAML/JSON); default REPO/serve.yaml.")
    ] = None,
    host: Annotated[str, typer.Option(help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
    backend: Annotated[str, typer.Option(help="ort or openvino.")] = "ort",
    threads: Annotated[
        int, typer.Option(help="Intra-op threads per instance; 0 = a variant file's, else the runtime default.")
    ] = 0,
    max_batch: Annotated[int, typer.Option(min=1)] = 8,
    max_delay_ms: Annotated[float, typer.Option(min=0)] = 2.0,
    queue: Annotated[int, typer.Option(min=0, help="Requests accepted and waiting, per model (LLMs: waiting when "
                                       "every stream is busy; 0 admits only into a free stream).")] = 256,
    instances: Annotated[int, typer.Option(min=1, help="Batches computed at once, per model.")] = 1,
    preferred: Annotated[str, typer.Option(help="Batch sizes to close at without waiting, e.g. 4,8.")] = "",
    overload_status: OverloadStatusOption = 429,
    max_body_mb: Annotated[float, typer.Option(help="Largest request body, MiB.")] = 16.0,
    canary: Annotated[
        str | None, typer.Option(help="A second variant answering --canary-share of the traffic.")
    ] = None,
    canary_share: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.1,
    shadow: Annotated[
        str | None, typer.Option(help="A second variant getting a copy of all traffic, compared.")
    ] = None,
    seq_bucket: Annotated[
        int, typer.Option(min=0, help="Text models: token counts that round up to the same multiple of this share "
                          "a batch, padded (0: any lengths).")
    ] = 32,
    streams: Annotated[int, typer.Option(min=1, help="LLMs: streams generated together (continuous batching).")] = 16,
    kv_cache_gb: Annotated[float, typer.Option(min=0.01, help="LLMs: KV cache size, GiB (OpenVINO GenAI).")] = 1.0,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="LLMs: the most tokens one request may ask for.")] = 2048,
    max_batched_tokens: Annotated[
        int, typer.Option(min=16, help="LLMs: tokens per engine step; a long prompt is prefilled in chunks of this "
                          "size so running streams keep going.")
    ] = 256,
    ttft_target_ms: Annotated[
        float, typer.Option(min=0, help="LLMs: refuse (429) at once a request predicted to wait longer than this for "
                            "its first token, or to wait for a stream (0: off).")
    ] = 0.0,
    request_timeout_s: Annotated[
        float, typer.Option(min=0.1, help="LLMs: the deadline of a request that sets none (X-Request-Timeout-Ms), "
                            "queue and generation included (504 past it).")
    ] = 600.0,
    prompt_lookup: Annotated[
        int, typer.Option(min=0, max=16, help="LLMs on OpenVINO GenAI: draft this many tokens per step from n-grams of "
                          "the prompt (prompt-lookup decoding; greedy output unchanged; 0: off).")
    ] = 0,
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = "text",
) -> None:  # fmt: skip
    """KServe V2 server with dynamic batching, an image route, health probes and Prometheus metrics; LLMs get
    OpenAI-compatible routes (/v1/chat/completions, /v1/completions, streaming) with continuous batching."""
    server_logging(log_level, log_format)
    if canary and shadow:
        raise typer.BadParameter("choose --canary or --shadow, not both", param_hint="--shadow")
    env = settings()
    sizes = int_list(preferred, "--preferred") if preferred else ()
    batching = BatcherConfig(max_batch, max_delay_ms / 1000, queue, instances, sizes, seq_bucket)
    llm_first = is_llm(models[0])  # --canary / --shadow belong to the first model named
    llm_names = [m for m in models if is_llm(m)]
    models = [m for m in models if not is_llm(m)]
    if models and queue < 1:
        raise typer.BadParameter("ONNX models need a queue of at least 1", param_hint="--queue")
    limits = SchedulerConfig(streams, queue, max_new_tokens, ttft_target_s=ttft_target_ms / 1000,
                             request_timeout_s=request_timeout_s)  # fmt: skip
    llms = [llm_serving(m, env, limits, threads, kv_cache_gb, max_batched_tokens, prompt_lookup) for m in llm_names]
    if llm_first and (canary or shadow):
        second = llm_serving(canary or shadow or "", env, limits, threads, kv_cache_gb, max_batched_tokens)
        llms[0] = replace(llms[0], second=second, split=SplitConfig("canary" if canary else "shadow", canary_share))
        canary = shadow = None
    folder = Path(models[0]) if models else Path()
    if not models:
        served = []
    elif len(models) == 1 and folder.is_dir():
        default_config = folder / "serve.yaml"
        path = config_path or (default_config if default_config.is_file() else None)
        served = repository(folder, env, read_config(path) if path else {}, batching)
    else:
        split = {"canary": canary, "canary_share": canary_share} if canary else {"shadow": shadow} if shadow else {}
        variants = [parse_variant(m, env, backend, threads) for m in models]
        for variant in variants:
            render.inferred(variant.card)
        served = [model_serving(v, split if i == 0 else {}, batching, env) for i, v in enumerate(variants)]
    server = build_server(served, ServeConfig(batching, int(max_body_mb * 2**20), overload_status), llms)
    render.serving(host, port, served, llms)
    run_app(server, server.app(), host, port)
