"""OpenVINO IR of a user's LLM, exported by optimum-intel with NNCF weight compression: the path on which OpenVINO
GenAI's continuous batching runs every family optimum-intel exports (its GGUF reader refuses gemma2/3 and phi3).
optimum-intel pins transformers below 5, so it runs in an environment of its own that the Makefile installs
(.venv/tools/optimum), never in the project's venv; the model reaches it as the Hugging Face folder (a GGUF's
de-quantized weights, the oracle's own). The IR folder appears whole or not at all."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from turboinfer.core.errors import InvalidModel
from turboinfer.core.staging import staging

IR_WEIGHTS = {
    "int8": ["--weight-format", "int8"],
    "int4": ["--weight-format", "int4", "--group-size", "128", "--ratio", "1.0"],
    "int4-awq": ["--weight-format", "fp32"],
    "fp32": ["--weight-format", "fp32"],
}
"""Weight layouts → optimum-cli's options: NNCF int8 per-channel (data-free), int4 group-wise (128, every layer;
data-free; the embedding stays int8), int4 data-aware (exported in float, then compressed by llm/ir_awq.py:
AWQ and scale estimation on real prose), or float. The first is the default."""
CALIBRATION_TEXTS = 32
"""Calibration samples of data-aware int4: four sentences each of the standard library's prose, from its start
(the fidelity checks read prose from token 4096 on)."""
EXPORT_TIMEOUT_S = 3600


def optimum_cli() -> Path:
    """optimum-intel's CLI in its own environment (make install writes .venv/tools/optimum)."""
    return Path(sys.prefix) / "tools" / "optimum" / "bin" / "optimum-cli"


def export_ir(folder: Path, target: Path, weights: str, chat_template: str = "") -> float:
    """`folder` (a Hugging Face model) exported as OpenVINO IR with its tokenizers into `target` at a weight layout;
    seconds taken. `chat_template` is written into the exported tokenizer when the folder has none (a GGUF's
    template, which its de-quantized folder does not carry). InvalidModel with the exporter's last words."""
    if weights not in IR_WEIGHTS:
        raise InvalidModel(f"the OpenVINO IR export writes {', '.join(IR_WEIGHTS)} weights, not {weights!r}")
    if not optimum_cli().is_file():
        raise InvalidModel(
            f"optimum-intel is not installed at {optimum_cli().parent.parent} (make install puts it there)"
        )
    start = time.perf_counter()
    with staging(target.parent, target.name) as tmp:
        source = staged(folder, tmp / "source", chat_template)
        command = [str(optimum_cli()), "export", "openvino", "--model", str(source), "--task",
                   "text-generation-with-past", *IR_WEIGHTS[weights], str(tmp / "ir")]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=EXPORT_TIMEOUT_S)
        check(done, tmp / "ir", f"optimum-intel cannot export {folder.name} as OpenVINO IR")
        if weights == "int4-awq":
            compressed = awq(tmp / "ir", tmp / "awq", env)
            check(compressed, tmp / "awq", f"NNCF's data-aware int4 compression of {folder.name} failed")
            shutil.rmtree(tmp / "ir")
            (tmp / "awq").rename(tmp / "ir")
        (tmp / "ir" / "export.json").write_text(json.dumps({"seconds": round(time.perf_counter() - start, 1)}))
        if target.exists():
            shutil.rmtree(target)
        (tmp / "ir").rename(target)
    return time.perf_counter() - start


def check(done: subprocess.CompletedProcess, folder: Path, what: str) -> None:
    """InvalidModel with the tool's last words when it failed or wrote no model."""
    if done.returncode != 0 or not (folder / "openvino_model.xml").is_file():
        last = ([line for line in done.stderr.strip().splitlines() if line.strip()] or ["no output"])[-1]
        raise InvalidModel(f"{what}: {last[:200]}")


def awq(fp32: Path, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """llm/ir_awq.py run by the optimum environment on fp32, calibrated on real prose."""
    from turboinfer.measure.sentences import real_sentences

    sentences = real_sentences(4 * CALIBRATION_TEXTS)
    texts = [" ".join(sentences[i : i + 4]) for i in range(0, len(sentences), 4)]
    (fp32.parent / "calibration.json").write_text(json.dumps(texts))
    python = optimum_cli().with_name("python")
    command = [str(python), str(Path(__file__).with_name("ir_awq.py")), str(fp32), str(out),
               str(fp32.parent / "calibration.json"), str(group_size(fp32))]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=EXPORT_TIMEOUT_S)


def group_size(folder: Path) -> int:
    """128 weights per int4 group, or fewer where the model's widths are not multiples of 128 (tiny test models)."""
    config = json.loads((folder / "config.json").read_text())
    widths = [int(config.get(k, 128)) for k in ("hidden_size", "intermediate_size")]
    return next(size for size in (128, 64, 32, 16) if all(w % size == 0 for w in widths))


def staged(folder: Path, out: Path, chat_template: str) -> Path:
    """The folder as the exporter reads it: its files linked, the chat template added to its tokenizer config
    when it has none (the folder itself is never written)."""
    out.mkdir(parents=True)
    for item in folder.iterdir():
        (out / item.name).symlink_to(item.resolve())
    config = folder / "tokenizer_config.json"
    if chat_template and config.is_file():
        data = json.loads(config.read_text())
        if not data.get("chat_template") and not (folder / "chat_template.jinja").is_file():
            (out / config.name).unlink()
            (out / config.name).write_text(json.dumps({**data, "chat_template": chat_template}))
    return out
