"""Each pass on a real zoo model: it writes a new card into the cache and the model still answers like the
original (exactly for graph passes, within a measured fidelity for quantization)."""

import time
from dataclasses import replace

import numpy as np
import onnx
import pytest

from tests.support.outputs import outputs
from turboinfer.core.errors import InvalidInput, InvalidModel
from turboinfer.hardware.probe import CpuInfo
from turboinfer.measure.fidelity import classify_metrics, embed_metrics
from turboinfer.optimize.passes import make_pass
from turboinfer.optimize.passes.base import apply_pass, model_bytes
from turboinfer.optimize.passes.session import SessionTuningConfig, tuned_options
from turboinfer.runtime.session import SessionOptions, open_session


@pytest.fixture(scope="module")
def effnet_reference(effnet, effnet_sets):
    return outputs(effnet, effnet_sets)


@pytest.fixture(scope="module")
def minilm_reference(minilm, minilm_sets):
    return outputs(minilm, minilm_sets)


def op_types(card):
    return {node.op_type for node in onnx.load(str(card.onnx_path)).graph.node}


@pytest.mark.parametrize("name", ["ort-graph", "onnxslim", "fold-normalize"])
def test_graph_passes_keep_the_function(name, effnet, effnet_sets, effnet_context, effnet_reference):
    card = apply_pass(make_pass(name), effnet, effnet_context)
    assert card.onnx_path.parent.parent == effnet_context.cache_dir and card.name == f"efficientnet-lite0.{name}"
    assert card.extra["passes"][-1]["pass"] == name
    got = outputs(card, effnet_sets)
    np.testing.assert_allclose(got["logits"], effnet_reference["logits"], atol=2e-3, rtol=1e-3)


def test_folded_normalization_takes_uint8_nhwc(effnet, effnet_context):
    card = apply_pass(make_pass("fold-normalize"), effnet, effnet_context)
    assert card.inputs[0].dtype == "uint8" and card.inputs[0].shape == ("batch", 224, 224, 3)
    assert card.preprocess.input_dtype == "uint8" and card.preprocess.layout == "NHWC"
    with pytest.raises(InvalidModel, match="float NCHW input"):
        apply_pass(make_pass("fold-normalize"), card, effnet_context)  # already folded


def test_static_int8_is_smaller_quantized_and_cached(effnet, effnet_sets, effnet_context, effnet_reference):
    step = make_pass("ort-int8-static", {"per_channel": True})
    card = apply_pass(step, effnet, effnet_context)
    assert {"QuantizeLinear", "DequantizeLinear"} <= op_types(card)
    assert model_bytes(card) < model_bytes(effnet) / 3  # INT8 weights: about a quarter of FP32
    agreement = classify_metrics(effnet_reference["logits"], outputs(card, effnet_sets)["logits"])["top1_agreement"]
    assert 0.5 < agreement <= 1.0
    start = time.perf_counter()
    again = apply_pass(make_pass("ort-int8-static", {"per_channel": True}), effnet, effnet_context)
    assert again.onnx_path == card.onnx_path and time.perf_counter() - start < 5  # a cache hit, not a re-quantization


def test_static_int8_keeps_excluded_nodes_in_float(effnet, effnet_context):
    stem = "/body/_conv_stem/Conv"
    card = apply_pass(make_pass("ort-int8-static", {"exclude_nodes": [stem]}), effnet, effnet_context)
    conv = next(n for n in onnx.load(str(card.onnx_path)).graph.node if n.name == stem)
    assert "DequantizeLinear" not in conv.input[1] and card.extra["ort-int8-static"]["excluded"] == [stem]


def test_nncf_int8_and_openvino_ir_run_on_openvino_only(effnet, effnet_sets, effnet_context, effnet_reference):
    ir = apply_pass(make_pass("openvino-ir"), effnet, effnet_context)
    np.testing.assert_allclose(outputs(ir, effnet_sets, "openvino")["logits"], effnet_reference["logits"], atol=2e-3)
    with pytest.raises(InvalidModel, match="openvino backend"):
        open_session(ir.onnx_path, "ort")
    quantized = apply_pass(make_pass("nncf-int8", {"subset_size": 16}), effnet, effnet_context)
    assert quantized.onnx_path.suffix == ".xml" and model_bytes(quantized) < model_bytes(effnet) / 2
    got = outputs(quantized, effnet_sets, "openvino")["logits"]
    assert 0.5 < classify_metrics(effnet_reference["logits"], got)["top1_agreement"] <= 1.0


def test_transformer_passes_on_minilm(minilm, minilm_sets, minilm_context, minilm_reference):
    fused = apply_pass(make_pass("ort-fusion"), minilm, minilm_context)
    assert fused.extra["ort-fusion"]["fused"]  # e.g. SkipLayerNormalization, Attention
    assert (fused.folder / "tokenizer.json").is_file()  # side files travel with the card
    close = embed_metrics(minilm_reference["sentence_embedding"], outputs(fused, minilm_sets)["sentence_embedding"])
    assert close["cosine_min"] > 0.9999
    dynamic = apply_pass(make_pass("ort-int8-dynamic"), minilm, minilm_context)
    assert "DynamicQuantizeLinear" in op_types(dynamic) or "MatMulInteger" in op_types(dynamic)
    quantized = embed_metrics(
        minilm_reference["sentence_embedding"], outputs(dynamic, minilm_sets)["sentence_embedding"]
    )
    assert 0.8 < quantized["cosine_mean"] < 1.0
    with pytest.raises(InvalidModel, match="transformer"):
        apply_pass(make_pass("ort-fusion"), replace(minilm, task="classify"), minilm_context)


def test_fp16_converts_weights_and_keeps_float32_io(tiny_model, tmp_path):
    from turboinfer.models.cards import card_from_onnx
    from turboinfer.optimize.passes.base import PassContext

    card = card_from_onnx(tiny_model)
    half = apply_pass(make_pass("fp16"), card, PassContext(tmp_path))
    weights = onnx.load(str(half.onnx_path)).graph.initializer
    assert {w.data_type for w in weights} == {onnx.TensorProto.FLOAT16}
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    want = open_session(card.onnx_path).run({"x": x})["y"]
    np.testing.assert_allclose(open_session(half.onnx_path).run({"x": x})["y"], want, atol=1e-2, rtol=1e-2)


def test_session_tuning_stays_within_the_usable_cpus():
    cpu = CpuInfo("cpu", "x86_64", 8, 8, 2.0, ())  # 8 visible cores, a 2-CPU cgroup quota
    config = SessionTuningConfig(try_parallel=True, try_no_arena=True)
    options = tuned_options(SessionOptions(intra_threads=2), cpu, config)
    assert [o.intra_threads for o in options if not o.parallel and o.memory_arena] == [1]
    assert any(o.parallel for o in options) and any(not o.memory_arena for o in options)
    assert tuned_options(SessionOptions(), cpu, SessionTuningConfig(threads=(1, 4, 8))) == [
        SessionOptions(intra_threads=1)
    ]


def test_unknown_passes_and_bad_configs_are_named():
    with pytest.raises(InvalidInput, match="unknown pass 'turbo'"):
        make_pass("turbo")
    with pytest.raises(InvalidInput, match="bad config for pass 'ort-int8-static'"):
        make_pass("ort-int8-static", {"bits": 4})


def test_calibration_batches_are_bounded(effnet, effnet_context):
    bounded = replace(effnet_context, max_calibration_batch=4)
    sizes = [len(feeds["image"]) for feeds in bounded.calibration_batches(effnet, 16)]
    assert sizes and max(sizes) == 4 and sum(sizes) == 16  # every calibration input, four at a time
