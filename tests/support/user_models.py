"""ONNX models a user would bring, exported here from PyTorch with seeded random weights (used by the tests and by
benchmarks/optimize.py): a torchvision classifier, a recurrent text classifier over token ids, an MLP."""

from __future__ import annotations

from pathlib import Path


def export(module, args: tuple, path: Path, inputs: list[str], outputs: list[str], dynamic: dict) -> Path:
    """A PyTorch module exported to ONNX as a user would (the legacy exporter, dynamic axes, opset 17)."""
    import torch

    with torch.inference_mode():
        torch.onnx.export(module.eval(), args, str(path), input_names=inputs, output_names=outputs,
                          dynamic_axes=dynamic, opset_version=17, dynamo=False)  # fmt: skip
    return path


def torchvision_classifier(name: str, path: Path, classes: int = 1000) -> Path:
    """A torchvision architecture with random weights, input `pixel_values` [N, 3, 224, 224]."""
    import torch
    import torchvision

    torch.manual_seed(0)
    return export(getattr(torchvision.models, name)(num_classes=classes), (torch.randn(1, 3, 224, 224),), path,
                  ["pixel_values"], ["logits"], {"pixel_values": {0: "batch"}, "logits": {0: "batch"}})  # fmt: skip


def recurrent_classifier(path: Path, width: int = 32, vocabulary: int = 30522) -> Path:
    """Embedding → GRU → mean → 4 classes over token ids `ids` [N, sequence] (no mask: never padded)."""
    import torch

    class Classifier(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.gru = torch.nn.Embedding(vocabulary, width), torch.nn.GRU(width, width, batch_first=True)
            self.head = torch.nn.Linear(width, 4)

        def forward(self, ids):
            return self.head(self.gru(self.embed(ids))[0].mean(dim=1))

    torch.manual_seed(0)
    return export(Classifier(), (torch.randint(0, vocabulary, (1, 16)),), path, ["ids"], ["logits"],
                  {"ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch"}})  # fmt: skip


def mlp(path: Path) -> Path:
    """x [N, 16] float32 → 64 → 3: a model over generic tensors."""
    import torch

    torch.manual_seed(0)
    layers = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 3))
    return export(layers, (torch.randn(2, 16),), path, ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
