"""Why the fast data path stops where it does: top-1 agreement by oversampling factor, and libjpeg-turbo's own
decode time of the 4.1 MP photo at the DCT scales (the floor under any pipeline built on it).

Run: .venv/bin/python benchmarks/decode_limits.py   (needs `make data`)
"""

from __future__ import annotations

import functools
import os
import sys
import timeit

import simplejpeg

from turboinfer.bench.decode import fidelity_set, top1_agreement
from turboinfer.core.settings import Settings
from turboinfer.core.types import ImagePreprocess
from turboinfer.models.catalog import build_zoo_model
from turboinfer.models.decoders import SimpleJpeg
from turboinfer.models.photos import MATE_NATURE
from turboinfer.runtime.session import open_session


def main() -> None:
    """Print both tables as markdown."""
    settings = Settings.from_env(os.environ)
    card = build_zoo_model("efficientnet-lite0", settings)
    assert isinstance(card.preprocess, ImagePreprocess)
    items = fidelity_set(settings)
    session = open_session(card.onnx_path)
    print(f"Command: `{' '.join(sys.argv)}`\n")
    print(f"| oversample | top-1 agreement, {len(items)} real photos | decisive (p ≥ 0.5) agreement | decisive inputs |"
          "\n" + "| --- " * 4 + "|")  # fmt: skip
    for oversample in (1.0, 1.5, 2.0):
        m = top1_agreement(session, card.preprocess, items, SimpleJpeg(), oversample)
        print(f"| {oversample} | {m['top1_agreement']:.3f} | {m['decisive_agreement']:.3f} | {m['decisive_n']:.0f} |")
    data = (settings.debian_dir / MATE_NATURE / "TwoWings.jpg").read_bytes()
    height, width, _, _ = simplejpeg.decode_jpeg_header(data)
    size = f"{width}×{height}, {len(data) // 1024} KiB"
    print(f"\n| DCT scale | simplejpeg decode of TwoWings.jpg ({size}), best of 5×5, ms |")
    print("| --- | --- |")
    for factor in (1, 2, 4, 8):
        runs = timeit.repeat(
            functools.partial(simplejpeg.decode_jpeg, data, min_height=height // factor, min_width=width // factor),
            number=5, repeat=5,
        )  # fmt: skip
        print(f"| 1/{factor} | {min(runs) / 5 * 1e3:.1f} |")


if __name__ == "__main__":
    main()
