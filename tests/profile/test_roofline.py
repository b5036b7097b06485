import pytest

from turboinfer.models.variant import sample_feeds
from turboinfer.profile.roofline import Ceilings, graph_costs, op_flops, place
from turboinfer.runtime.shapes import observed_shapes


def test_conv_flops_read_groups_off_the_weight_shape():
    # 3x3 conv, 16→32 channels, 56x56 output: 2 · (32·56·56) · (16·3·3), plus one add per output for the bias
    dense = op_flops("Conv", [(1, 16, 56, 56), (32, 16, 3, 3), (32,)], [(1, 32, 56, 56)])
    assert dense == 2 * 32 * 56 * 56 * 16 * 9 + 32 * 56 * 56
    # depthwise: weight [32, 1, 3, 3] → 9 multiply-adds per output element
    assert op_flops("Conv", [(1, 32, 56, 56), (32, 1, 3, 3)], [(1, 32, 56, 56)]) == 2 * 32 * 56 * 56 * 9


def test_matmul_elementwise_pool_and_unknown():
    assert op_flops("MatMul", [(1, 128, 384), (384, 1536)], [(1, 128, 1536)]) == 2 * 128 * 1536 * 384
    assert op_flops("Relu", [(8, 10)], [(8, 10)]) == 80
    assert op_flops("Softmax", [(2, 5)], [(2, 5)]) == 50
    assert op_flops("Reshape", [(2, 5)], [(10,)]) == 0
    assert op_flops("MaxPool", [(1, 3, 8, 8)], [(1, 3, 4, 4)], kernel=(2, 2)) == 3 * 16 * 4
    assert op_flops("MaxPool", [(1, 3, 8, 8)], [(1, 3, 4, 4)]) is None
    assert op_flops("NonMaxSuppression", [(1, 4)], [(1, 3)]) is None
    assert op_flops("Conv", [(1, 3, 8, 8), None], [(1, 4, 8, 8)]) is None


def test_efficientnet_lite0_flops_match_the_published_count(effnet):
    model, shapes = observed_shapes(effnet.onnx_path, sample_feeds(effnet))
    costs = graph_costs(model, shapes)
    gflops = sum(c.flops or 0 for c in costs) / 1e9
    # published: 0.41 G multiply-adds at 224×224 (Tan & Le; TF EfficientNet-Lite README) = 0.82 GFLOP
    assert gflops == pytest.approx(0.8, rel=0.06)
    assert all(c.flops is not None for c in costs)
    assert all(c.bytes >= 0 for c in costs)


def test_minilm_flops_grow_with_sequence(minilm):
    totals = []
    for length in (32, 128):
        model, shapes = observed_shapes(minilm.onnx_path, sample_feeds(minilm, 1, length))
        totals.append(sum(c.flops or 0 for c in graph_costs(model, shapes)))
    assert totals[1] / totals[0] == pytest.approx(4, rel=0.15)  # linear layers dominate at these lengths


def test_roofline_placement():
    roof = Ceilings(peak_gflops=100.0, bandwidth_gbps=10.0)
    assert roof.ridge == 10.0
    low = place("a", "Add", flops=1e6, nbytes=1e6, seconds=1e-4, ceilings=roof)  # 1 FLOP/byte
    assert (low.bound, low.ceiling_gflops) == ("memory", 10.0)
    assert low.attained_gflops == pytest.approx(10.0)
    assert low.share_of_ceiling == pytest.approx(1.0)
    high = place("c", "Conv", flops=1e9, nbytes=1e6, seconds=0.02, ceilings=roof)  # 1000 FLOP/byte
    assert (high.bound, high.ceiling_gflops) == ("compute", 100.0)
    assert high.share_of_ceiling == pytest.approx(0.5)
    assert place("x", "Conv", 1e9, 1e6, None, roof).share_of_ceiling is None
