"""The image-search case study → a markdown section for docs/benchmarks.md.

Run after `make demo` (it formats out/case-study/case-study.json), or with --run to measure afresh:
    .venv/bin/python benchmarks/case_study.py [--run] > out/case-study.md
--run: `turboinfer optimize efficientnet-lite0 --quick --output features`'s choice (out/optimize-search) against the
two baselines on out/gallery, exactly as `make demo` does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from turboinfer.apps.imagesearch.case_study import CaseStudyConfig, run_case_study
from turboinfer.core.settings import Settings
from turboinfer.hardware.probe import probe_cpu
from turboinfer.models.variant import parse_variant

OUT = Path("out/case-study")


def markdown(data: dict) -> None:
    """The contenders and goals as markdown tables."""
    target = data["config"]["p99_target_s"] * 1e3
    print(f"Machine: {probe_cpu().model}. Reference rate (the seed baseline's sustainable rate): "
          f"{data['reference_rate']:.2f} req/s; p99 target {target:.0f} ms.\n")  # fmt: skip
    print(
        "| contender | what | sustainable QPS | p50 / p99 ms at ref. rate | stages ms (decode / embed / search / "
        "http) | recall@1 / @10 | recall@10 without PCA | indexing photos/s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in data["results"]:
        ref, rec = r["at_reference_rate"], r["recall"]
        stages = " / ".join(f"{v:.1f}" for v in r["stages_ms"].values())
        print(f"| {r['contender']['label']} | {r['contender']['description']} | {r['sustainable_qps'] or 0:.1f} | "
              f"{ref['p50_s'] * 1e3:.0f} / {ref['p99_s'] * 1e3:.0f} | {stages} | "
              f"{rec['with_pca']['at_1']:.3f} / {rec['with_pca']['at_10']:.3f} | {rec['without_pca']['at_10']:.3f} | "
              f"{r['index']['photos_per_s']:.1f} |")  # fmt: skip
    print()
    for name, value in data["ratios"].items():
        print(f"- {name.replace('_', ' ')}: {'—' if value is None else f'{value:.2f}'}")


def main() -> None:
    if "--run" in sys.argv:
        settings = Settings.from_env(os.environ)
        optimized = parse_variant("out/optimize-search/chosen.variant.json", settings)
        result = run_case_study(Path("out/gallery"), optimized, OUT, CaseStudyConfig(), settings,
                                lambda step: print(step, file=sys.stderr, flush=True))  # fmt: skip
        data = result.to_dict()
        (OUT / "case-study.json").write_text(json.dumps(data, indent=2, default=str))
    else:
        data = json.loads((OUT / "case-study.json").read_text())
    markdown(data)


if __name__ == "__main__":
    main()
