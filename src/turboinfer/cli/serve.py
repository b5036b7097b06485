"""`turboinfer serve`: KServe V2 for ONNX models, the OpenAI API for LLMs (zoo LLMs, MODEL@ENGINE or the
.generator.json that optimize chose), on one server."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from turboinfer.cli import render
from turboinfer.cli.groups import grouped, option_group
from turboinfer.cli.options import Listening, int_list, settings
from turboinfer.core.settings import Settings
from turboinfer.llm.variant import is_llm
from turboinfer.models.variant import parse_variant
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.openai.scheduler import SchedulerConfig
from turboinfer.serve.run import LlmServing, build_server, llm_serving, run_app
from turboinfer.serve.split_config import SplitConfig
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.repository import ModelServing, model_serving, read_config, repository


@option_group("Batching (ONNX models)")
class Batching:
    """Dynamic batching of V2 requests; --queue bounds the LLMs' waiting requests too."""

    max_batch: Annotated[int, typer.Option(min=1)] = 8
    max_delay_ms: Annotated[float, typer.Option(min=0)] = 2.0
    queue: Annotated[
        int,
        typer.Option(
            min=0,
            help="Requests accepted and waiting, per model (LLMs: waiting when "
            "every stream is busy; 0 admits only into a free stream).",
        ),
    ] = 256
    instances: Annotated[int, typer.Option(min=1, help="Batches computed at once, per model.")] = 1
    preferred: Annotated[str, typer.Option(help="Batch sizes to close at without waiting, e.g. 4,8.")] = ""
    seq_bucket: Annotated[
        int, typer.Option(min=0, help="Text models: token counts that round up to the same multiple of this share "
                          "a batch, padded (0: any lengths).")
    ] = 32  # fmt: skip

    def batcher(self) -> BatcherConfig:
        """The batcher's config (BadParameter for a bad --preferred)."""
        sizes = int_list(self.preferred, "--preferred") if self.preferred else ()
        return BatcherConfig(self.max_batch, self.max_delay_ms / 1000, self.queue, self.instances, sizes,
                             self.seq_bucket)  # fmt: skip


@option_group("Second variant")
class Second:
    """A canary answering part of the traffic, or a shadow getting a copy of it (the first model named)."""

    canary: Annotated[str | None, typer.Option(help="A second variant answering --canary-share of the traffic.")] = None
    canary_share: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.1
    shadow: Annotated[str | None, typer.Option(help="A second variant getting a copy of all traffic, compared.")] = None

    def split(self) -> SplitConfig | None:
        """The traffic split these options ask for (BadParameter for both at once)."""
        if self.canary and self.shadow:
            raise typer.BadParameter("choose --canary or --shadow, not both", param_hint="--shadow")
        if self.canary:
            return SplitConfig("canary", self.canary_share)
        return SplitConfig("shadow") if self.shadow else None


@option_group("LLMs")
class Generation:
    """Continuous batching of LLM streams and the limits of one request."""

    streams: Annotated[int, typer.Option(min=1, help="LLMs: streams generated together (continuous batching).")] = 16
    kv_cache_gb: Annotated[float, typer.Option(min=0.01, help="LLMs: KV cache size, GiB (OpenVINO GenAI).")] = 1.0
    max_new_tokens: Annotated[int, typer.Option(min=1, help="LLMs: the most tokens one request may ask for.")] = 2048
    max_batched_tokens: Annotated[
        int,
        typer.Option(
            min=16,
            help="LLMs: tokens per engine step; a long prompt is prefilled in chunks of this "
            "size so running streams keep going.",
        ),
    ] = 256
    ttft_target_ms: Annotated[
        float,
        typer.Option(
            min=0,
            help="LLMs: refuse (429) at once a request predicted to wait longer than this for "
            "its first token, or to wait for a stream (0: off).",
        ),
    ] = 0.0
    request_timeout_s: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="LLMs: the deadline of a request that sets none (X-Request-Timeout-Ms), "
            "queue and generation included (504 past it).",
        ),
    ] = 600.0
    prompt_lookup: Annotated[
        int, typer.Option(min=0, max=16, help="LLMs on OpenVINO GenAI: draft this many tokens per step from n-grams of "
                          "the prompt (prompt-lookup decoding; greedy output unchanged; 0: off).")
    ] = 0  # fmt: skip

    def limits(self, queue: int) -> SchedulerConfig:
        """The scheduler's limits, with this many requests allowed to wait."""
        return SchedulerConfig(self.streams, queue, self.max_new_tokens, ttft_target_s=self.ttft_target_ms / 1000,
                               request_timeout_s=self.request_timeout_s)  # fmt: skip


