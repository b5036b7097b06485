"""Fast data path vs the Pillow + torchvision-style baseline → a markdown section for docs/benchmarks.md.

Run: .venv/bin/python benchmarks/decode.py > out/decode.md   (needs `make data`; torchvision row needs the torch extra)
"""

from __future__ import annotations

import io
import os
import sys

import numpy as np
from PIL import Image

from turboinfer.bench.decode import (
    BASELINE,
    compare_decoders,
    default_cases,
    fidelity_set,
    timed_methods,
    top1_agreement,
)
from turboinfer.core.settings import Settings
from turboinfer.core.types import ImagePreprocess
from turboinfer.measure.stats import paired_ratio_ci
from turboinfer.models.catalog import build_zoo_model
from turboinfer.models.decoders import available_decoders
from turboinfer.models.preprocess import image_tensor
from turboinfer.runtime.session import open_session


def torchvision_parity(cases: list, spec: ImagePreprocess) -> None:
    """Our baseline against torchvision's own transforms, interleaved: is the baseline honest?"""
    import torchvision.transforms as T

    transforms = T.Compose(
        [T.Resize(spec.resize), T.CenterCrop(spec.size), T.ToTensor(), T.Normalize(spec.mean, spec.std)]
    )
    fns = {
        "torchvision": lambda data: transforms(Image.open(io.BytesIO(data)).convert("RGB")),
        BASELINE: lambda data: image_tensor(data, spec),
    }
    print("\n| photo | torchvision transforms, ms | our baseline, ms | baseline / torchvision (95% CI) |")
    print("| --- | --- | --- | --- |")
    for case in cases:
        samples = timed_methods(fns, case.jpeg, rounds=200, seconds=3.0)
        ratio = paired_ratio_ci(samples["torchvision"], samples[BASELINE])
        torchvision_ms, baseline_ms = (np.median(samples[k]) * 1e3 for k in ("torchvision", BASELINE))
        print(
            f"| {case.label} | {torchvision_ms:.2f} | {baseline_ms:.2f} "
            f"| {ratio.ratio:.2f} ({ratio.ci[0]:.2f}–{ratio.ci[1]:.2f}) |"
        )


def main() -> None:
    """Print the latency/throughput table, the torchvision parity table and the fidelity table."""
    settings = Settings.from_env(os.environ)
    spec = ImagePreprocess()
    cases = default_cases(settings)
    print(f"Command: `{' '.join(sys.argv)}`\n")
    for case in cases:
        print(f"- {case.label}: {case.width}×{case.height}, {len(case.jpeg) // 1024} KiB, {case.origin}")
    print(
        "\n| photo | method | median ms | p90 ms | speedup vs baseline (95% CI) | img/s, 1 thread | img/s, 2 threads |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in compare_decoders(cases, spec, seconds=6.0):
        speedup = "—" if r.speedup is None else f"{r.speedup.ratio:.2f}× ({r.speedup.ci[0]:.2f}–{r.speedup.ci[1]:.2f})"
        rate2 = f"{r.images_per_s[2]:.0f}" if 2 in r.images_per_s else "—"
        print(
            f"| {r.case} | {r.method} | {r.latency.median * 1e3:.2f} | {r.latency.p90 * 1e3:.2f} | {speedup} "
            f"| {r.images_per_s[1]:.0f} | {rate2} |"
        )
    torchvision_parity(cases, spec)
    card = build_zoo_model("efficientnet-lite0", settings)
    assert isinstance(card.preprocess, ImagePreprocess)
    items = fidelity_set(settings)
    session = open_session(card.onnx_path)
    print(f"\nTop-1 agreement of EfficientNet-Lite0 with the baseline preprocessing, {len(items)} real photos:\n")
    print("| decoder | top-1 agreement | decisive (p ≥ 0.5) agreement | decisive inputs |\n" + "| --- " * 4 + "|")
    for decoder in available_decoders():
        if decoder.name != "pillow-full":
            m = top1_agreement(session, card.preprocess, items, decoder)
            print(f"| {decoder.name} | {m['top1_agreement']:.3f} | {m['decisive_agreement']:.3f} | "
                  f"{m['decisive_n']:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
