"""Variants named on a command line: zoo names with a backend, and .variant.json files with a threads override."""

from turboinfer.models.variant import Variant, parse_variant, save_variant
from turboinfer.runtime.session import SessionOptions


def test_a_variant_file_keeps_its_options_unless_threads_are_given(effnet, settings, tmp_path):
    saved = Variant(effnet, "openvino", SessionOptions(intra_threads=2, precision="bf16"))
    path = str(save_variant(saved, tmp_path / "chosen.variant.json"))

    assert parse_variant(path, settings) == saved
    one_thread = parse_variant(path, settings, backend="ort", threads=1)
    assert one_thread.options == SessionOptions(intra_threads=1, precision="bf16")
    assert one_thread.backend == "openvino"


def test_a_zoo_name_takes_the_backend_from_the_text_or_the_default(settings):
    assert parse_variant("efficientnet-lite0@openvino", settings, threads=2).backend == "openvino"
    assert parse_variant("efficientnet-lite0", settings, backend="openvino").options.intra_threads == 0
