"""The server's OpenAPI 3.1 description (served at /openapi.json), kept next to the routes it describes."""

from __future__ import annotations

from typing import Any

from turboinfer import __version__

ERROR = {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
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


def get(summary: str) -> dict[str, Any]:
    """A GET operation that answers JSON."""
    return {"get": {"summary": summary, "responses": {"200": {"description": "ok"}, "404": ERROR, "503": ERROR}}}


def openapi() -> dict[str, Any]:
    """The OpenAPI document."""
    name = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
    infer = {
        "post": {
            "summary": "KServe V2 inference: JSON, or JSON header + binary tensors",
            "parameters": [name, {"name": "X-Request-Timeout-Ms", "in": "header", "schema": {"type": "number"}}],
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/InferRequest"}},
                                        "application/octet-stream": {}}},
            "responses": {"200": {"description": "outputs"}, **{c: ERROR for c in ("400", "404", "408", "413", "429",
                                                                                    "503", "504")}},
        }
    }  # fmt: skip
    image = {
        "post": {
            "summary": "Raw image bytes in; top-5 classes or the embedding out",
            "parameters": [name],
            "requestBody": {"content": {"image/jpeg": {}, "image/png": {}, "image/webp": {}}},
            "responses": {"200": {"description": "answer"}, **{c: ERROR for c in ("400", "404", "413", "429", "504")}},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "turboinfer", "version": __version__},
        "paths": {
            "/v2/health/live": get("liveness"),
            "/v2/health/ready": get("readiness: loaded and warmed up, not shutting down"),
            "/v2": get("server metadata"),
            "/v2/models/{name}": get("model metadata"),
            "/v2/models/{name}/ready": get("model readiness"),
            "/v2/models/{name}/infer": infer,
            "/v1/models/{name}/image": image,
            "/metrics": get("Prometheus metrics"),
        },
        "components": {
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
                "InferRequest": {
                    "type": "object",
                    "required": ["inputs"],
                    "properties": {
                        "id": {"type": "string"},
                        "inputs": {"type": "array", "items": TENSOR},
                        "outputs": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                        },
                        "parameters": {"type": "object", "properties": {"binary_data_output": {"type": "boolean"}}},
                    },
                },
            }
        },
    }
