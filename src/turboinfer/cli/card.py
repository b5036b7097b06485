"""`turboinfer card …`: an editable ModelCard for a user's own ONNX file (typer sub-app)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from turboinfer.cli import render
from turboinfer.core.errors import InvalidInput
from turboinfer.models.cards import init_card

card = typer.Typer(no_args_is_help=True, help="ModelCards for your own ONNX models.")


def floats(text: str | None, option: str) -> tuple[float, ...] | None:
    """ "0.5,0.5,0.5" → (0.5, 0.5, 0.5); None stays None."""
    if text is None:
        return None
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated numbers, got {text!r}", param_hint=option) from None


@card.command("init")
def init_command(
    model: Annotated[Path, typer.Argument(help="An ONNX file (the card is written beside it).")],
    task: Annotated[str | None, typer.Option(help="classify, embed or unknown (default: inferred).")] = None,
    mean: Annotated[str | None, typer.Option(help="Image models: channel means (0..1 pixels), 0.5,0.5,0.5")] = None,
    std: Annotated[str | None, typer.Option(help="Image models: per-channel std on 0..1 pixels.")] = None,
    size: Annotated[int | None, typer.Option(min=1, help="Image models: side of the square crop, pixels.")] = None,
    resize: Annotated[int | None, typer.Option(min=1, help="Image models: shorter side before the crop.")] = None,
    tokenizer: Annotated[Path | None, typer.Option(help="Text models: a tokenizers JSON file.")] = None,
    max_length: Annotated[int | None, typer.Option(min=1, help="Text models: longest token sequence.")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing card.")] = False,
) -> None:  # fmt: skip
    """Write MODEL.card.json with what the graph says (input kind, preprocessing, task) and your overrides."""
    if not model.is_file() or model.suffix != ".onnx":
        raise InvalidInput(f"not an ONNX file: {model}")
    overrides = {"task": task, "mean": floats(mean, "--mean"), "std": floats(std, "--std"), "size": size,
                 "resize": resize, "tokenizer": tokenizer and str(tokenizer), "max_length": max_length}  # fmt: skip
    written = init_card(model, overrides, force)
    render.inferred(written, always=True)
    render.console.print(f"wrote {written.card_path}")
