"""One server, front-ends composed: each front-end (KServe V2 in serve/v2, the OpenAI API in serve/openai) brings
its routes and says when it is loaded, ready and alive and how it drains; the server owns what they share — the
lifespan, one Prometheus registry at /metrics, the process's liveness and readiness, the OpenAPI document and the
answers for unknown routes. Every request passes one access log (serve/logs.py) and one error mapping
(serve/http.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from turboinfer.serve.http import error
from turboinfer.serve.logs import AccessLog
from turboinfer.serve.openapi import document


class FrontEnd(Protocol):
    """What a front-end gives the server."""

    name: str

    def routes(self) -> list[BaseRoute]: ...
    async def load(self) -> None: ...
    def ready(self) -> bool: ...
    def alive(self) -> bool: ...
    async def drain(self) -> None: ...
    def paths(self) -> dict[str, Any]: ...
    def states(self) -> dict[str, dict[str, str]]: ...


class Server:
    """The front-ends on one Starlette app, sharing one metrics registry."""

    def __init__(self, frontends: Sequence[FrontEnd], registry: CollectorRegistry, title: str = "turboinfer") -> None:
        self.frontends = {f.name: f for f in frontends}
        self.registry, self.title = registry, title
        self.loaded = False
        """Every front-end loaded and the server not draining."""

    def ready(self) -> bool:
        """Loaded, not draining, and every front-end ready."""
        return self.loaded and all(f.ready() for f in self.frontends.values())

    def alive(self) -> bool:
        """No front-end needs the process restarted (a dead engine loop)."""
        return all(f.alive() for f in self.frontends.values())

    def states(self) -> dict[str, dict[str, str]]:
        """Every served model's state and, when it is not ready, why (from every front-end)."""
        return {name: state for f in self.frontends.values() for name, state in f.states().items()}

    async def load(self) -> None:
        """Load every front-end, then turn ready."""
        for frontend in self.frontends.values():
            await frontend.load()
        self.loaded = True

    async def shutdown(self) -> None:
        """Readiness false at once, then every front-end drains what it accepted."""
        self.loaded = False
        for frontend in self.frontends.values():
            await frontend.drain()

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI 3.1 document of every route."""
        return document(self.title, [f.paths() for f in self.frontends.values()])

    def app(self, extra_routes: Sequence[BaseRoute] = ()) -> Starlette:
        """The ASGI app: the shared routes, every front-end's, an application's extra ones, the lifespan."""

        @asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            await self.load()
            yield
            await self.shutdown()

        async def live(request: Request) -> Response:
            ok = self.alive()
            return JSONResponse({"live": ok}, status_code=200 if ok else 503)

        async def ready(request: Request) -> Response:
            ok = self.ready()
            return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

        async def health(request: Request) -> Response:
            ok = self.ready()
            return JSONResponse({"ready": ok, "models": self.states()}, status_code=200 if ok else 503)

        async def metrics(request: Request) -> Response:
            return Response(generate_latest(self.registry), media_type="text/plain; version=0.0.4")

        async def http_error(request: Request, exc: Exception) -> Response:
            status = getattr(exc, "status_code", 500)
            return error(status, "not found" if status == 404 else str(getattr(exc, "detail", "error")))

        routes = [Route("/v2/health/live", live), Route("/v2/health/ready", ready), Route("/health", health),
                  Route("/metrics", metrics),
                  Route("/openapi.json", lambda request: JSONResponse(self.openapi())),
                  *(route for f in self.frontends.values() for route in f.routes()), *extra_routes]  # fmt: skip
        return Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(AccessLog)],
                         exception_handlers={404: http_error, 405: http_error})  # fmt: skip
