"""The OpenAI front-end's part of the OpenAPI document (the fields each body takes: docs/serving.md)."""

from __future__ import annotations

from typing import Any

from turboinfer.serve.openapi import errors, get


def generation(summary: str, required: str) -> dict[str, Any]:
    """A POST of an OpenAI body: JSON, or a server-sent event stream when `stream` is true."""
    body = {"type": "object", "required": ["model", required],
            "properties": {"model": {"type": "string"}, "stream": {"type": "boolean"}}}  # fmt: skip
    header = {"name": "X-Request-Timeout-Ms", "in": "header", "schema": {"type": "number"}}
    return {"post": {"summary": summary, "parameters": [header],
                     "requestBody": {"content": {"application/json": {"schema": body}}},
                     "responses": {"200": {"description": "the completion, or text/event-stream chunks"},
                                   **errors("400", "404", "408", "413", "429", "503", "504")}}}  # fmt: skip


def openai_paths() -> dict[str, Any]:
    """The OpenAI routes."""
    return {
        "paths": {
            "/v1/chat/completions": generation("OpenAI chat completion", "messages"),
            "/v1/completions": generation("OpenAI text completion", "prompt"),
            "/v1/models": get("the served LLMs, as OpenAI lists models"),
        }
    }
