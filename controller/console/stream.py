"""The live stream (``/api/stream``, server-sent events): one open stream's queue, and the
route that sends a session's tiles and its broker link as they change."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

from controller.console.common import (
    error,
    origin_ok,
)

# Events a stream may fall behind by before it is closed (the page reconnects and reloads).
STREAM_BACKLOG: Final = 2_000
PING_S: Final = 15.0


@dataclass(eq=False)
class Subscriber:
    """One open ``/api/stream``: what is to be sent to it, in order."""

    session_id: str
    queue: asyncio.Queue[tuple[str, Any] | None] = field(
        default_factory=lambda: asyncio.Queue(STREAM_BACKLOG)
    )
    closed: bool = False

    def put(self, item: tuple[str, Any] | None) -> None:
        if self.closed:
            return
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            # Too far behind: end it; the page reconnects and reloads every tile.
            self.closed = True
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
            self.queue.put_nowait(None)

    def close(self) -> None:
        self.put(None)
        self.closed = True


class StreamRoutes:
    """The route of the live stream, part of :class:`~controller.console.server.Console`."""

    async def api_stream(self, request: web.Request) -> web.StreamResponse:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        session, feed = found
        if not origin_ok(request):
            return error(403, "forbidden", "a stream for another site")
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
        )
        await response.prepare(request)
        subscriber = feed.subscribe(session.id)
        try:
            await _send(response, "hello", {"now": time.time()})
            await _send(response, "link", feed.link)
            while not subscriber.closed:
                try:
                    item = await asyncio.wait_for(subscriber.queue.get(), PING_S)
                except TimeoutError:
                    if self.sessions.get(session.id, touch=False) is None:
                        break
                    await response.write(b": ping\n\n")
                    continue
                if item is None:
                    break
                await _send(response, *item)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            feed.unsubscribe(subscriber)
        return response


async def _send(response: web.StreamResponse, kind: str, data: Any) -> None:
    payload = json.dumps(data, separators=(",", ":"))
    await response.write(f"event: {kind}\ndata: {payload}\n\n".encode())
