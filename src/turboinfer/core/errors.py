"""Errors a user can act on. Each carries a one-line message; the CLI prints it without a traceback."""


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


class BudgetExceeded(TurboinferError):
    """No candidate meets the accuracy budget."""

    exit_code = 3


class DataUnavailable(TurboinferError):
    """Real data the command needs (photos, sentences) is not present on this machine."""
