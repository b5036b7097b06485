"""PyTorch eager backend, for baselines: a Session around an nn.Module built elsewhere (models.export); and
torchvision's JPEG decoder (nvJPEG on a CUDA device) for the data path."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from turboinfer.core.errors import InvalidInput, MissingExtra
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


def cuda_available() -> bool:
    """Whether PyTorch sees a CUDA device (checks for the NVIDIA driver first, so no GPU costs no torch import)."""
    if not Path("/dev/nvidiactl").exists():
        return False
    try:
        return bool(import_torch().cuda.is_available())
    except MissingExtra:
        return False


def decode_jpeg(data: bytes, device: str = "cpu") -> np.ndarray:
    """JPEG bytes → RGB uint8 [H, W, 3] with torchvision.io.decode_jpeg: libjpeg-turbo at full size on the CPU,
    nvJPEG on a CUDA device (the pixels come back to host memory). Undecodable bytes raise InvalidInput."""
    torch = import_torch()
    from torchvision.io import ImageReadMode
    from torchvision.io import decode_jpeg as torchvision_decode

    encoded = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    try:
        with warnings.catch_warnings():  # torchvision 0.29 deprecates its decoders in favour of TorchCodec
            warnings.simplefilter("ignore", DeprecationWarning)
            image = torchvision_decode(encoded, mode=ImageReadMode.RGB, device=device)
    except RuntimeError as err:
        raise InvalidInput(f"corrupt or truncated JPEG: {str(err).splitlines()[0]}") from None
    return np.ascontiguousarray(image.permute(1, 2, 0).cpu().numpy())
