"""What every CLI module shares: Settings from the environment, the --json option, the server's log options."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from turboinfer.cli.groups import option_group
from turboinfer.core.settings import Settings
from turboinfer.serve.logs import LEVELS, configure_logging

JsonOption = Annotated[Path | None, typer.Option("--json", help="Also write the result as JSON here.")]
LogLevelOption = Annotated[str, typer.Option(help="Server log level: debug, info (one access line per request), "
                                             "warning or error.")]  # fmt: skip
LogFormatOption = Annotated[str, typer.Option(help="Server log lines as text or json.")]
TokenizerOption = Annotated[Path | None, typer.Option(help="A tokenizer.json for a text model that has none.")]


def overload_status(value: int) -> int:
    """--overload-status: 429 or 503 (BadParameter for anything else)."""
    if value not in (429, 503):
        raise typer.BadParameter("choose 429 or 503")
    return value


OverloadStatusOption = Annotated[int, typer.Option(help="429 or 503 when the queue is full.", callback=overload_status)]


@option_group("Listening")
class Listening:
    """Where the server listens, what it accepts, how it logs."""

    host: Annotated[str, typer.Option(help="Bind address (loopback by default).")] = "127.0.0.1"
    port: Annotated[int, typer.Option()] = 8000
    overload_status: OverloadStatusOption = 429
    max_body_mb: Annotated[float, typer.Option(help="Largest request body, MiB.")] = 16.0
    log_level: LogLevelOption = "info"
    log_format: LogFormatOption = "text"

    def configure_logging(self) -> None:
        """The server's logs as --log-level and --log-format say (BadParameter for anything else)."""
        server_logging(self.log_level, self.log_format)


def settings() -> Settings:
    """Settings from the environment (TURBOINFER_CACHE)."""
    return Settings.from_env(os.environ)


def server_logging(level: str, fmt: str) -> None:
    """Configure the server's logs from --log-level and --log-format (BadParameter for anything else)."""
    if level not in LEVELS:
        raise typer.BadParameter(f"choose one of {', '.join(LEVELS)}", param_hint="--log-level")
    if fmt not in ("text", "json"):
        raise typer.BadParameter("choose text or json", param_hint="--log-format")
    configure_logging(level, "json" if fmt == "json" else "text")


def int_list(text: str, option: str) -> tuple[int, ...]:
    """Parse "1,2,4" into (1, 2, 4); a clear error for anything else."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated integers, got {text!r}", param_hint=option) from None
    if not values or min(values) < 1:
        raise typer.BadParameter("expected positive integers", param_hint=option)
    return values


def float_list(text: str, option: str) -> tuple[float, ...]:
    """Parse "0.5,1,2" into (0.5, 1.0, 2.0) ("" → ()); a clear error for anything else."""
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated numbers, got {text!r}", param_hint=option) from None
    if values and min(values) <= 0:
        raise typer.BadParameter("expected positive numbers", param_hint=option)
    return values


def percent(text: str, option: str = "--fail-if-slower") -> float:
    """Parse "5%" or "0.05" into 0.05."""
    try:
        return float(text.rstrip("%")) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise typer.BadParameter(f"expected a percentage like 5%, got {text!r}", param_hint=option) from None


def budget_drop(text: str) -> tuple[float, bool]:
    """--budget: "1%" (relative to the original's accuracy) or "1pt" (accuracy points) → (0.01, points?)."""
    if text.endswith("pt"):
        return percent(text.removesuffix("pt") + "%", "--budget"), True
    return percent(text, "--budget"), False
