"""The KServe V2 front-end's part of the OpenAPI document."""

from __future__ import annotations

from typing import Any

from turboinfer.serve.openapi import errors, get

TENSOR = {
    "type": "object",
    "required": ["name", "shape", "datatype"],
    "properties": {
        "name": {"type": "string"},
        "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "datatype": {"type": "string", "enum": ["FP32", "FP16", "FP64", "INT64", "INT32", "INT8", "UINT8", "BOOL"]},
        "data": {"type": "array", "description": "row-major values, absent when sent as binary data"},
        "parameters": {"type": "object", "properties": {"binary_data_size": {"type": "integer"}}},
    },
}
INFER_REQUEST = {
    "type": "object",
    "required": ["inputs"],
    "properties": {
        "id": {"type": "string"},
        "inputs": {"type": "array", "items": TENSOR},
        "outputs": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "parameters": {"type": "object", "properties": {"binary_data_output": {"type": "boolean"}}},
    },
}


def v2_paths() -> dict[str, Any]:
    """The V2 and image routes."""
    name = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
    infer = {
        "post": {
            "summary": "KServe V2 inference: JSON, or JSON header + binary tensors",
            "parameters": [name, {"name": "X-Request-Timeout-Ms", "in": "header", "schema": {"type": "number"}}],
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/InferRequest"}},
                                        "application/octet-stream": {}}},
            "responses": {"200": {"description": "outputs"}, **errors("400", "404", "408", "413", "429", "503", "504")},
        }
    }  # fmt: skip
    image = {
        "post": {
            "summary": "Raw image bytes in; top-5 classes or the embedding out",
            "parameters": [name],
            "requestBody": {"content": {"image/jpeg": {}, "image/png": {}, "image/webp": {}}},
            "responses": {"200": {"description": "answer"}, **errors("400", "404", "413", "429", "504")},
        }
    }
    control = {"post": {"summary": "load/unload: refused (models are loaded at start)", "responses": errors("400")}}
    listed = {"200": {"description": "models with state and reason"}, **errors("400")}
    index = {"post": {"summary": 'the repository index (body {"ready": true}: ready models only)', "responses": listed}}
    return {
        "paths": {
            "/v2": get("server metadata"),
            "/v2/models/{name}": get("model metadata"),
            "/v2/models/{name}/versions/{version}": get("model metadata of a version"),
            "/v2/models/{name}/ready": get("model readiness"),
            "/v2/models/{name}/versions/{version}/ready": get("model readiness of a version"),
            "/v2/models/{name}/infer": infer,
            "/v2/models/{name}/versions/{version}/infer": infer,
            "/v1/models/{name}/image": image,
            "/v2/repository/index": index,
            "/v2/repository/models/{name}/{action}": control,
        },
        "schemas": {"InferRequest": INFER_REQUEST},
    }
