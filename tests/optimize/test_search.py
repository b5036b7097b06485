"""The default space follows the machine; strategies are ask/tell and the budget gates refinement."""

from dataclasses import replace
from pathlib import Path

import pytest

from turboinfer.core.card import ModelCard, Provenance
from turboinfer.core.errors import InvalidInput
from turboinfer.core.types import ImagePreprocess, TensorSpec, TextPreprocess
from turboinfer.hardware.probe import CpuInfo
from turboinfer.optimize.plan import Candidate, Outcome, Plan, Step
from turboinfer.optimize.search import (
    Exhaustive,
    RandomSearch,
    RefineSpace,
    Staged,
    default_space,
    in_pass_order,
    space_for,
)

IMAGE_IN = (TensorSpec("image", ("batch", 3, 224, 224), "float32"),)
LOGITS = (TensorSpec("logits", ("batch", 1000), "float32"),)
IMAGE = ModelCard("net", "classify", Path("m.onnx"), IMAGE_IN, LOGITS, Provenance("test", "none"), ImagePreprocess())
TEXT = replace(IMAGE, task="embed", preprocess=TextPreprocess())
AMX = CpuInfo("Xeon", "x86_64", 2, 2, None, ("avx512f", "avx512_vnni", "amx_int8", "amx_bf16"))
AVX2 = CpuInfo("old", "x86_64", 2, 2, None, ("avx2", "fma"))


def steps(candidates):
    return [tuple(s.name for s in c.steps) for c in candidates]


def test_int8_and_bf16_are_skipped_up_front_on_a_cpu_that_cannot_pay():
    candidates, skipped = default_space(IMAGE, AVX2, Plan("net"), cuda=False)
    assert ("ort-int8-static",) not in steps(candidates)
    reasons = {s.reason for s in skipped}
    assert any("no VNNI or AMX" in r for r in reasons) and any("no BF16 units" in r for r in reasons)
    assert any("FP16 needs a GPU" in r for r in reasons)
    full, skipped_full = default_space(IMAGE, AMX, Plan("net", swap=("mobilenetv2",)), cuda=True)
    assert ("ort-int8-static",) in steps(full) and ("nncf-int8",) in steps(full) and ("fp16",) in steps(full)
    assert any(c.options.precision == "bf16" for c in full) and not skipped_full
    assert [c.model for c in full if c.model] == ["mobilenetv2", "mobilenetv2"]
    assert all(c.options.intra_threads == 2 for c in full)  # the usable CPUs, never more


def test_text_models_get_fusion_and_dynamic_int8_and_quick_drops_slow_candidates():
    candidates, _ = default_space(TEXT, AMX, Plan("minilm"), cuda=False)
    assert ("ort-fusion", "ort-int8-dynamic") in steps(candidates) and ("ort-int8-static",) not in steps(candidates)
    quick, _ = default_space(IMAGE, AMX, Plan("net", quick=True), cuda=False)
    assert not any(s.config.get("accuracy_control") for c in quick for s in c.steps)


def test_staged_refines_the_fastest_candidate_that_fits():
    first = Candidate((), "ort")
    int8 = Candidate((Step("ort-int8-static"),), "ort")
    ov = Candidate((), "openvino")
    strategy = Staged([first, int8, ov], RefineSpace(AMX, fold=True, batches=(4,)))
    asked = []
    while (candidate := strategy.ask()) is not None:
        asked.append(candidate)
        ratio = 1.0 if candidate == first else 0.5 if candidate == int8 else 0.8 if candidate == ov else 0.9
        status = "rejected" if candidate == int8 else "not chosen"  # the fastest breaks the budget
        strategy.tell(Outcome(candidate, status, ratio=ratio))
    refined = asked[3:]
    assert all(c.backend == "openvino" for c in refined)  # around ov, the fastest that fits
    assert refined[0].steps == (Step("fold-normalize"),)  # nothing quantized: folded at the end, which is all
    assert refined[1].steps == (Step("fold-normalize", {"layout": "NCHW"}),)
    assert {c.options.intra_threads for c in refined[2:] if not c.batch} == {1, 2}
    assert refined[-1].batch == 4


def test_exhaustive_and_random_are_deterministic_and_start_with_the_original():
    pool = [Candidate((), "ort", model=str(i)) for i in range(10)]
    assert [c.model for c in iter(Exhaustive(pool).ask, None)] == [str(i) for i in range(10)]
    drawn = [c.model for c in iter(RandomSearch(pool, trials=4, seed=3).ask, None)]
    assert len(drawn) == 4 and drawn[0] == "0" and len(set(drawn)) == 4
    assert drawn == [c.model for c in iter(RandomSearch(pool, trials=4, seed=3).ask, None)]


def test_normalization_is_folded_after_quantization_never_before():
    """The pass-order rule: a prologue folded in before quantization gets QDQ nodes of its own (slower)."""
    int8 = Candidate((Step("ort-int8-static"),), "ort")
    folded = [c.steps for c in RefineSpace(AMX, fold=True).around(int8)[:2]]
    assert folded == [(Step("ort-int8-static"), Step("fold-normalize")),
                      (Step("ort-int8-static"), Step("fold-normalize", {"layout": "NCHW"}))]  # fmt: skip
    nncf = Candidate((Step("nncf-int8"),), "openvino")
    assert all(s.name != "fold-normalize" for c in RefineSpace(AMX, fold=True).around(nncf) for s in c.steps)
    users = Candidate((Step("fold-normalize"), Step("onnxslim"), Step("ort-int8-static")), "ort")
    assert in_pass_order(users).steps == (Step("onnxslim"), Step("ort-int8-static"), Step("fold-normalize"))
    plan = Plan("net", space=(users, Candidate((Step("onnxslim"), Step("fold-normalize")), "ort")))
    ordered, _ = space_for(IMAGE, AMX, plan)
    assert [steps([c]) for c in ordered[1:]] == [[("onnxslim", "ort-int8-static", "fold-normalize")],
                                                 [("onnxslim", "fold-normalize")]]  # fmt: skip
    with pytest.raises(InvalidInput, match="fold-normalize cannot follow nncf-int8"):
        in_pass_order(Candidate((Step("fold-normalize"), Step("nncf-int8")), "openvino"))


def test_generic_tensor_models_get_static_and_dynamic_int8():
    tensor = replace(IMAGE, inputs=(TensorSpec("x", ("batch", 16), "float32"),), preprocess=None)
    candidates, _ = default_space(tensor, AMX, Plan("mlp"), cuda=False)
    assert ("ort-int8-static",) in steps(candidates) and ("ort-int8-dynamic",) in steps(candidates)