@grouped
def serve(
    models: Annotated[
        list[str],
        typer.Argument(help="A repository folder of model cards, or models: zoo names, cards, MODEL@BACKEND."),
    ],
    listening: Listening,
    batching: Batching,
    second: Second,
    generation: Generation,
    config_path: Annotated[
        Path | None, typer.Option("--config", help="Per-model serving config (YAML/JSON); default REPO/serve.yaml.")
    ] = None,
    backend: Annotated[str, typer.Option(help="ort or openvino.")] = "ort",
    threads: Annotated[
        int, typer.Option(help="Intra-op threads per instance; 0 = a variant file's, else the runtime default.")
    ] = 0,
) -> None:
    """KServe V2 server with dynamic batching, an image route, health probes and Prometheus metrics; LLMs get
    OpenAI-compatible routes (/v1/chat/completions, /v1/completions, streaming) with continuous batching."""
    listening.configure_logging()
    second.split()  # refuses --canary with --shadow before anything opens
    env = settings()
    batcher = batching.batcher()
    llm_first = is_llm(models[0])  # --canary / --shadow belong to the first model named
    llms = llm_servings([m for m in models if is_llm(m)], env, threads, generation.limits(batching.queue),
                        generation, second if llm_first else Second())  # fmt: skip
    onnx = [m for m in models if not is_llm(m)]
    if onnx and batching.queue < 1:
        raise typer.BadParameter("ONNX models need a queue of at least 1", param_hint="--queue")
    served = onnx_servings(onnx, env, (backend, threads), config_path, batcher, Second() if llm_first else second)
    config = ServeConfig(batcher, int(listening.max_body_mb * 2**20), listening.overload_status)
    server = build_server(served, config, llms)
    render.serving(listening.host, listening.port, served, llms)
    run_app(server, server.app(), listening.host, listening.port)


def llm_servings(names: list[str], env: Settings, threads: int, limits: SchedulerConfig, generation: Generation,
                 second: Second) -> list[LlmServing]:  # fmt: skip
    """Each LLM opened for serving; the first one gets the second variant, when one is asked for."""
    llms = [llm_serving(m, env, limits, threads, generation.kv_cache_gb, generation.max_batched_tokens,
                        generation.prompt_lookup) for m in names]  # fmt: skip
    split = second.split()
    if llms and split is not None:
        other = llm_serving(second.canary or second.shadow or "", env, limits, threads, generation.kv_cache_gb,
                            generation.max_batched_tokens)  # fmt: skip
        llms[0] = replace(llms[0], second=other, split=split)
    return llms


def onnx_servings(models: list[str], env: Settings, runtime: tuple[str, int], config_path: Path | None,
                  batcher: BatcherConfig, second: Second) -> list[ModelServing]:  # fmt: skip
    """The ONNX models to serve: a repository folder (with its serve.yaml) or models named one by one, the first
    with the second variant when one is asked for."""
    if not models:
        return []
    folder = Path(models[0])
    if len(models) == 1 and folder.is_dir():
        default_config = folder / "serve.yaml"
        path = config_path or (default_config if default_config.is_file() else None)
        return repository(folder, env, read_config(path) if path else {}, batcher)
    split = ({"canary": second.canary, "canary_share": second.canary_share} if second.canary
             else {"shadow": second.shadow} if second.shadow else {})  # fmt: skip
    variants = [parse_variant(m, env, *runtime) for m in models]
    for variant in variants:
        render.inferred(variant.card)
    return [model_serving(v, split if i == 0 else {}, batcher, env) for i, v in enumerate(variants)]
