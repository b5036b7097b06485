"""A V2 JSON response of EfficientNet-Lite0's two outputs at batch 8 (8 × 2280 float32), encoded the old way
(json.dumps of Python lists) and by the server's encoder (orjson from numpy), interleaved → markdown.

Run: .venv/bin/python benchmarks/v2_encode.py
"""

from __future__ import annotations

import json

import numpy as np

from turboinfer.measure.stats import paired_ratio_ci
from turboinfer.measure.timer import interleave
from turboinfer.serve.v2.codec import InferRequest, encode_response


def main() -> None:
    rng = np.random.default_rng(0)
    results = {"logits": rng.standard_normal((8, 1000), np.float32), "features": rng.random((8, 1280), np.float32)}
    request = InferRequest(None, {}, None, frozenset())

    def with_json() -> bytes:
        outputs = [{"name": k, "datatype": "FP32", "shape": list(v.shape), "data": v.reshape(-1).tolist()}
                   for k, v in results.items()]  # fmt: skip
        return json.dumps({"model_name": "m", "model_version": "1", "outputs": outputs}).encode()

    samples = interleave(
        {"json.dumps": with_json, "orjson": lambda: encode_response("m", "1", request, results)},
        rounds=200, max_seconds=10.0, min_rounds=30,
    )  # fmt: skip
    ratio = paired_ratio_ci(samples["json.dumps"], samples["orjson"])
    print("| encoder | median ms |")
    print("| --- | --- |")
    for name, times in samples.items():
        print(f"| {name} | {np.median(times) * 1e3:.2f} |")
    print(f"\norjson / json.dumps time: {ratio.ratio:.3f} (95% CI {ratio.ci[0]:.3f}–{ratio.ci[1]:.3f}), "
          f"{len(samples['orjson'])} interleaved rounds.")  # fmt: skip


if __name__ == "__main__":
    main()
