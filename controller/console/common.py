"""What every part of the console's web server shares: where its files are, its cookies'
and headers' names, its limits, and the answers and checks of every request."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, Final

from aiohttp import web

STATIC_DIR: Final = Path(__file__).resolve().parent / "static"
SESSION_COOKIE: Final = "livetable_session"
SIGNIN_COOKIE: Final = "livetable_signin"
CSRF_HEADER: Final = "X-CSRF-Token"
# How long a browser that signed in as a name stays trusted for that name's sign-ins (its
# device cookie): a working month.
DEVICE_COOKIE_MAX_AGE_S: Final = 30 * 24 * 3600
REQUEST_TIMEOUT_S: Final = 10.0
AUDIT_PAGE: Final = 500
# An audit or a history larger than this is cut (the page says so): a browser tab, not an
# archive; ``livetable journal export`` gives the whole journal.
AUDIT_MAX_ENTRIES: Final = 20_000
MAX_BODY_BYTES: Final = 64 * 1024
# A connection with no request in progress (none yet, half a request's headers, or idle
# between requests) is closed after this long, and a request's body must come within
# BODY_TIMEOUT_S: each open connection holds one of the console's file descriptors, and
# enough of them held by a slow sender would keep every supervisor out. (aiohttp's own
# default outside run_app is an hour.)
IDLE_CONNECTION_S: Final = 30.0
BODY_TIMEOUT_S: Final = 10.0
MAX_NAME_LENGTH: Final = 100
CSP: Final = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"


def error(status: int, code: str, message: str, **headers: str) -> web.Response:
    """A JSON error: ``{"ok": false, "code", "message"}``."""
    return web.json_response(
        {"ok": False, "code": code, "message": message}, status=status, headers=headers or None
    )


def origin_ok(request: web.Request) -> bool:
    """No ``Origin`` (not a browser's cross-site request), or the console's own: the host
    (and port) this request came to. The scheme is not compared: behind a studio's TLS
    proxy the browser's origin is https while the request reaches the console as http, and
    a page of another scheme on the same host gets no cookie of ours (SameSite=Strict,
    Secure under TLS) to act with."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    scheme, _, netloc = origin.partition("://")
    return scheme in ("http", "https") and netloc.lower() == request.host.lower()


async def read_body(read: Awaitable[Any]) -> Any:
    """A request's body, read within :data:`BODY_TIMEOUT_S` (else 408)."""
    try:
        return await asyncio.wait_for(read, BODY_TIMEOUT_S)
    except TimeoutError:
        raise web.HTTPRequestTimeout(text="the request's body came too slowly") from None
