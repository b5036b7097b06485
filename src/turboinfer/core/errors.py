"""Errors a user can act on. Each carries a one-line message; the CLI prints it without a traceback."""

from __future__ import annotations

import importlib
from types import ModuleType


class TurboinferError(Exception):
    """Base of every error turboinfer raises on purpose."""

    exit_code = 2


class InvalidInput(TurboinferError):
    """Input data (image bytes, tensor, argument) is malformed or out of range."""


class ModelNotFound(TurboinferError):
    """A model name, card or file does not exist."""


class InvalidModel(TurboinferError):
    """A model file or card exists but cannot be used (corrupt, wrong format, missing fields)."""


class MissingExtra(TurboinferError):
    """An optional dependency is needed but not installed."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(f"{package} is not installed; install the extra with: pip install -e '.[{extra}]'")
        self.package = package
        self.extra = extra


def optional_import(module: str, extra: str, package: str = "") -> ModuleType:
    """An optional dependency's module, or MissingExtra naming its package (the module's name by default) and the
    extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(package or module, extra) from None


class BudgetExceeded(TurboinferError):
    """No candidate meets the accuracy budget."""

    exit_code = 3


class DataUnavailable(TurboinferError):
    """Real data the command needs (photos, sentences) is not present on this machine."""
