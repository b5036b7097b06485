"""The server's OpenAPI 3.1 document (served at /openapi.json): the shared routes here, each front-end's own beside
its routes (serve/v2/openapi.py, serve/openai/openapi.py), merged by `document`."""

from __future__ import annotations

from typing import Any

from turboinfer import __version__

ERROR = {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def get(summary: str) -> dict[str, Any]:
    """A GET operation that answers JSON."""
    return {"get": {"summary": summary, "responses": {"200": {"description": "ok"}, "404": ERROR, "503": ERROR}}}


def errors(*codes: str) -> dict[str, Any]:
    """The error responses of an operation."""
    return {code: ERROR for code in codes}


def document(title: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole document: the shared routes and every front-end's part ({"paths": …, "schemas": …})."""
    paths = {
        "/v2/health/live": get("liveness: no engine loop has died"),
        "/v2/health/ready": get("readiness: every front-end loaded and warmed up, not shutting down"),
        "/health": get(
            "readiness with every model's state (loading, ready, restarting, unavailable, dead, stopped) "
            "and why it is not ready"
        ),
        "/metrics": get("Prometheus metrics of every front-end"),
        "/openapi.json": get("this document"),
    }
    schemas: dict[str, Any] = {
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}
    }
    for part in parts:
        paths.update(part["paths"])
        schemas.update(part.get("schemas", {}))
    return {"openapi": "3.1.0", "info": {"title": title, "version": __version__}, "paths": paths,
            "components": {"schemas": schemas}}  # fmt: skip
