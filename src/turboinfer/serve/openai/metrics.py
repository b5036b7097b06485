"""Prometheus metrics of the LLM routes, in seconds and tokens, on the server's registry. Each is named after its
vLLM counterpart so dashboards translate one to one:

| turboinfer | vLLM |
| --- | --- |
| turboinfer_llm_time_to_first_token_seconds | vllm:time_to_first_token_seconds |
| turboinfer_llm_inter_token_latency_seconds | vllm:inter_token_latency_seconds |
| turboinfer_llm_time_per_output_token_seconds | vllm:request_time_per_output_token_seconds |
| turboinfer_llm_e2e_request_latency_seconds | vllm:e2e_request_latency_seconds |
| turboinfer_llm_request_queue_time_seconds | vllm:request_queue_time_seconds |
| turboinfer_llm_request_prompt_tokens | vllm:request_prompt_tokens |
| turboinfer_llm_request_generation_tokens | vllm:request_generation_tokens |
| turboinfer_llm_prompt_tokens_total | vllm:prompt_tokens_total |
| turboinfer_llm_generation_tokens_total | vllm:generation_tokens_total |
| turboinfer_llm_requests_total{outcome} | vllm:request_success_total{finished_reason} (+ failures) |
| turboinfer_llm_requests_running / _waiting | vllm:num_requests_running / vllm:num_requests_waiting |
| turboinfer_llm_kv_cache_usage_ratio | vllm:kv_cache_usage_perc (0–1) |
| turboinfer_llm_prefix_cache_queries_total / _hits_total | vllm:prefix_cache_queries / _hits (tokens) |
| turboinfer_llm_engine_failures_total / _restarts_total | (none: vLLM's engine dies with its process) |
| turboinfer_llm_client_errors_total{param} | (none) |

TTFT counts from arrival (queue time included), as vLLM's does.
"""

from __future__ import annotations

import itertools

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from turboinfer.runtime.llm.generate import GenerationResult

TIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 20.0, 60.0)
TOKEN_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


class GenerationMetrics:
    """Every LLM metric, labelled by model."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r, m = registry, ["model"]

        def seconds(name: str, text: str) -> Histogram:
            return Histogram(f"turboinfer_llm_{name}_seconds", text, m, buckets=TIME_BUCKETS, registry=r)

        def tokens(name: str, text: str) -> Histogram:
            return Histogram(f"turboinfer_llm_request_{name}_tokens", text, m, buckets=TOKEN_BUCKETS, registry=r)

        self.ttft = seconds("time_to_first_token", "Arrival to the first generated token.")
        self.itl = seconds("inter_token_latency", "Time between consecutive generated tokens.")
        self.tpot = seconds("time_per_output_token", "Per request: (end − first token) / (tokens − 1).")
        self.e2e = seconds("e2e_request_latency", "Arrival to the last token.")
        self.queue_time = seconds("request_queue_time", "Arrival to joining the running batch.")
        self.prompt_length = tokens("prompt", "Prompt tokens per request.")
        self.generation_length = tokens("generation", "Generated tokens per request.")
        self.prompt_tokens = Counter("turboinfer_llm_prompt_tokens", "Prompt tokens prefilled.", m, registry=r)
        self.generation_tokens = Counter("turboinfer_llm_generation_tokens", "Tokens generated.", m, registry=r)
        self.requests = Counter("turboinfer_llm_requests", "LLM requests by outcome (stop, length, cancelled, "
                                "queue_full, invalid, deadline, error, ...).", [*m, "outcome"], registry=r)  # fmt: skip
        self.engine_failures = Counter("turboinfer_llm_engine_failures", "Engine failures (a failed step, a dead "
                                       "or hung engine process); each fails the requests inside it.", m,
                                       registry=r)  # fmt: skip
        self.engine_restarts = Counter("turboinfer_llm_engine_restarts", "Engine restarts after a failure.", m,
                                       registry=r)  # fmt: skip
        self.client_errors = Counter("turboinfer_llm_client_errors", "Requests refused (4xx) for a field they sent, by "
                                     "field ('' when no field is named).", [*m, "param"], registry=r)  # fmt: skip
        self.running = Gauge("turboinfer_llm_requests_running", "Requests in the engine's batch.", m, registry=r)
        self.waiting = Gauge("turboinfer_llm_requests_waiting", "Requests queued for a slot.", m, registry=r)
        self.kv_usage = Gauge("turboinfer_llm_kv_cache_usage_ratio", "Share of the KV cache in use.", m, registry=r)
        self.prefix_queries = Counter("turboinfer_llm_prefix_cache_queries", "Prompt tokens looked up in the prefix "
                                      "cache.", m, registry=r)  # fmt: skip
        self.prefix_hits = Counter("turboinfer_llm_prefix_cache_hits", "Prompt tokens whose KV blocks an earlier "
                                   "prompt had computed (whole blocks).", m, registry=r)  # fmt: skip

    def finished(self, model: str, result: GenerationResult, queue_s: float) -> None:
        """Record a generation that ran to its end (queue_s: arrival to admission)."""
        times = result.token_times_s
        self.ttft.labels(model).observe(queue_s + result.ttft_s)
        self.e2e.labels(model).observe(queue_s + result.total_s)
        for earlier, later in itertools.pairwise(times):
            self.itl.labels(model).observe(later - earlier)
        if result.tpot_s is not None:
            self.tpot.labels(model).observe(result.tpot_s)
        self.prompt_length.labels(model).observe(result.prompt_tokens)
        self.generation_length.labels(model).observe(result.completion_tokens)
        self.prompt_tokens.labels(model).inc(result.prompt_tokens)
        self.generation_tokens.labels(model).inc(result.completion_tokens)

    def gauges(self, model: str, running: int, waiting: int, kv_usage: float | None = None) -> None:
        """Running and waiting requests, and the KV cache in use when given."""
        self.running.labels(model).set(running)
        self.waiting.labels(model).set(waiting)
        if kv_usage is not None:
            self.kv_usage.labels(model).set(kv_usage)

    def prefix(self, model: str, queried: int, hit: int) -> None:
        """One prompt's prefix-cache lookup, in tokens."""
        self.prefix_queries.labels(model).inc(queried)
        self.prefix_hits.labels(model).inc(hit)
