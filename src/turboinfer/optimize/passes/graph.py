"""Graph passes: ONNX Runtime's optimizer with the optimized graph saved, onnxslim folding, transformer fusion."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import onnx

from turboinfer.core.card import ModelCard
from turboinfer.core.errors import InvalidModel
from turboinfer.optimize.passes.base import Pass, PassContext, Transformed


@dataclass(frozen=True)
class OrtGraphConfig:
    """Which of ORT's graph optimization levels to apply and save."""

    level: Literal["basic", "extended", "all"] = "extended"
    SEARCHABLE: ClassVar[tuple[str, ...]] = ("level",)


class OrtGraph(Pass):
    """Run ONNX Runtime's graph optimizer once and save the result, so sessions load the optimized graph.

    "all" adds layout transforms for this CPU's kernels (not portable to another machine); "extended" is the
    portable default.
    """

    name: ClassVar[str] = "ort-graph"
    Config = OrtGraphConfig
    config: OrtGraphConfig

    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Write ORT's optimized graph to folder/model.onnx."""
        import onnxruntime as ort

        from turboinfer.runtime.onnxruntime import GRAPH_LEVELS

        target = folder / "model.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = GRAPH_LEVELS[self.config.level]
        options.optimized_model_filepath = str(target)
        options.log_severity_level = 3
        ort.InferenceSession(str(card.onnx_path), options, providers=["CPUExecutionProvider"])
        return target, Transformed(facts={"nodes": node_count(target)})


@dataclass(frozen=True)
class OnnxSlimConfig:
    """onnxslim's constant folding and dead-node removal (no options searched)."""

    SEARCHABLE: ClassVar[tuple[str, ...]] = ()


class OnnxSlim(Pass):
    """Constant folding, shape-op elimination and dead-node removal with onnxslim."""

    name: ClassVar[str] = "onnxslim"
    Config = OnnxSlimConfig
    config: OnnxSlimConfig

    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Write the slimmed model to folder/model.onnx."""
        import onnxslim

        target = folder / "model.onnx"
        before = node_count(card.onnx_path)
        onnx.save(onnxslim.slim(str(card.onnx_path)), str(target))
        return target, Transformed(facts={"nodes_before": before, "nodes": node_count(target)})


@dataclass(frozen=True)
class FusionConfig:
    """ORT's transformer optimizer: attention, layer-norm, GELU and bias fusions for BERT-like models."""

    model_type: str = "bert"
    SEARCHABLE: ClassVar[tuple[str, ...]] = ()


class TransformerFusion(Pass):
    """Fuse BERT-style subgraphs into ORT's contrib ops (Attention, SkipLayerNormalization, BiasGelu)."""

    name: ClassVar[str] = "ort-fusion"
    Config = FusionConfig
    config: FusionConfig

    def transform(self, card: ModelCard, folder: Path, context: PassContext) -> tuple[Path, Transformed]:
        """Write the fused model to folder/model.onnx and record which fusions happened."""
        if card.task != "embed":
            raise InvalidModel("transformer fusion applies to transformer (text) models only")
        from onnxruntime.transformers.optimizer import optimize_model

        optimized = optimize_model(str(card.onnx_path), model_type=self.config.model_type, opt_level=0)
        target = folder / "model.onnx"
        optimized.save_model_to_file(str(target))
        fused = {op: n for op, n in optimized.get_fused_operator_statistics().items() if n}
        return target, Transformed(facts={"fused": fused, "nodes": node_count(target)})


def node_count(path: Path) -> int:
    """Number of nodes in an ONNX file's main graph."""
    return len(onnx.load(str(path), load_external_data=False).graph.node)
