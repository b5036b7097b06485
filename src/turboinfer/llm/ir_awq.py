"""Data-aware int4 weight compression of an exported fp32 OpenVINO IR: NNCF's AWQ and scale estimation through
optimum-intel, calibrated on the real prose given. Run by the optimum environment's interpreter as a script
(llm/ir_export.py does), never imported by turboinfer: it needs optimum-intel, which the venv does not hold.

    python ir_awq.py FP32_IR_FOLDER OUT_FOLDER CALIBRATION.json GROUP_SIZE   (a JSON list of texts)
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def compress(fp32: Path, out: Path, texts: list[str], group_size: int) -> None:
    """fp32's model with every weight in int4 (asymmetric, in groups), scales searched on texts; its tokenizers and
    configs copied beside it."""
    from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig

    config = OVWeightQuantizationConfig(bits=4, sym=False, group_size=group_size, ratio=1.0, dataset=texts,
                                        tokenizer=str(fp32), num_samples=len(texts), awq=True,
                                        scale_estimation=True)  # fmt: skip
    model = OVModelForCausalLM.from_pretrained(str(fp32), quantization_config=config, compile=False)
    model.save_pretrained(str(out))
    for item in fp32.iterdir():
        if not (out / item.name).exists():
            shutil.copy2(item, out / item.name)


if __name__ == "__main__":
    compress(Path(sys.argv[1]), Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text()), int(sys.argv[4]))
