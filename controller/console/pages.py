"""The pages: the wall, a round's printable history, the dealer's screen, and the health
check."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from controller.console.common import (
    STATIC_DIR,
)


class PageRoutes:
    """The pages' routes, part of :class:`~controller.console.server.Console`."""

    async def healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    def _page(self, request: web.Request, name: str) -> web.StreamResponse | None:
        if self.session_of(request) is None:
            raise web.HTTPSeeOther("/signin")
        path = STATIC_DIR / name
        return web.FileResponse(path) if path.is_file() else None

    async def index(self, request: web.Request) -> web.StreamResponse:
        session = self.session_of(request)
        if session is not None and session.role == "dealer":
            # A dealer station's account has one page: its table's screen.
            raise web.HTTPSeeOther("/dealer")
        page = self._page(request, "index.html")
        if page is None:
            return web.Response(text="the console's page is not installed", status=500)
        return page

    async def dealer_page(self, request: web.Request) -> web.StreamResponse:
        """The screen that faces the dealer (``?table=T``; a dealer station's account sees
        its one table without it)."""
        page = self._page(request, "dealer.html")
        if page is None:
            return web.Response(text="the dealer's screen is not installed", status=500)
        return page

    async def history_page(self, request: web.Request) -> web.StreamResponse:
        page = self._page(request, "history.html")
        if page is not None:
            return page
        session = self.session_of(request)
        assert session is not None
        table = request.query.get("table", "")
        round_text = request.query.get("round", "")
        if not round_text.isdigit():
            return web.Response(text="give ?table=T&round=N", status=400)
        found = await self._round(session, table, int(round_text))
        if isinstance(found, web.Response):
            return found
        rows = "".join(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
                event["seq"],
                html.escape(_clock(event.get("at"))),
                html.escape(event["type"]),
                html.escape(json.dumps(event.get("data"), sort_keys=True)),
            )
            for event in found
        )
        title = html.escape(f"Table {table}, round {round_text}")
        text = (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            '<link rel="stylesheet" href="/static/console.css"></head>'
            f'<body class="history"><h1>{title}</h1><table data-testid="history-events">'
            "<tr><th>seq</th><th>time (UTC)</th><th>event</th><th>data</th></tr>"
            f"{rows}</table></body></html>"
        )
        return web.Response(text=text, content_type="text/html")


def _clock(at: Any) -> str:
    if not isinstance(at, int | float):
        return ""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
