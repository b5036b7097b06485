"""Request bodies for the load generator, from real inputs: raw image bytes, KServe V2 JSON, V2 binary tensors."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from turboinfer.core.types import V2_DATATYPES


@dataclass(frozen=True)
class Request:
    """One HTTP request body with its headers (the path is chosen by the caller)."""

    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def image_requests(photos: Sequence[Path]) -> list[Request]:
    """One raw-bytes request per photo (content type from the suffix)."""
    kinds = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp"}
    return [Request(p.read_bytes(), {"Content-Type": kinds.get(p.suffix.lower(), "application/octet-stream")})
            for p in photos]  # fmt: skip


def v2_json_request(feeds: Mapping[str, np.ndarray], request_id: str = "") -> Request:
    """A KServe V2 JSON inference request (tensors flattened in row-major order)."""
    payload: dict = {
        "inputs": [
            {"name": name, "shape": list(array.shape), "datatype": V2_DATATYPES[array.dtype.name],
             "data": array.reshape(-1).tolist()}
            for name, array in feeds.items()
        ]
    }  # fmt: skip
    if request_id:
        payload["id"] = request_id
    return Request(json.dumps(payload).encode(), {"Content-Type": "application/json"})


def v2_binary_request(feeds: Mapping[str, np.ndarray]) -> Request:
    """A KServe V2 request with the binary tensor data extension: JSON header, then raw little-endian tensors."""
    header = {
        "inputs": [
            {"name": name, "shape": list(array.shape), "datatype": V2_DATATYPES[array.dtype.name],
             "parameters": {"binary_data_size": array.nbytes}}
            for name, array in feeds.items()
        ]
    }  # fmt: skip
    head = json.dumps(header).encode()
    tensors = b"".join(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes() for a in feeds.values())
    headers = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(head))}
    return Request(head + tensors, headers)
