"""One explicit Settings object; nothing reads the environment except Settings.from_env."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "TURBOINFER_CACHE"


@dataclass(frozen=True)
class Settings:
    """Where turboinfer keeps its cache (built models, extracted photos, history)."""

    cache_dir: Path

    @property
    def zoo_dir(self) -> Path:
        """Folder of the built zoo models, one sub-folder per model."""
        return self.cache_dir / "zoo"

    @property
    def history_path(self) -> Path:
        """The default SQLite file of bench runs."""
        return self.cache_dir / "history.sqlite"

    @property
    def debian_dir(self) -> Path:
        """Root where Debian photo packages are unpacked (``make data``)."""
        return self.cache_dir / "debian"

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Settings from TURBOINFER_CACHE, defaulting to ~/.cache/turboinfer."""
        raw = environ.get(CACHE_ENV)
        cache = Path(raw).expanduser() if raw else Path.home() / ".cache" / "turboinfer"
        return cls(cache_dir=cache)
