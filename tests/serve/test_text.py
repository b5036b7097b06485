"""A text model served under concurrency: requests of mixed token counts batch together (padded to the longest,
mask 0) or per length bucket, and every embedding equals the one computed alone."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.support.http import call, metric, running
from turboinfer.core.types import TextPreprocess
from turboinfer.measure.sentences import real_sentences
from turboinfer.models.preprocess import TextTokenizer
from turboinfer.models.variant import parse_variant
from turboinfer.runtime.session import open_session
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.run import build_server
from turboinfer.serve.v2.batcher import BatcherConfig
from turboinfer.serve.v2.padding import SequencePadding, sequence_padding
from turboinfer.serve.v2.repository import ModelServing


def token_requests(minilm, count: int) -> list[dict[str, np.ndarray]]:
    """One request per real sentence, each tokenized alone (so lengths differ: 8 to ~70 tokens)."""
    assert isinstance(minilm.preprocess, TextPreprocess)
    tokenize = TextTokenizer(minilm.folder / minilm.preprocess.tokenizer, minilm.preprocess)
    return [tokenize([s]) for s in real_sentences(count)]


def v2_tokens(feeds: dict[str, np.ndarray]) -> bytes:
    return json.dumps({"inputs": [{"name": n, "shape": list(a.shape), "datatype": "INT64", "data": a.ravel().tolist()}
                                  for n, a in feeds.items()]}).encode()  # fmt: skip


def test_the_padding_rule_is_found_for_a_masked_text_model_only(minilm, effnet):
    padding = sequence_padding(minilm, bucket=16)
    assert padding == SequencePadding(("input_ids", "attention_mask", "token_type_ids"), (), 16)
    assert sequence_padding(effnet) is None
    short = {"input_ids": np.ones((1, 5), np.int64), "attention_mask": np.ones((1, 5), np.int64),
             "token_type_ids": np.zeros((1, 5), np.int64)}  # fmt: skip
    long = {name: np.ones((1, 17), np.int64) for name in short}
    assert padding.key(short) != padding.key(long) and padding.key(short) == padding.key({**short})
    padded = padding.pad([short, long])
    assert padded[0]["input_ids"].shape == (1, 17) and padded[0]["attention_mask"][0, 5:].sum() == 0


@pytest.mark.parametrize("bucket", [0, 32])
def test_concurrent_mixed_length_requests_all_succeed_with_their_unbatched_embeddings(minilm, settings, bucket):
    requests = token_requests(minilm, 24)
    assert len({r["input_ids"].shape[1] for r in requests}) > 5
    session = open_session(minilm.onnx_path)
    alone = [session.run(r)["sentence_embedding"][0] for r in requests]
    batching = BatcherConfig(max_batch=8, max_delay_s=0.02, seq_bucket=bucket)
    server = build_server([ModelServing(parse_variant("minilm-l6", settings), batching)], ServeConfig(batching))
    with running(server) as base, ThreadPoolExecutor(16) as pool:
        url = f"{base}/v2/models/minilm-l6/infer"
        answers = list(pool.map(lambda r: call(url, v2_tokens(r)), requests))
        text = call(f"{base}/metrics")[2].decode()
    assert [status for status, _, _ in answers] == [200] * len(requests), answers[0][2][:300]
    for (_, _, raw), expected in zip(answers, alone, strict=True):
        got = np.array(json.loads(raw)["outputs"][0]["data"], np.float64)
        cosine = got @ expected / (np.linalg.norm(got) * np.linalg.norm(expected))
        assert 1 - cosine < 1e-5
    rows = metric(text, 'turboinfer_inference_count_total{model="minilm-l6"}')
    batches = metric(text, 'turboinfer_execution_count_total{model="minilm-l6"}')
    assert batches < rows  # requests of different lengths did share batches
