"""PyTorch eager backend, for baselines: a Session around an nn.Module built elsewhere (models.export)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from turboinfer.core.errors import MissingExtra
from turboinfer.core.types import TensorSpec
from turboinfer.runtime.session import SessionOptions, check_feeds


def import_torch() -> Any:
    """The torch module, or MissingExtra naming the extra to install."""
    try:
        import torch
    except ImportError:
        raise MissingExtra("torch", "torch") from None
    return torch


class TorchSession:
    """A Session that calls module(*inputs) in inference mode, float32 on the CPU."""

    backend = "torch"

    def __init__(
        self,
        module: Any,
        inputs: tuple[TensorSpec, ...],
        outputs: tuple[TensorSpec, ...],
        options: SessionOptions | None = None,
    ) -> None:
        self._torch = import_torch()
        self.options = options or SessionOptions()
        if self.options.intra_threads:
            self._torch.set_num_threads(self.options.intra_threads)
        self._module = module.eval()
        self.inputs = inputs
        self.outputs = outputs

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one eager forward pass."""
        check_feeds(self.inputs, feeds)
        torch = self._torch
        args = [torch.from_numpy(np.ascontiguousarray(feeds[spec.name])) for spec in self.inputs]
        with torch.inference_mode():
            result = self._module(*args)
        tensors = result if isinstance(result, tuple | list) else (result,)
        return {spec.name: t.numpy() for spec, t in zip(self.outputs, tensors, strict=True)}

    def describe(self) -> dict[str, Any]:
        """Torch version and threads in use."""
        return {
            "backend": self.backend,
            "torch": self._torch.__version__,
            "precision": "fp32",
            "threads": self._torch.get_num_threads(),
            "options": self.options.to_dict(),
        }
