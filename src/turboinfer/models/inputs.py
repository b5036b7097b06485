"""What a model's graph says about its inputs beyond their specs: which kind they are (image, token ids, generic
tensors) and the preprocessing that implies, the task its output suggests, and the integer inputs that index a
table with the table's size (so that a server refuses an out-of-range id as a client mistake)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import onnx

from turboinfer.core.card import ModelCard, Task
from turboinfer.core.errors import InvalidModel
from turboinfer.core.types import ImagePreprocess, Preprocess, TensorSpec, TextPreprocess

TABLE_INPUTS = {"Gather": ((1, 0),), "EmbedLayerNormalization": ((0, 2), (1, 4))}
"""Op type → (index input, table input) pairs: Gather(data, indices); ORT's fused embedding (input_ids,
segment_ids, word_embedding, position_embedding, segment_embedding, ...)."""


def load_graph(path: Path) -> onnx.ModelProto:
    """The ONNX model at path without its external weights; InvalidModel when it is not one."""
    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as err:  # onnx raises DecodeError, OSError, ... for non-ONNX bytes
        raise InvalidModel(f"{path} is not a readable ONNX model: {str(err).splitlines()[0]}") from None


def index_limits(model: onnx.ModelProto) -> dict[str, int]:
    """Integer graph inputs used directly as indices into a constant table → the table's size (valid: 0..size-1)."""
    graph = model.graph
    tables = {init.name: tuple(init.dims) for init in graph.initializer}
    inputs = {v.name for v in graph.input if v.name not in tables}
    limits: dict[str, int] = {}
    for node in graph.node:
        for index, table in TABLE_INPUTS.get(node.op_type, ()):
            if len(node.input) <= max(index, table) or node.input[index] not in inputs:
                continue
            dims = tables.get(node.input[table])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0) if node.op_type == "Gather" else 0
            if dims and -len(dims) <= axis < len(dims):
                size = dims[axis]
                limits[node.input[index]] = min(size, limits.get(node.input[index], size))
    return limits


Kind = Literal["image", "tokens", "tensor"]
EMBEDDING_NAMES = ("embed", "feature", "pool", "vector", "hidden", "last_hidden")


@dataclass(frozen=True)
class Inferred:
    """How to feed a bare ONNX graph and judge its outputs, as far as the graph tells, said out loud."""

    kind: Kind
    preprocess: Preprocess | None
    task: Task
    lines: tuple[str, ...]
    """One line per input, then one for the task: what was inferred and how to override it."""


def shape_text(spec: TensorSpec) -> str:
    """[N,3,224,224] (symbolic dims by name, the batch as N)."""
    dims = ["N" if i == 0 and isinstance(d, str) else str(d) for i, d in enumerate(spec.shape)]
    return "[" + ",".join(dims) + "]"


def image_layout(spec: TensorSpec) -> Literal["NCHW", "NHWC"] | None:
    """The layout of a 3-channel square image input ([N,3,H,W] or [N,H,W,3], float32 or uint8), else None."""
    if len(spec.shape) != 4 or spec.dtype not in ("float32", "uint8"):
        return None
    for layout, channel, (h, w) in (("NCHW", 1, (2, 3)), ("NHWC", 3, (1, 2))):
        height, width = spec.shape[h], spec.shape[w]
        square = not (isinstance(height, int) and isinstance(width, int)) or height == width
        if spec.shape[channel] == 3 and square and spec.shape[4 - channel] != 3:
            return layout  # type: ignore[return-value]
    return None


def image_preprocess(spec: TensorSpec, layout: Literal["NCHW", "NHWC"]) -> ImagePreprocess:
    """ImageNet conventions for an image input: mean/std, resize to 256/224 of the crop, the graph's size."""
    side = spec.shape[2] if layout == "NCHW" else spec.shape[1]
    size = side if isinstance(side, int) else 224
    dtype: Literal["float32", "uint8"] = "uint8" if spec.dtype == "uint8" else "float32"
    return ImagePreprocess(size=size, resize=round(size * 256 / 224), layout=layout, input_dtype=dtype)


def token_roles(specs: tuple[TensorSpec, ...]) -> tuple[str, str, str] | None:
    """(ids, mask, type ids) input names when every input is an integer [N, sequence] tensor sharing one sequence
    dim, with exactly one that is neither a mask nor type ids; else None."""
    if not specs or any(len(s.shape) != 2 or s.dtype not in ("int32", "int64") for s in specs):
        return None
    if len({s.shape[1] for s in specs}) != 1:
        return None
    mask = [s.name for s in specs if "mask" in s.name.lower()]
    types = [s.name for s in specs if any(w in s.name.lower() for w in ("type", "segment"))]
    ids = [s.name for s in specs if s.name not in mask and s.name not in types]
    if len(ids) != 1 or len(mask) > 1 or len(types) > 1:
        return None
    return ids[0], (mask or [""])[0], (types or [""])[0]


