"""KServe V2 / Open Inference Protocol codec: JSON tensors and the binary tensor data extension, validated
against the model's input specs before anything is queued."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np
import orjson

from turboinfer.core.errors import InvalidInput
from turboinfer.core.types import V2_DATATYPES, TensorSpec, check_shapes
from turboinfer.serve.schema import Fields, parse_object

HEADER_LENGTH = "inference-header-content-length"
NUMPY_OF_V2 = {v2: np.dtype(name) for name, v2 in V2_DATATYPES.items()}


@dataclass(frozen=True)
class InferRequest:
    """A decoded, validated inference request."""

    id: str | None
    inputs: dict[str, np.ndarray]
    outputs: tuple[str, ...] | None
    """Requested output names; None = all."""
    binary_outputs: frozenset[str]
    """Outputs to return as binary data."""


DATA_KINDS = {"f": "iuf", "i": "iu", "u": "iu", "b": "b"}
"""numpy kind of an input's dtype → kinds of JSON data accepted for it (integers for floats, never the reverse)."""


def decode_tensor(spec: TensorSpec, entry: Fields, binary: memoryview | None, limit: int | None = None) -> np.ndarray:
    """One input tensor from its JSON entry (and its binary bytes, when sent that way), every field checked; an
    index input (token ids) must lie in 0..limit-1."""
    dtype = spec.numpy_dtype()
    datatype = entry.string("datatype", required=True)
    if datatype != V2_DATATYPES.get(dtype.name):
        raise InvalidInput(f"input {spec.name!r}: datatype must be {V2_DATATYPES.get(dtype.name)}, got {datatype!r}")
    shape = tuple(entry.integers("shape", required=True) or ())
    spec.check_shape(shape)
    count = prod(shape)
    if binary is not None:
        if len(binary) != count * dtype.itemsize:
            raise InvalidInput(f"input {spec.name!r}: {len(binary)} bytes of binary data for shape {list(shape)}")
        array = np.frombuffer(binary, dtype=dtype.newbyteorder("<")).astype(dtype, copy=False).reshape(shape)
    else:
        array = json_values(spec, entry.array("data", required=True) or [], dtype)
        if array.size != count:
            raise InvalidInput(f"input {spec.name!r}: {array.size} values for shape {list(shape)} ({count} expected)")
        array = array.reshape(shape)
    if dtype.kind == "f" and not np.isfinite(array).all():
        raise InvalidInput(f"input {spec.name!r} contains NaN or infinity")
    if limit is not None and array.size and (array.min() < 0 or array.max() >= limit):
        raise InvalidInput(f"input {spec.name!r} indexes a table of {limit}: its values must lie in 0..{limit - 1}")
    return array


def json_values(spec: TensorSpec, data: list[Any], dtype: np.dtype) -> np.ndarray:
    """A tensor's JSON data (flat or nested row-major) as a flat array of dtype: numbers of the right kind only,
    within the dtype's range."""
    try:
        values = np.asarray(data).reshape(-1)
    except (ValueError, TypeError):  # ragged nesting
        raise InvalidInput(f"input {spec.name!r}: data must be a flat or evenly nested list of numbers") from None
    if values.size and values.dtype.kind not in DATA_KINDS.get(dtype.kind, "iuf"):
        raise InvalidInput(f"input {spec.name!r}: data must be {spec.dtype} values, got {described(values)}")
    if values.size and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if values.min() < info.min or values.max() > info.max:
            raise InvalidInput(f"input {spec.name!r}: data outside the range of {dtype.name}")
    return values.astype(dtype, copy=False)


def described(values: np.ndarray) -> str:
    """What a rejected data list held, in JSON words."""
    kinds = {"b": "booleans", "i": "integers", "u": "integers", "f": "fractional numbers", "U": "strings"}
    return kinds.get(values.dtype.kind, "values that are not all numbers")


