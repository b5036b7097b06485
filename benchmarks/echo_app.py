"""The floor under any Starlette-on-uvicorn server, for benchmarks/serve.py floor: a route that reads the whole
body and answers its length, nothing else (same uvloop/httptools stack as `turboinfer serve`).

Run: python benchmarks/echo_app.py PORT   (POST anything to /echo; GET answers 0)
"""

from __future__ import annotations

import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def echo(request: Request) -> Response:
    """Read the body, answer its length."""
    return Response(str(len(await request.body())))


if __name__ == "__main__":
    app = Starlette(routes=[Route("/echo", echo, methods=["GET", "POST"])])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", loop="uvloop", http="httptools")
