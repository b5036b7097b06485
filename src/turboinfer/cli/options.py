"""What every CLI module shares: Settings from the environment and the --json option."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from turboinfer.core.settings import Settings

JsonOption = Annotated[Path | None, typer.Option("--json", help="Also write the result as JSON here.")]


def settings() -> Settings:
    """Settings from the environment (TURBOINFER_CACHE)."""
    return Settings.from_env(os.environ)