def decode_request(
    body: bytes, header_length: str | None, inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...],
    limits: Mapping[str, int] | None = None,
) -> InferRequest:  # fmt: skip
    """Decode and validate a V2 inference request (JSON, or JSON header + binary tensors); `limits` bounds the
    index inputs (models.inputs.index_limits)."""
    if header_length is not None:
        try:
            split = int(header_length)
        except ValueError:
            raise InvalidInput("Inference-Header-Content-Length must be an integer") from None
        if not 0 < split <= len(body):
            raise InvalidInput(f"Inference-Header-Content-Length {split} is outside the {len(body)}-byte body")
        header, tail = parse_object(body[:split], "request header"), memoryview(body)[split:]
    else:
        header, tail = parse_object(body, "request body"), memoryview(b"")
    request_id = header.string("id")
    entries = header.objects("inputs", required=True)
    if not entries:
        raise InvalidInput("request needs a non-empty 'inputs' list")
    specs = {s.name: s for s in inputs}
    decoded: dict[str, np.ndarray] = {}
    offset = 0
    for entry in entries:
        name = entry.string("name", required=True) or ""
        if name not in specs:
            raise InvalidInput(f"unknown input {name!r}; the model takes {sorted(specs)}")
        if name in decoded:
            raise InvalidInput(f"input {name!r} is given twice")
        parameters = entry.object("parameters")
        size = parameters.integer("binary_data_size", low=0) if parameters else None
        binary = None
        if size is not None:
            if offset + size > len(tail):
                raise InvalidInput(f"input {name!r}: binary_data_size {size} runs past the body")
            binary, offset = tail[offset : offset + size], offset + size
        decoded[name] = decode_tensor(specs[name], entry, binary, (limits or {}).get(name))
    missing = sorted(set(specs) - set(decoded))
    if missing:
        raise InvalidInput(f"missing inputs {missing}")
    if offset != len(tail):
        raise InvalidInput(f"{len(tail) - offset} bytes of binary data follow the last input's")
    check_shapes(inputs, {name: array.shape for name, array in decoded.items()})
    batch = {a.shape[0] for a in decoded.values() if a.ndim}
    if len(batch) > 1:
        raise InvalidInput(f"inputs disagree on the batch size: {sorted(batch)}")
    return InferRequest(request_id, decoded, *requested_outputs(header, outputs))


def requested_outputs(header: Fields, outputs: tuple[TensorSpec, ...]) -> tuple[tuple[str, ...] | None, frozenset[str]]:
    """Output selection and which outputs go back as binary data."""
    known = [o.name for o in outputs]
    parameters = header.object("parameters")
    all_binary = bool(parameters.boolean("binary_data_output")) if parameters else False
    if header.array("outputs") is None:
        return None, frozenset(known if all_binary else ())
    names, binary = [], set()
    for entry in header.objects("outputs"):
        name = entry.string("name", required=True)
        if name not in known:
            raise InvalidInput(f"unknown output {name!r}; the model returns {known}")
        names.append(name)
        asked = entry.object("parameters")
        wants = asked.boolean("binary_data") if asked else None
        if all_binary if wants is None else wants:
            binary.add(name)
    return tuple(names), frozenset(binary)


def encode_response(
    model: str, version: str, request: InferRequest, results: dict[str, np.ndarray]
) -> tuple[bytes, dict[str, str]]:
    """The V2 response body and headers (binary tensors appended after the JSON header when asked for)."""
    names = request.outputs or tuple(results)
    entries, tails = [], []
    for name in names:
        array = np.ascontiguousarray(results[name])
        entry: dict[str, Any] = {"name": name, "datatype": V2_DATATYPES[array.dtype.name], "shape": list(array.shape)}
        if name in request.binary_outputs:
            raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
            entry["parameters"] = {"binary_data_size": len(raw)}
            tails.append(raw)
        else:
            entry["data"] = array.reshape(-1)
        entries.append(entry)
    payload: dict[str, Any] = {"model_name": model, "model_version": version, "outputs": entries}
    if request.id is not None:
        payload["id"] = request.id
    head = orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY)  # ~30× json.dumps on float tensors
    if not tails:
        return head, {"Content-Type": "application/json"}
    return head + b"".join(tails), {
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(head)),
    }
