"""A corpus of bad and odd requests for a KServe V2 server with an image route: valid V2 bodies with one field
replaced by a value of another JSON type (or removed), binary bodies with wrong lengths, and real JPEGs
truncated, bit-flipped or with edited headers (dimensions of a decompression bomb among them). Deterministic for a
seed; the fuzz tests draw the same mutations from Hypothesis instead of a seeded generator."""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from typing import Any

from turboinfer.core.card import ModelCard
from turboinfer.core.types import V2_DATATYPES
from turboinfer.models.variant import sample_feeds

MISSING = object()
"""A mutation value meaning: remove the field."""
INPUT_FIELDS = ("name", "shape", "datatype", "data", "parameters", "parameters.binary_data_size")
TOP_FIELDS = ("id", "inputs", "outputs", "parameters", "parameters.binary_data_output", "outputs.0.name",
              "outputs.0.parameters", "outputs.0.parameters.binary_data")  # fmt: skip


@dataclass(frozen=True)
class Probe:
    """One request of the corpus: where it goes, its body and headers, and which mutation made it."""

    route: str
    """"infer" (V2) or "image"."""
    model: str
    body: bytes
    headers: dict[str, str]
    kind: str


def v2_body(card: ModelCard, sequence: int = 8) -> dict[str, Any]:
    """A valid V2 JSON request for one row of the card's inputs (token inputs `sequence` long, values 0/1)."""
    feeds = sample_feeds(card, 1, sequence)
    inputs = [{"name": n, "shape": list(a.shape), "datatype": V2_DATATYPES[a.dtype.name], "data": a.ravel().tolist()}
              for n, a in feeds.items()]  # fmt: skip
    return {"id": "probe", "inputs": inputs, "outputs": [{"name": card.outputs[0].name}]}


def mutated(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of body with the field at a dotted path ("inputs.0.shape") replaced by value (MISSING: removed);
    objects on the path that are absent (a request's "parameters") are created."""
    out = copy.deepcopy(body)
    node: Any = out
    *parents, last = path.split(".")
    for key in parents:
        if isinstance(node, list):
            node = node[int(key)]
            continue
        if not isinstance(node.get(key), dict | list):
            node[key] = {}
        node = node[key]
    if value is MISSING:
        node.pop(last, None)
    else:
        node[last] = value
    return out


def json_value(rng: random.Random, depth: int = 2) -> Any:
    """A random JSON value of any type, nesting up to depth."""
    kind = rng.randrange(9 if depth else 7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, -1, 1, 3, 224, 2**31, -(2**63), 2**63 - 1, 10**30])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308, 3.0, 1e-320])
    if kind == 4:
        return rng.choice(["", "FP32", "image", "BYTES", "\u00e9\u0000", "x" * 300, "1,3,224,224"])
    if kind == 5:
        return []
    if kind == 6:
        return {}
    if kind == 7:
        return [json_value(rng, depth - 1) for _ in range(rng.randrange(1, 5))]
    return {rng.choice(["name", "shape", "a", ""]): json_value(rng, depth - 1) for _ in range(rng.randrange(1, 4))}


def jpeg_mutation(jpeg: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A real JPEG broken one way: truncated, bit-flipped, header bytes edited, or its SOF dims set huge."""
    choice = rng.randrange(4)
    if choice == 0:
        return jpeg[: rng.randrange(len(jpeg))], "truncated"
    data = bytearray(jpeg)
    if choice == 1:
        for _ in range(rng.randrange(1, 32)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data), "bit-flips"
    if choice == 2:
        for _ in range(rng.randrange(1, 8)):
            data[rng.randrange(min(len(data), 600))] = rng.randrange(256)
        return bytes(data), "header-edit"
    sof = next((i for i in range(2, len(data) - 9) if data[i] == 0xFF and data[i + 1] in (0xC0, 0xC1, 0xC2)), None)
    if sof is None:
        return jpeg[:-1], "truncated"
    data[sof + 5 : sof + 9] = bytes([0xFF, 0xFF, 0xFF, 0xFF])  # 65535 × 65535: a decompression bomb's header
    return bytes(data), "bomb"


def corpus(cards: list[ModelCard], jpegs: dict[str, list[bytes]], count: int, seed: int = 0) -> list[Probe]:
    """`count` probes, deterministic for seed: for each card V2 field mutations and binary bodies; for the image
    models in `jpegs` (model name → real JPEGs) broken photos too."""
    rng = random.Random(seed)
    templates = {card.name: v2_body(card) for card in cards}
    probes: list[Probe] = []
    while len(probes) < count:
        card = rng.choice(cards)
        body = templates[card.name]
        family = rng.randrange(4 if jpegs.get(card.name) else 3)
        if family == 0:
            where = f"inputs.{rng.randrange(len(body['inputs']))}.{rng.choice(INPUT_FIELDS)}"
            value = MISSING if rng.random() < 0.1 else json_value(rng)
            probes.append(Probe("infer", card.name, json.dumps(mutated(body, where, value)).encode(),
                                {"Content-Type": "application/json"}, f"field {where}"))  # fmt: skip
        elif family == 1:
            where = rng.choice(TOP_FIELDS)
            raw = json.dumps(mutated(body, where, MISSING if rng.random() < 0.1 else json_value(rng))).encode()
            probes.append(Probe("infer", card.name, raw, {"Content-Type": "application/json"}, f"field {where}"))
        elif family == 2:
            probes.append(binary_probe(card.name, body, rng))
        else:
            raw, kind = jpeg_mutation(rng.choice(jpegs[card.name]), rng)
            probes.append(Probe("image", card.name, raw, {"Content-Type": "image/jpeg"}, f"jpeg {kind}"))
    return probes


def binary_probe(model: str, body: dict[str, Any], rng: random.Random) -> Probe:
    """The template's first input sent as binary data, with a header length or data size off by a random amount."""
    entry = dict(body["inputs"][0])
    values = entry.pop("data")
    size = len(values) * 8
    entry["parameters"] = {"binary_data_size": size + rng.choice([0, 0, -1, 1, -size, 10**9])}
    head = json.dumps({**body, "inputs": [entry, *body["inputs"][1:]]}).encode()
    tail = rng.randbytes(max(0, size + rng.choice([0, -3, 5])))
    length = len(head) + rng.choice([0, 0, -1, 1, -len(head), len(tail) + 1])
    return Probe("infer", model, head + tail, {"Inference-Header-Content-Length": str(length)}, "binary")
