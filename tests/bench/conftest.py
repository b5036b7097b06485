"""A real HTTP server on loopback for the load generator: aiohttp in a thread, ready before the test starts."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from aiohttp import web


def make_app() -> web.Application:
    """/ok answers at once, /fail with 500, /slow after 20 ms with at most 2 requests at a time."""
    gate = asyncio.Semaphore(2)

    async def ok(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(text="ok")

    async def fail(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=500, text='{"error": "boom"}')

    async def slow(request: web.Request) -> web.Response:
        await request.read()
        async with gate:
            await asyncio.sleep(0.02)
        return web.Response(text="slow")

    app = web.Application()
    for path, handler in (("/ok", ok), ("/fail", fail), ("/slow", slow)):
        app.router.add_route("*", path, handler)
    return app


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """Base URL of a running test server."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, object] = {}

    async def start() -> None:
        runner = web.AppRunner(make_app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        holder["runner"] = runner
        holder["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    assert ready.wait(10), "test server did not start"
    yield f"http://127.0.0.1:{holder['port']}"
    asyncio.run_coroutine_threadsafe(holder["runner"].cleanup(), loop).result(10)  # type: ignore[attr-defined]
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
