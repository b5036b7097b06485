"""Cards for a user's own ONNX files: inferred from the graph (input kind, preprocessing, task), and written
as an editable sidecar by `turboinfer card init` so that a user fixes preprocessing once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import onnx

from turboinfer.core.card import ModelCard, Provenance, card_path_for, save_card
from turboinfer.core.errors import InvalidInput, InvalidModel
from turboinfer.core.types import UNKNOWN_RANK, UNNAMED, ImagePreprocess, TensorSpec, TextPreprocess
from turboinfer.models.inputs import check_preprocess, index_limits, infer_inputs, load_graph

TASKS = ("classify", "embed", "unknown")


def card_from_onnx(path: Path, tokenizer: Path | None = None) -> ModelCard:
    """A card for a bare ONNX file: tensors read from the graph, input kind, preprocessing and task inferred
    (models.inputs; the lines saying so are in extra["inferred"])."""
    model = load_graph(path)
    initializers = {init.name for init in model.graph.initializer}

    def spec(value: onnx.ValueInfoProto) -> TensorSpec:
        tensor = value.type.tensor_type
        dims = tuple(
            d.dim_value if d.HasField("dim_value") else (d.dim_param or ("batch" if i == 0 else UNNAMED))
            for i, d in enumerate(tensor.shape.dim)
        )
        if not tensor.HasField("shape"):
            dims = UNKNOWN_RANK
        return TensorSpec(value.name, dims, onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name)

    if not model.graph.output:
        raise InvalidModel(f"{path} has no graph outputs")
    inputs = tuple(spec(v) for v in model.graph.input if v.name not in initializers)
    outputs = tuple(spec(v) for v in model.graph.output)
    if not inputs:
        raise InvalidModel(f"{path} has no inputs to feed")
    inferred = infer_inputs(inputs, outputs, path.parent, index_limits(model), tokenizer)
    return ModelCard(
        name=path.stem, task=inferred.task, onnx_path=path, inputs=inputs, outputs=outputs,
        provenance=Provenance(source=f"file {path.name}", license="unknown"), preprocess=inferred.preprocess,
        extra={"inferred": list(inferred.lines)},
    ).with_hash()  # fmt: skip


def init_card(path: Path, overrides: dict[str, Any], force: bool = False) -> ModelCard:
    """Write MODEL.card.json beside an ONNX file: what the graph says, with the user's overrides (task; image:
    mean, std, size, resize; text: tokenizer, max_length) applied and checked."""
    sidecar = card_path_for(path)
    if sidecar.is_file() and not force:
        raise InvalidInput(f"{sidecar} exists; edit it, or pass --force to write it again")
    tokenizer = Path(overrides["tokenizer"]).resolve() if overrides.get("tokenizer") else None
    card = card_from_onnx(path, tokenizer)
    if tokenizer is not None and not isinstance(card.preprocess, TextPreprocess):
        raise InvalidInput(f"--tokenizer is for text models; {path.name} does not take token ids")
    if tokenizer is not None and not tokenizer.is_file():
        raise InvalidInput(f"tokenizer file not found: {tokenizer}")
    task = overrides.get("task")
    if task is not None and task not in TASKS:
        raise InvalidInput(f"task is one of {', '.join(TASKS)}, got {task!r}")
    image: dict[str, Any] = {k: overrides[k] for k in ("mean", "std", "size", "resize") if overrides.get(k) is not None}
    if image and not isinstance(card.preprocess, ImagePreprocess):
        raise InvalidInput(f"{', '.join(image)} are for image models; {path.name} does not take images")
    if overrides.get("max_length") and not isinstance(card.preprocess, TextPreprocess):
        raise InvalidInput(f"--max-length is for text models; {path.name} does not take token ids")
    preprocess = card.preprocess
    if isinstance(preprocess, ImagePreprocess):
        for axis in ("mean", "std"):
            if axis in image and len(image[axis]) != 3:
                raise InvalidInput(f"--{axis} takes 3 values (one per channel), got {len(image[axis])}")
        changes: dict[str, Any] = {k: tuple(v) if k in ("mean", "std") else v for k, v in image.items()}
        preprocess = replace(preprocess, **changes)
    elif isinstance(preprocess, TextPreprocess) and overrides.get("max_length"):
        preprocess = replace(preprocess, max_length=int(overrides["max_length"]))
    card = replace(card, task=task or card.task, preprocess=preprocess)
    check_preprocess(card)
    save_card(card)
    return card
