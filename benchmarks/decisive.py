"""Where faster variants disagree with FP32: top-1 agreement by how sure the original is (its top-1 softmax
probability), the measurement behind the decisive-agreement threshold (optimize.accuracy, measure.fidelity).

Run: .venv/bin/python benchmarks/decisive.py [MODEL ...]   (default: efficientnet-lite0 mobilenetv2)
Inputs: the optimizer's own evaluation set (500 augmented crops of the packaged real photos). Variants: ORT
static INT8 as `optimize` builds it, OpenVINO BF16 (when the CPU has BF16 units), NNCF INT8 on OpenVINO.
"""

from __future__ import annotations

import itertools
import os
import sys

import numpy as np

from turboinfer.core.settings import Settings
from turboinfer.hardware.probe import probe_cpu
from turboinfer.measure.fidelity import softmax
from turboinfer.optimize.evaluate import run_all
from turboinfer.optimize.plan import Candidate, Plan, Step
from turboinfer.optimize.run import Optimizer
from turboinfer.runtime.session import SessionOptions

BINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)
THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def variants(threads: int, bf16: bool) -> dict[str, Candidate]:
    """The faster variants whose disagreements are binned."""
    base = SessionOptions(intra_threads=threads)
    out = {"ORT static INT8": Candidate((Step("ort-int8-static"),), "ort", base),
           "NNCF INT8 (OpenVINO)": Candidate((Step("nncf-int8"),), "openvino", base)}  # fmt: skip
    if bf16:
        out["OpenVINO BF16"] = Candidate((), "openvino", SessionOptions(intra_threads=threads, precision="bf16"))
    return out


def main() -> None:
    """Print, per model, agreement by confidence bin and the agreement above each candidate threshold."""
    settings = Settings.from_env(os.environ)
    cpu = probe_cpu()
    print(f"Command: `{' '.join(sys.argv)}` · {cpu.model}, {cpu.usable_cpus} CPUs\n")
    for model in sys.argv[1:] or ["efficientnet-lite0", "mobilenetv2"]:
        optimizer = Optimizer(Plan(model), settings)
        reference = optimizer.reference.evaluation[optimizer.reference.output]
        confidence = softmax(reference).max(axis=1)
        answers = {}
        for label, candidate in variants(cpu.usable_cpus, "avx512_bf16" in cpu.isa or "amx_bf16" in cpu.isa).items():
            card, session = optimizer.open(candidate)
            answers[label] = run_all(session, card, optimizer.sets.evaluation)[optimizer.reference.output].argmax(1)
        same = {label: top1 == reference.argmax(1) for label, top1 in answers.items()}
        print(f"#### {model}: top-1 agreement with FP32 by FP32's top-1 probability ({len(reference)} inputs)\n")
        print("| FP32 top-1 p | inputs | " + " | ".join(same) + " |\n" + "| --- " * (len(same) + 2) + "|")
        for low, high in itertools.pairwise(BINS):
            inside = (confidence >= low) & (confidence < high)
            cells = " | ".join(f"{s[inside].mean():.3f}" if inside.any() else "—" for s in same.values())
            print(f"| {low:.1f}–{min(high, 1):.1f} | {int(inside.sum())} | {cells} |")
        print("\n| decisive if p ≥ | inputs | " + " | ".join(same) + " |\n" + "| --- " * (len(same) + 2) + "|")
        for threshold in THRESHOLDS:
            sure = confidence >= threshold
            cells = " | ".join(f"{s[sure].mean():.3f}" for s in same.values())
            print(f"| {threshold:.1f} | {int(sure.sum())} | {cells} |")
        cells = " | ".join(f"{s.mean():.3f}" for s in same.values())
        print(f"| (all inputs) | {len(reference)} | {cells} |")
        print(f"\nMedian FP32 top-1 probability: {np.median(confidence):.2f}.\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
