"""Prometheus metrics of the V2 front-end, in seconds, on the server's registry (one per app, nothing global).

Triton equivalents: turboinfer_inference_count_total ↔ nv_inference_count, turboinfer_execution_count_total ↔
nv_inference_exec_count (their ratio is the mean batch size), turboinfer_queue_duration_seconds ↔
nv_inference_queue_duration_us, turboinfer_compute_duration_seconds ↔ nv_inference_compute_infer_duration_us,
turboinfer_request_duration_seconds ↔ nv_inference_request_duration_us (histograms here, aggregatable across pods).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from turboinfer.serve.v2.batcher import BatchReport

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
COSINE_BUCKETS = (0.5, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999, 1.0)


class ServerMetrics:
    """Every metric the server exports."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.requests = Counter(
            "turboinfer_requests", "Requests by model and outcome.", ["model", "outcome"], registry=r
        )
        self.request_duration = Histogram("turboinfer_request_duration_seconds", "End-to-end request time.",
                                          ["model"], buckets=LATENCY_BUCKETS, registry=r)  # fmt: skip
        self.queue_duration = Histogram("turboinfer_queue_duration_seconds", "Time a request waited for its batch.",
                                        ["model"], buckets=LATENCY_BUCKETS, registry=r)  # fmt: skip
        self.compute_duration = Histogram("turboinfer_compute_duration_seconds", "Time to compute one batch.",
                                          ["model"], buckets=LATENCY_BUCKETS, registry=r)  # fmt: skip
        self.batch_size = Histogram("turboinfer_batch_size", "Rows per computed batch.", ["model"],
                                    buckets=BATCH_BUCKETS, registry=r)  # fmt: skip
        self.batches = Counter("turboinfer_batches", "Batches by why they closed (full, delay, drain).",
                               ["model", "reason"], registry=r)  # fmt: skip
        self.inference_count = Counter("turboinfer_inference_count", "Rows inferred.", ["model"], registry=r)
        self.execution_count = Counter("turboinfer_execution_count", "Batches executed.", ["model"], registry=r)
        self.queue_depth = Gauge("turboinfer_queue_depth", "Requests accepted and waiting.", ["model"], registry=r)
        self.in_flight = Gauge("turboinfer_inflight_requests", "Requests being handled.", ["model"], registry=r)
        self.variant_duration = Histogram("turboinfer_variant_duration_seconds", "Time in the batcher per variant "
                                          "(primary, canary, shadow).", ["model", "variant"], buckets=LATENCY_BUCKETS,
                                          registry=r)  # fmt: skip
        self.shadow_top1 = Counter("turboinfer_shadow_top1", "Shadow requests by whether the shadow's top-1 matched.",
                                   ["model", "agree"], registry=r)  # fmt: skip
        self.shadow_cosine = Histogram("turboinfer_shadow_cosine", "Cosine between primary and shadow outputs.",
                                       ["model"], buckets=COSINE_BUCKETS, registry=r)  # fmt: skip
        self.skipped = Counter("turboinfer_skipped_requests", "Accepted requests not computed: deadline passed "
                               "(expired) or client gone (cancelled).", ["model", "reason"], registry=r)  # fmt: skip
        self.engine_failures = Counter("turboinfer_engine_failures", "Requests the engine failed on (500).",
                                       ["model"], registry=r)  # fmt: skip
        self.shadow_errors = Counter("turboinfer_shadow_errors", "Shadow requests that failed.", ["model"], registry=r)

    def on_batch(self, model: str, report: BatchReport) -> None:
        """Record one computed batch."""
        if report.requests:
            self.compute_duration.labels(model).observe(report.compute_s)
            self.batch_size.labels(model).observe(report.size)
            self.batches.labels(model, report.reason).inc()
            self.inference_count.labels(model).inc(report.size)
            self.execution_count.labels(model).inc()
        for seconds in report.queue_s:
            self.queue_duration.labels(model).observe(seconds)
        for reason, count in (("expired", report.expired), ("cancelled", report.cancelled)):
            if count:
                self.skipped.labels(model, reason).inc(count)
        if report.failed:
            self.engine_failures.labels(model).inc(report.failed)
