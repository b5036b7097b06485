"""The environment capsule attached to every stored result: what ran, on what, with which settings."""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from turboinfer.hardware.probe import probe_cpu

PACKAGES = ("turboinfer", "numpy", "onnx", "onnxruntime", "openvino", "nncf", "torch", "torchvision")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed versions of the packages that change results (None when absent); imports nothing."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def environment_capsule(command: list[str] | None = None, settings: dict[str, Any] | None = None) -> dict:
    """Package versions, CPU, thread variables, command line and the result's own settings."""
    cpu = probe_cpu()
    return {
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command if command is not None else list(sys.argv),
        "python": platform.python_version(),
        "packages": package_versions(),
        "cpu": {"model": cpu.model, "cores": cpu.cores, "quota_cpus": cpu.quota_cpus, "isa": list(cpu.isa)},
        "thread_env": {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ},
        "settings": settings or {},
    }