def infer_task(outputs: tuple[TensorSpec, ...]) -> tuple[Task, str]:
    """classify for a [N, classes] first output, embed when its name says embedding, else unknown (tensors)."""
    first = outputs[0]
    if len(first.shape) == 2 and any(word in first.name.lower() for word in EMBEDDING_NAMES):
        return "embed", f"output `{first.name}` {shape_text(first)} → embedding (judged by cosine; --task to override)"
    if len(first.shape) == 2 and (not isinstance(first.shape[1], int) or first.shape[1] >= 2):
        return "classify", (f"output `{first.name}` {shape_text(first)} → classifier (judged by top-1 agreement; "
                            "--task embed to judge by cosine)")  # fmt: skip
    return "unknown", f"output `{first.name}` {shape_text(first)} → generic tensor (judged by cosine)"


def infer_inputs(
    inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...], folder: Path, limits: dict[str, int],
    tokenizer: Path | None = None,
) -> Inferred:  # fmt: skip
    """The kind of a graph's inputs (image, token ids or generic tensors), the preprocessing it implies and the
    task its first output suggests. A tokenizer.json beside the model is used when none is given."""
    task, task_line = infer_task(outputs)
    layout = image_layout(inputs[0]) if len(inputs) == 1 else None
    if layout is not None:
        spec = image_preprocess(inputs[0], layout)
        norm = "normalization inside the model (uint8 input)" if spec.input_dtype == "uint8" else "ImageNet mean/std"
        line = (f"input `{inputs[0].name}` {shape_text(inputs[0])} {inputs[0].dtype} → image, {norm}, resize "
                f"{spec.resize} / crop {spec.size} (assumed; override with a card)")  # fmt: skip
        return Inferred("image", spec, task, (line, task_line))
    roles = token_roles(inputs)
    if roles is not None:
        ids, mask, types = roles
        found = tokenizer or (folder / "tokenizer.json" if (folder / "tokenizer.json").is_file() else None)
        length = inputs[0].shape[1]
        text = TextPreprocess(str(found) if found else "", length if isinstance(length, int) else 256, ids, mask, types)
        with_ = ", ".join(f"`{n}`" for n in (mask, types) if n)
        vocab = f" (vocabulary {limits[ids]})" if ids in limits else ""
        source = f"tokenizer {found}" if found else "no tokenizer (--tokenizer or a card's preprocess.tokenizer)"
        line = (f"input `{ids}` {shape_text(inputs[0])} {inputs[0].dtype} → token ids{vocab}"
                f"{', with ' + with_ if with_ else ''}; {source}")  # fmt: skip
        return Inferred("tokens", text, task, (line, task_line))
    lines = tuple(f"input `{s.name}` {shape_text(s)} {s.dtype} → generic tensor (values: --inputs .npz or a folder "
                  "of .npy; else seeded random)" for s in inputs)  # fmt: skip
    return Inferred("tensor", None, task, (*lines, task_line))


def input_kind(card: ModelCard) -> Kind:
    """image, tokens or tensor, from the card's preprocessing."""
    if isinstance(card.preprocess, ImagePreprocess):
        return "image"
    return "tokens" if isinstance(card.preprocess, TextPreprocess) else "tensor"


def check_preprocess(card: ModelCard) -> None:
    """InvalidModel when a card's preprocessing does not fit its inputs (3 channels vs 1, a missing token input)."""
    spec = card.preprocess
    if isinstance(spec, ImagePreprocess):
        first = card.inputs[0] if card.inputs else None
        if first is None or image_layout(first) != spec.layout or first.dtype != spec.input_dtype:
            shown = f"`{first.name}` {shape_text(first)} {first.dtype}" if first else "no input"
            made = f"3-channel {spec.layout} {spec.input_dtype} images"
            raise InvalidModel(f"{card.name}: the card's preprocessing makes {made}, but the model takes {shown}")
    if isinstance(spec, TextPreprocess):
        names = {s.name for s in card.inputs}
        missing = [n for n in (spec.ids, spec.mask, spec.type_ids) if n and n not in names]
        if missing:
            raise InvalidModel(f"{card.name}: the card's text preprocessing names inputs {missing} the model lacks")
