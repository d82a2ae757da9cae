"""The console's web server (aiohttp): pages, the JSON API, the live stream of tiles.

Every person signs in with their own broker account: the console opens one
``StudioClient`` per account name (:mod:`controller.client.api_client`), shared by that account's
sessions and closed with the last of them, and everything that account's pages see and
do goes through it, so the broker's ACL decides what each may read and send and every
table journals the person who acted. The console's one account of its own is an optional
viewer (``[wall]``): when a person's session ends for being idle, their page keeps the
wall live on it, read-only, until they sign in again (a wall nobody touched is exactly
the one that must keep watching).

Routes (the console contract): ``GET/POST /signin``, ``POST /signout``, ``GET /`` (the
page), ``GET /history`` (a round, printable), ``GET /static/...``, ``GET /healthz``, and
under ``/api``: ``session``, ``tables``, ``stream`` (server-sent events), ``tables/T/request``
(POST, supervisors only), ``tables/T/rounds/N``, ``tables/T/audit`` (and ``audit.csv``),
``tables/T/faces``.

Defences: a session cookie (256-bit random, HttpOnly, SameSite=Strict, Secure under TLS);
a CSRF token per session that every POST carries in ``X-CSRF-Token`` (the sign-in form:
a pre-session cookie and the same token in the form); an ``Origin`` that is not the
console's own is refused (403) on every POST and on the stream; viewers get 403 for every
action; a growing delay between failed sign-ins per account name (429 with
``Retry-After``), except for a browser that signed in as that name before (its device
cookie), which waits only for its own failures; a sign-in over a live session ends that
session; a connection with no request in progress is closed after
:data:`IDLE_CONNECTION_S` and a body must come within :data:`BODY_TIMEOUT_S`;
``Content-Security-Policy: default-src 'self'`` and ``X-Frame-Options: DENY`` on
everything, ``Cache-Control: no-store`` on the API and the pages. Nothing logged
names a password or a cookie's value.

The sign-in page is ``static/signin.html`` when the front end ships one, with the
placeholders ``{{csrf}}`` (the form's hidden ``csrf`` field), ``{{message}}`` (one line,
empty at first) and ``{{username}}`` (as typed, on a failure) filled in HTML-escaped; a
built-in page otherwise. ``/history`` is ``static/history.html`` when there is one (it
renders ``/api/tables/T/rounds/N`` itself), else a page rendered here.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import html
import io
import json
import logging
import math
import re
import signal
import ssl
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import paho.mqtt.client as mqtt
from aiohttp import web

from controller.client.api_client import Account, BrokerRefused, StudioClient
from controller.console.config import BrokerSettings, ConsoleConfig
from controller.console.fleet import build_tile, possible_faces, round_events, urgency_order
from controller.console.sessions import (
    AccountLinks,
    DeviceCookies,
    Session,
    SessionStore,
    SignInThrottle,
    device_cookie_name,
    new_token,
    tokens_match,
)
from controller.kernel.cli_support import defuse_formula
from controller.kernel.errors import ConfigurationError
from controller.kernel.logs import CONSOLE_LIFECYCLE_LOGGER
from controller.kernel.presentation import PRESENTATIONS
from controller.mqtt.connection import topic_level_ok

logger = logging.getLogger(__name__)

STATIC_DIR: Final = Path(__file__).resolve().parent / "static"
SESSION_COOKIE: Final = "livetable_session"
SIGNIN_COOKIE: Final = "livetable_signin"
CSRF_HEADER: Final = "X-CSRF-Token"
# How long a browser that signed in as a name stays trusted for that name's sign-ins (its
# device cookie): a working month.
DEVICE_COOKIE_MAX_AGE_S: Final = 30 * 24 * 3600
# A tile goes out at most this often per table (the latest state then): a burst of events
# is one repaint, not dozens. 0.1 s held a state behind its burst for up to 0.1 s; with
# 0.03 s `livetable bench console` (20 tables) measured p99 104 ms where 0.1 s gave 166 ms.
COALESCE_S: Final = 0.03
PING_S: Final = 15.0
# How often idle sessions are ended and tiles checked for going stale without a message.
SWEEP_S: Final = 1.0
# How long the wall account waits before trying the broker again when it could not connect.
WALL_RETRY_S: Final = 5.0
# How long the broker has to take a sign-in's connection, and to say which role it has.
CONNECT_TIMEOUT_S: Final = 8.0
# A CONNACK's "unsupported protocol version" (MQTT 5's 0x84; paho maps MQTT 3.1.1's return
# code 1 onto it): nats-server answers an MQTT 5 CONNECT so.
UNSUPPORTED_PROTOCOL_VERSION: Final = 0x84
PROBE_TIMEOUT_S: Final = 3.0
REQUEST_TIMEOUT_S: Final = 10.0
# Events held per table and account: a shoe's worth for the faces still possible, the last
# rounds for their history (older ones come from the table's ``events`` catch-up). With the
# client's default (5000) the console's memory grew for the first half hour of a studio of
# 20 tables (``livetable bench console``: 51 MB to 118 MB in 10 minutes, still filling).
FEED_EVENTS: Final = 1500
AUDIT_PAGE: Final = 500
# An audit or a history larger than this is cut (the page says so): a browser tab, not an
# archive; ``livetable journal export`` gives the whole journal.
AUDIT_MAX_ENTRIES: Final = 20_000
# Events a stream may fall behind by before it is closed (the page reconnects and reloads).
STREAM_BACKLOG: Final = 2_000
MAX_BODY_BYTES: Final = 64 * 1024
# A connection with no request in progress (none yet, half a request's headers, or idle
# between requests) is closed after this long, and a request's body must come within
# BODY_TIMEOUT_S: each open connection holds one of the console's file descriptors, and
# enough of them held by a slow sender would keep every supervisor out. (aiohttp's own
# default outside run_app is an hour.)
IDLE_CONNECTION_S: Final = 30.0
BODY_TIMEOUT_S: Final = 10.0
MAX_NAME_LENGTH: Final = 100
# The commands a supervisor's page may send, with the fields each takes (the table checks
# their values; a field not listed here never reaches it).
ACTIONS: Final[dict[str, frozenset[str]]] = {
    "pause": frozenset({"reason"}),
    "resume": frozenset({"resolution", "card"}),
    "enter_card": frozenset({"card"}),
    "cancel": frozenset({"reason", "round_id"}),
    "end_shoe": frozenset({"reason"}),
    "new_shoe": frozenset(),
    "open_round": frozenset({"boxes"}),
}
# Every game's presentation, as the page reads it (GET /api/games): game id -> how it is shown.
GAMES_SHOWN: Final = {game: shown.as_json() for game, shown in PRESENTATIONS.items()}
CSP: Final = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
ACCESS_LOG_FORMAT: Final = '%a "%r" %s %b %Tfs'
AUDIT_COLUMNS: Final = (
    "journal_seq",
    "at",
    "time_utc",
    "account",
    "role",
    "command",
    "transaction",
    "args",
    "ok",
    "code",
    "message",
)


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


def spreadsheet_safe(value: Any) -> str:
    """A CSV cell that a spreadsheet shows as text, never runs: ``'`` before a formula."""
    text = "" if value is None else value if isinstance(value, str) else json.dumps(value)
    return defuse_formula(text)


def audit_csv(entries: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(AUDIT_COLUMNS)
    for entry in entries:
        at = entry.get("at")
        when = (
            datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
            if isinstance(at, int | float)
            else ""
        )
        row = {**entry, "time_utc": when}
        writer.writerow([spreadsheet_safe(row.get(column)) for column in AUDIT_COLUMNS])
    return out.getvalue()


def attachment_header(filename: str) -> str:
    """``Content-Disposition`` of a download named ``filename`` (which holds a table id:
    any MQTT topic level, quotes and line breaks included): a plain ASCII name, and the
    exact one percent-encoded (RFC 6266), so nothing in it ends the quoted name or the
    header."""
    plain = re.sub(r"[^A-Za-z0-9._-]", "_", filename)
    exact = urllib.parse.quote(filename, safe="")
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{exact}"


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


class AccountFeed:
    """One account's ``StudioClient`` as its pages see it: its tiles, its broker link, and
    the streams open on it, to which each table's tile goes at most every
    :data:`COALESCE_S` (the latest), and every change of the link at once."""

    def __init__(self, name: str, loop: asyncio.AbstractEventLoop, stale_after_s: float):
        self.name = name
        self.role = "viewer"
        self.client: Any = None
        self.stale_after_s = stale_after_s
        self.link_up = False
        self.link_why = "connecting"
        self.subscribers: set[Subscriber] = set()
        self._loop = loop
        self._dirty: set[str] = set()
        self._sent_at: dict[str, float] = {}
        self._status: dict[str, str] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._checked_at = time.monotonic()

    # -- from the client's network thread ----------------------------------------------------

    def _soon(self, callback: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the console is stopping
            self._loop.call_soon_threadsafe(callback, *args)

    def on_update(self, update: Any) -> None:
        self._soon(self._touch, update.table_id)

    def on_link(self, up: bool, why: str) -> None:
        self._soon(self.set_link, up, why)

    # -- on the event loop -------------------------------------------------------------------

    @property
    def link(self) -> dict[str, Any]:
        return {"up": self.link_up, "why": self.link_why}

    def start(self) -> None:
        self._task = self._loop.create_task(self._run(), name=f"tiles-{self.name}")

    def _touch(self, table_id: str) -> None:
        self._dirty.add(table_id)
        self._wake.set()

    def set_link(self, up: bool, why: str) -> None:
        if (up, why) == (self.link_up, self.link_why):
            return
        self.link_up, self.link_why = up, why
        self.broadcast("link", self.link)
        # Every tile turns unknown, or back.
        self._dirty.update(self._status)
        self._wake.set()

    def _tile(self, feed: Any) -> dict[str, Any]:
        return build_tile(
            feed, link_up=self.link_up, now=time.time(), stale_after_s=self.stale_after_s
        )

    def tiles(self) -> list[dict[str, Any]]:
        if self.client is None:
            return []
        return urgency_order(self._tile(feed) for feed in self.client.feeds().values())

    def tile(self, table_id: str) -> dict[str, Any] | None:
        feed = None if self.client is None else self.client.feed(table_id)
        return None if feed is None else self._tile(feed)

    def broadcast(self, kind: str, data: Any) -> None:
        for subscriber in list(self.subscribers):
            subscriber.put((kind, data))

    def subscribe(self, session_id: str) -> Subscriber:
        subscriber = Subscriber(session_id)
        self.subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)

    def end_session(self, session_id: str) -> None:
        for subscriber in list(self.subscribers):
            if subscriber.session_id == session_id:
                subscriber.close()

    def check_statuses(self) -> None:
        """Tiles whose status changed with no message (an online table going stale)."""
        if self.client is None:
            return
        for table_id, feed in self.client.feeds().items():
            if self._tile(feed)["status"] != self._status.get(table_id):
                self._touch(table_id)

    async def _run(self) -> None:
        while True:
            try:
                await self._send_due()
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug in one tile must not stop every stream's updates
                logger.exception("%s: building the tiles failed", self.name)
                await asyncio.sleep(SWEEP_S)

    async def _send_due(self) -> None:
        """Wait for an update, for the next held tile to be due, or a second; then send
        every tile that is due. A table within its :data:`COALESCE_S` holds back only its
        own tile: the wait ends at once for another table's update (sleeping until the held
        one was due delayed every other table's tiles by up to that long)."""
        wait = SWEEP_S
        held = [self._sent_at[t] + COALESCE_S for t in self._dirty if t in self._sent_at]
        if held:
            wait = max(min(min(held) - time.monotonic(), SWEEP_S), 0.0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), wait)
        self._wake.clear()
        now = time.monotonic()
        if now - self._checked_at >= SWEEP_S:
            self._checked_at = now
            self.check_statuses()
        for table_id in [t for t in self._dirty if now - self._sent_at.get(t, -1e9) >= COALESCE_S]:
            self._dirty.discard(table_id)
            self._sent_at[table_id] = now
            tile = self.tile(table_id)
            if tile is not None:
                self._status[table_id] = tile["status"]
                self.broadcast("tile", tile)

    def close(self) -> None:
        for subscriber in list(self.subscribers):
            subscriber.close()
        if self._task is not None:
            self._task.cancel()


SIGNIN_PAGE: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>livetable console: sign in</title>
<link rel="stylesheet" href="/static/console.css">
</head>
<body class="signin">
<main>
<h1>livetable console</h1>
<form method="post" action="/signin" data-testid="signin-form">
<input type="hidden" name="csrf" value="{{csrf}}">
<label>Account <input name="username" autocomplete="username" required
 value="{{username}}" data-testid="signin-username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"
 required data-testid="signin-password"></label>
<button type="submit" data-testid="signin-submit">Sign in</button>
<p class="message" role="alert" data-testid="signin-message">{{message}}</p>
</form>
</main>
</body>
</html>
"""


def render(template: str, **values: str) -> str:
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", html.escape(value, quote=True))
    return template


class Console:
    """The console's state: sessions, the throttle, one feed per signed-in account."""

    def __init__(
        self,
        config: ConsoleConfig,
        *,
        client_factory: Callable[..., Any] = StudioClient,
    ) -> None:
        self.config = config
        self.client_factory = client_factory
        self.sessions = SessionStore(config.idle_timeout_s)
        # Failed sign-ins per account name, from browsers without that name's device
        # cookie; and per device, from browsers with one (see sessions.DeviceCookies).
        self.throttle = SignInThrottle()
        self.device_throttle = SignInThrottle()
        self.devices = DeviceCookies()
        self.links: AccountLinks[AccountFeed] = AccountLinks()
        self.executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="console")
        self._signing_in: set[str] = set()
        self._sweeper: asyncio.Task[None] | None = None
        # The console's own viewer account (``[wall]``), connected at start; None until then.
        self.wall: AccountFeed | None = None
        self._wall_task: asyncio.Task[None] | None = None
        self._wall_password = _wall_password(config)

    # -- blocking calls, off the event loop ---------------------------------------------------

    async def blocking(self, call: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, call)

    # -- sign-in ----------------------------------------------------------------------------

    def _open(self, account: Account, feed: AccountFeed | None) -> tuple[Any, str]:
        """A client of ``account`` and how its connection went: "ok", "refused" (the
        credentials), "protocol" (the broker refused [mqtt] protocol's MQTT version) or
        "unreachable" (closed unless "ok")."""
        broker = self.config.broker
        options: dict[str, Any] = (
            {"on_update": feed.on_update, "on_link": feed.on_link, "keep": FEED_EVENTS}
            if feed is not None
            else {"backfill": 0}
        )
        if broker.hosts:  # a cluster's nodes: the client moves on when one fails
            options["hosts"] = broker.hosts
        client = self.client_factory(
            broker.host,
            broker.port,
            account,
            prefix=broker.topic_prefix,
            protocol=mqtt.MQTTv5 if broker.protocol == "5" else mqtt.MQTTv311,
            tls_ca=None if broker.tls_ca is None else str(broker.tls_ca),
            # The shipped broker takes the account's name as its client id anyway.
            client_id=account.name,
            **options,
        )
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while not client.wait_connected(0.05):
            if client.refused is not None or time.monotonic() > deadline:
                outcome = "refused" if client.refused is not None else "unreachable"
                if getattr(client.refused, "value", None) == UNSUPPORTED_PROTOCOL_VERSION:
                    outcome = "protocol"
                client.close()
                return client, outcome
        return client, "ok"

    def _probe_role(self, username: str, password: str) -> tuple[str | None, str]:
        """The role the broker lets ``username`` send under, from a short-lived connection,
        and how that connection went. The account's own connection is opened afterwards
        under that role: it asks for every table's events from its first moment, and under
        a role the broker refuses those requests would be lost."""
        probe, outcome = self._open(Account("supervisor", username, password), None)
        if outcome != "ok":
            return None, outcome
        try:
            if self.config.broker.protocol != "5":
                # MQTT 3.1.1 tells by a table's answer: one online table is needed.
                with contextlib.suppress(TimeoutError):
                    probe.wait_for(
                        lambda c: any(f.availability == "online" for f in c.feeds().values()),
                        PROBE_TIMEOUT_S,
                    )
            role = probe.probe_role(PROBE_TIMEOUT_S)
        finally:
            probe.close()
        if role is None:
            logger.warning(
                "%s: the broker did not say which role the account has (no table online to "
                "ask under MQTT 3.1.1?): signed in as a viewer",
                username,
            )
        return role or "viewer", "ok"

    def _connect(self, feed: AccountFeed, username: str, password: str) -> str:
        """Open ``username``'s client (on a worker thread): "ok", "refused" (credentials)
        or "unreachable"; on "ok" ``feed.client`` and ``feed.role`` are set."""
        role, outcome = self._probe_role(username, password)
        if role is None:
            return outcome
        client, outcome = self._open(Account(role, username, password), feed)
        if outcome == "ok":
            feed.client, feed.role = client, role
        return outcome

    async def sign_in(self, username: str, password: str) -> tuple[str, Session | None]:
        """("ok", a new session), or why not: "wrong" (credentials) or "unreachable"."""
        if username in self.links:
            feed = self.links.client(username)
            assert feed is not None
            if not self.links.password_matches(username, password):
                return "wrong", None
        else:
            loop = asyncio.get_running_loop()
            feed = AccountFeed(username, loop, self.config.stale_after_s)
            outcome = await self.blocking(lambda: self._connect(feed, username, password))
            if outcome != "ok":
                return ("wrong" if outcome == "refused" else outcome), None
            # As the client has it now (its own calls of on_link may still be on their way).
            feed.set_link(feed.client.link_up, feed.client.link_why)
            feed.start()
            self.links.add(username, password, feed)
        session = self.sessions.create(username, feed.role)
        self.links.attach(username, session.id)
        return "ok", session

    async def end_session(self, session: Session) -> None:
        self.sessions.end(session.id)
        link = self.links.client(session.account)
        if link is not None:
            link.end_session(session.id)
        gone = self.links.detach(session.account, session.id)
        if gone is not None:
            logger.info("%s: the last session ended; closing its broker connection", gone.name)
            gone.close()
            if gone.client is not None:
                await self.blocking(gone.client.close)

    async def end_wall_session(self, session: Session) -> None:
        self.sessions.end(session.id)
        if self.wall is not None:
            self.wall.end_session(session.id)

    def _watching(self, session: Session) -> bool:
        """Whether a wall session's page is open (its stream, on the wall account)."""
        wall = self.wall
        return wall is not None and any(s.session_id == session.id for s in wall.subscribers)

    async def sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_S)
            for session in self.sessions.expire(self._watching):
                if session.wall:
                    await self.end_wall_session(session)
                    continue
                await self.end_session(session)
                if self.wall is not None:
                    # Its page keeps the wall (its stream, ended above, comes back on the
                    # wall account), read-only.
                    self.sessions.keep_as_wall(session, self.wall.name)
                logger.info(
                    "%s: a session ended after %g s idle%s",
                    session.account,
                    self.config.idle_timeout_s,
                    "; its page watches on, read-only" if self.wall is not None else "",
                )

    async def open_wall(self) -> None:
        """Connect the ``[wall]`` account (a viewer), trying again until the broker takes
        it; its client then reconnects by itself."""
        wall = self.config.wall
        assert wall is not None and self._wall_password is not None
        account = Account("viewer", wall.account, self._wall_password)
        loop = asyncio.get_running_loop()
        while True:
            feed = AccountFeed(wall.account, loop, self.config.stale_after_s)
            client, outcome = await self.blocking(lambda: self._open(account, feed))  # noqa: B023
            if outcome == "ok":
                feed.client = client
                feed.set_link(client.link_up, client.link_why)
                feed.start()
                self.wall = feed
                logger.info("the wall account %s is connected", wall.account)
                return
            logger.warning(
                "the wall account %s: %s; trying again in %g s",
                wall.account,
                "the broker refused its name or password"
                if outcome == "refused"
                else "the broker cannot be reached",
                WALL_RETRY_S,
            )
            await asyncio.sleep(WALL_RETRY_S)

    # -- the app -------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.on_response_prepare.append(self._headers)
        app.on_startup.append(self._startup)
        app.on_shutdown.append(self._shutdown)
        app.on_cleanup.append(self._cleanup)
        routes = [
            web.get("/healthz", self.healthz),
            web.get("/signin", self.signin_page),
            web.post("/signin", self.signin),
            web.post("/signout", self.signout),
            web.get("/", self.index),
            web.get("/history", self.history_page),
            web.get("/api/session", self.api_session),
            web.get("/api/tables", self.api_tables),
            web.get("/api/games", self.api_games),
            web.get("/api/stream", self.api_stream),
            web.post("/api/tables/{table}/request", self.api_request),
            web.get("/api/tables/{table}/rounds/{round_id}", self.api_round),
            web.get("/api/tables/{table}/audit", self.api_audit),
            web.get("/api/tables/{table}/audit.csv", self.api_audit_csv),
            web.get("/api/tables/{table}/faces", self.api_faces),
        ]
        app.add_routes(routes)
        if STATIC_DIR.is_dir():
            app.router.add_static("/static", STATIC_DIR, follow_symlinks=False)
        return app

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        headers = response.headers
        headers.setdefault("Content-Security-Policy", CSP)
        headers.setdefault("X-Frame-Options", "DENY")
        headers.setdefault("X-Content-Type-Options", "nosniff")
        # same-origin, not no-referrer: under no-referrer a browser sends "Origin: null"
        # with every POST, which the origin check refuses; other sites get no referrer.
        headers.setdefault("Referrer-Policy", "same-origin")
        if not request.path.startswith("/static/"):
            headers["Cache-Control"] = "no-store"
        if self.config.tls:
            headers.setdefault("Strict-Transport-Security", "max-age=31536000")

    async def _startup(self, _app: web.Application) -> None:
        self._sweeper = asyncio.get_running_loop().create_task(self.sweep(), name="sweeper")
        if self.config.wall is not None:
            self._wall_task = asyncio.get_running_loop().create_task(self.open_wall(), name="wall")

    async def _shutdown(self, _app: web.Application) -> None:
        # Open streams end now, so that stopping does not wait for them.
        for name in self.links.names():
            feed = self.links.client(name)
            if feed is not None:
                feed.close()
        if self.wall is not None:
            self.wall.close()

    async def _cleanup(self, _app: web.Application) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._wall_task is not None:
            self._wall_task.cancel()
        feeds = [self.links.remove(name) for name in self.links.names()]
        feeds.append(self.wall)
        clients = []
        for feed in feeds:
            if feed is not None and feed.client is not None:
                feed.close()
                clients.append(feed.client)
        # All at once: a close waits for its client's catch-up in flight (up to its
        # timeout), and one after the other they would add up past systemd's stop timeout.
        await asyncio.gather(*(self.blocking(client.close) for client in clients))
        self.executor.shutdown(wait=False, cancel_futures=True)

    # -- sessions of requests --------------------------------------------------------------

    def session_of(self, request: web.Request) -> Session | None:
        return self.sessions.get(request.cookies.get(SESSION_COOKIE))

    def feed_of(self, session: Session) -> AccountFeed | None:
        if session.wall:
            return self.wall
        return self.links.client(session.account)

    def _cookie(
        self, response: web.StreamResponse, name: str, value: str, max_age: int | None = None
    ) -> None:
        response.set_cookie(
            name,
            value,
            path="/",
            httponly=True,
            samesite="Strict",
            secure=self.config.tls,
            max_age=max_age,
        )

    def _drop_cookie(self, response: web.StreamResponse, name: str) -> None:
        """Expire cookie ``name`` with the same flags it was set with (a browser may ignore
        a plain deletion of a Secure cookie, and no cookie of ours goes out without them)."""
        response.del_cookie(
            name, path="/", httponly=True, samesite="Strict", secure=self.config.tls
        )

    # -- pages -----------------------------------------------------------------------------

    async def healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    def _signin_response(
        self,
        token: str,
        *,
        message: str = "",
        username: str = "",
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        custom = STATIC_DIR / "signin.html"
        template = custom.read_text(encoding="utf-8") if custom.is_file() else SIGNIN_PAGE
        response = web.Response(
            text=render(template, csrf=token, message=message, username=username),
            content_type="text/html",
            status=status,
            headers=headers,
        )
        self._cookie(response, SIGNIN_COOKIE, token)
        return response

    async def signin_page(self, request: web.Request) -> web.StreamResponse:
        session = self.session_of(request)
        if session is not None and not session.wall:
            raise web.HTTPSeeOther("/")
        token = request.cookies.get(SIGNIN_COOKIE) or ""
        if len(token) < 32 or len(token) > 64:
            token = new_token()
        # The page of a session that ended sends its person here saying so.
        message = (
            f"The session ended ({self.config.idle_timeout_s:g} s without a click, or the "
            "console restarted): sign in again."
            if "ended" in request.query
            else ""
        )
        return self._signin_response(token, message=message)

    async def signin(self, request: web.Request) -> web.StreamResponse:
        if not origin_ok(request):
            return web.Response(text="cross-site sign-in refused", status=403)
        form = await _body(request.post())
        token = request.cookies.get(SIGNIN_COOKIE)
        given = form.get("csrf")
        if not isinstance(given, str) or not tokens_match(token, given):
            return self._signin_response(
                new_token(),
                message="The sign-in form expired: please sign in again.",
                status=403,
            )
        assert token is not None
        username = form.get("username")
        password = form.get("password")
        username = username.strip() if isinstance(username, str) else ""
        password = password if isinstance(password, str) else ""
        shown = username[:MAX_NAME_LENGTH]
        if self.config.wall is not None and username == self.config.wall.account:
            # The broker takes one connection per account: a person's would knock the
            # wall's off.
            return self._signin_response(
                token,
                message=f"{shown} is the console's own account: sign in with yours.",
                username=shown,
                status=403,
            )
        if not (
            username and len(username) <= MAX_NAME_LENGTH and topic_level_ok(username) and password
        ):
            return self._signin_response(
                token, message="Wrong account name or password.", username=shown, status=401
            )
        # A browser that signed in as this name before is throttled by its own failures:
        # a guesser elsewhere who keeps the name's delay at its cap never locks it out.
        cookie_name = device_cookie_name(username)
        device = self.devices.device(username, request.cookies.get(cookie_name))
        throttle, throttled = (
            (self.device_throttle, device) if device is not None else (self.throttle, username)
        )
        wait = throttle.retry_after(throttled)
        if wait > 0 or username in self._signing_in:
            seconds = max(1, math.ceil(wait))
            return self._signin_response(
                token,
                message=f"Too many failed sign-ins for {username}: wait {seconds} s.",
                username=shown,
                status=429,
                headers={"Retry-After": str(seconds)},
            )
        previous = self.session_of(request)
        self._signing_in.add(username)
        try:
            outcome, session = await self.sign_in(username, password)
        finally:
            self._signing_in.discard(username)
        if outcome == "protocol":
            protocol = self.config.broker.protocol
            logger.error(
                'sign-in of %s: the broker refused MQTT %s: set [mqtt] protocol = "%s"',
                username,
                protocol,
                "3.1.1" if protocol == "5" else "5",
            )
            return self._signin_response(
                token,
                message=f"The broker refuses the console's MQTT {protocol}: the console's "
                "configuration must name the version the broker speaks.",
                username=shown,
                status=503,
            )
        if outcome == "unreachable":
            logger.warning("sign-in of %s: the broker cannot be reached", username)
            return self._signin_response(
                token,
                message="The broker cannot be reached: try again in a moment.",
                username=shown,
                status=503,
            )
        if session is None:
            delay = throttle.failed(throttled)
            logger.warning(
                "sign-in of %s refused: wrong account name or password (%d in a row%s)",
                username,
                throttle.failures(throttled),
                " from a browser that signed in as it before" if device is not None else "",
            )
            return self._signin_response(
                token,
                message=f"Wrong account name or password. Wait {delay:g} s before trying again.",
                username=shown,
                status=401,
            )
        # Only this path's count starts again: a success from a trusted browser leaves a
        # guesser's delay for the name where it is.
        throttle.succeeded(throttled)
        if previous is not None and previous.id != session.id:
            # A sign-in over a live session (another account, or the same again) ends it:
            # the browser's old cookie must not stay a way in.
            if previous.wall:
                await self.end_wall_session(previous)
            else:
                await self.end_session(previous)
        logger.info("%s signed in (%s)", username, session.role)
        # A plain 303 (an aiohttp HTTPException returned, not raised, is deprecated).
        response = web.Response(status=303, headers={"Location": "/"}, text="303: See Other")
        self._cookie(response, SESSION_COOKIE, session.id)
        self._cookie(response, cookie_name, self.devices.issue(username), DEVICE_COOKIE_MAX_AGE_S)
        self._drop_cookie(response, SIGNIN_COOKIE)
        return response

    def _checked_post(self, request: web.Request) -> tuple[Session | None, web.Response | None]:
        """The session of a POST whose origin and CSRF header are right; else the refusal."""
        session = self.session_of(request)
        if session is None:
            return None, error(401, "unauthorized", "sign in first")
        if not origin_ok(request):
            return None, error(403, "forbidden", "a request from another site")
        if not tokens_match(session.csrf, request.headers.get(CSRF_HEADER)):
            return None, error(403, "forbidden", f"missing or wrong {CSRF_HEADER} header")
        return session, None

    async def signout(self, request: web.Request) -> web.StreamResponse:
        session, refusal = self._checked_post(request)
        if refusal is not None:
            return refusal
        assert session is not None
        if session.wall:
            await self.end_wall_session(session)
        else:
            await self.end_session(session)
        logger.info("%s signed out", session.account)
        response = web.json_response({"ok": True})
        self._drop_cookie(response, SESSION_COOKIE)
        return response

    def _page(self, request: web.Request, name: str) -> web.StreamResponse | None:
        if self.session_of(request) is None:
            raise web.HTTPSeeOther("/signin")
        path = STATIC_DIR / name
        return web.FileResponse(path) if path.is_file() else None

    async def index(self, request: web.Request) -> web.StreamResponse:
        page = self._page(request, "index.html")
        if page is None:
            return web.Response(text="the console's page is not installed", status=500)
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

    # -- the API ---------------------------------------------------------------------------

    def _api_session(self, request: web.Request) -> tuple[Session, AccountFeed] | web.Response:
        session = self.session_of(request)
        feed = None if session is None else self.feed_of(session)
        if session is None or feed is None:
            return error(401, "unauthorized", "sign in first")
        return session, feed

    async def api_session(self, request: web.Request) -> web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        session, feed = found
        return web.json_response(
            {
                "account": session.account,
                "role": session.role,
                "csrf": session.csrf,
                # The person's session ended (idle): this page watches, read-only.
                "wall": session.wall,
                "idle_timeout_s": self.config.idle_timeout_s,
                "link": feed.link,
            }
        )

    async def api_tables(self, request: web.Request) -> web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        _session, feed = found
        tiles = await self.blocking(feed.tiles)
        return web.json_response({"tables": tiles, "link": feed.link, "now": time.time()})

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

    async def api_request(self, request: web.Request) -> web.Response:
        session, refusal = self._checked_post(request)
        if refusal is not None:
            return refusal
        assert session is not None
        feed = self.feed_of(session)
        if feed is None or feed.client is None:
            return error(401, "unauthorized", "sign in first")
        if session.wall:
            return error(403, "signed_out", "the session ended: sign in again to act")
        if session.role != "supervisor":
            return error(403, "forbidden", "viewers have no actions")
        table = request.match_info["table"]
        try:
            body = await _body(request.json())
        except (ValueError, UnicodeDecodeError):
            return error(400, "malformed", "the request's body is not JSON")
        if not isinstance(body, dict):
            return error(400, "malformed", 'the body must be {"command": ..., "args": {...}}')
        command = body.get("command")
        args = body.get("args") or {}
        if command not in ACTIONS:
            return error(400, "malformed", f"no such action: {str(command)[:40]!r}")
        if not isinstance(args, dict) or set(args) - ACTIONS[command]:
            fields = ", ".join(sorted(ACTIONS[command])) or "none"
            return error(400, "malformed", f"{command} takes the fields: {fields}")
        table_feed = feed.client.feed(table)
        if table_feed is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        if table_feed.availability != "online":
            # Sent now, it would wait at the broker and be executed whenever the table
            # comes back, against whatever state it is in then.
            return web.json_response(
                {
                    "ok": False,
                    "code": "offline",
                    "message": f"table {table} is offline: nothing sent",
                }
            )
        logger.info("%s: %s on table %s", session.account, command, table)
        try:
            answer = await self.blocking(
                lambda: feed.client.request(table, command, timeout=REQUEST_TIMEOUT_S, **args)
            )
        except BrokerRefused as refused:
            return web.json_response(
                {"ok": False, "code": "broker_refused", "message": f"the broker refused: {refused}"}
            )
        except TimeoutError:
            return web.json_response(
                {
                    "ok": False,
                    "code": "timeout",
                    "message": f"table {table} did not answer within {REQUEST_TIMEOUT_S:g} s",
                }
            )
        return web.json_response(_answer(answer))

    async def _round(
        self, session: Session, table: str, round_id: int
    ) -> list[dict[str, Any]] | web.Response:
        feed = self.feed_of(session)
        if feed is None or feed.client is None:
            return error(401, "unauthorized", "sign in first")
        table_feed = feed.client.feed(table)
        if table_feed is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        events = round_events(table_feed.events, round_id)
        if not events and _older_than_feed(table_feed, round_id):
            # Older than the feed keeps: the table's own record, read from its start up to
            # that round only (a round that never was costs the table nothing).
            client = feed.client
            try:
                events = await self.blocking(
                    lambda: _round_from_table(client, table, round_id, table_feed)
                )
            except TimeoutError:
                return error(504, "timeout", f"table {table} did not answer")
            except (RuntimeError, BrokerRefused) as failure:
                return error(502, "refused", str(failure))
        if not events:
            return error(404, "unknown_round", f"no round {round_id} in table {table}'s events")
        return events

    async def api_round(self, request: web.Request) -> web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        session, feed = found
        table = request.match_info["table"]
        round_text = request.match_info["round_id"]
        if not round_text.isdigit():
            return error(400, "malformed", "a round id is a whole number")
        events = await self._round(session, table, int(round_text))
        if isinstance(events, web.Response):
            return events
        # The table's game (a journal's is fixed): the page shows the result as it says.
        table_feed = feed.client.feed(table)
        game = ((table_feed.state if table_feed else None) or {}).get("game")
        return web.json_response(
            {"table": table, "round_id": int(round_text), "game": game, "events": events}
        )

    async def api_games(self, request: web.Request) -> web.Response:
        """How each game is shown (``controller/kernel/presentation.py``): the page reads
        its hands and words from here, never guessing a game from its data."""
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        return web.json_response(GAMES_SHOWN)

    async def _audit(self, request: web.Request) -> dict[str, Any] | web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        # Viewers read it too (the table lets them: it hides every card entered by hand).
        _session, feed = found
        table = request.match_info["table"]
        if feed.client.feed(table) is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        since_text = request.query.get("since", "0")
        if not since_text.isdigit():
            return error(400, "malformed", "since is a whole number")

        def pages() -> dict[str, Any]:
            since, entries, epoch, cut = int(since_text), [], None, False
            while True:
                answer = feed.client.request(
                    table, "audit", timeout=REQUEST_TIMEOUT_S, since=since, limit=AUDIT_PAGE
                )
                if not answer.get("ok"):
                    raise RuntimeError(answer.get("message") or "the table refused the audit")
                data = answer.get("data") or {}
                epoch = data.get("epoch", epoch)
                entries.extend(data.get("entries") or [])
                last = data.get("last")
                if not data.get("more") or not data.get("entries") or last is None:
                    break
                if len(entries) >= AUDIT_MAX_ENTRIES:
                    cut = True
                    break
                since = int(last)
            return {"table": table, "epoch": epoch, "entries": entries, "cut": cut}

        try:
            return await self.blocking(pages)
        except TimeoutError:
            return error(504, "timeout", f"table {table} did not answer")
        except (RuntimeError, BrokerRefused) as failure:
            return error(502, "refused", str(failure))

    async def api_audit(self, request: web.Request) -> web.Response:
        audit = await self._audit(request)
        return audit if isinstance(audit, web.Response) else web.json_response(audit)

    async def api_audit_csv(self, request: web.Request) -> web.Response:
        audit = await self._audit(request)
        if isinstance(audit, web.Response):
            return audit
        return web.Response(
            text=audit_csv(audit["entries"]),
            content_type="text/csv",
            headers={"Content-Disposition": attachment_header(f"{audit['table']}-audit.csv")},
        )

    async def api_faces(self, request: web.Request) -> web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        _session, feed = found
        table = request.match_info["table"]
        table_feed = feed.client.feed(table)
        if table_feed is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        return web.json_response(
            possible_faces(table_feed.events, table_feed.complete_since, table_feed.state)
        )


def _wall_password(config: ConsoleConfig) -> str | None:
    """The ``[wall]`` account's password, from its file (read once, at start)."""
    if config.wall is None:
        return None
    try:
        password = config.wall.password_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as failure:
        raise ConfigurationError(
            f"[wall] password_file {config.wall.password_file} cannot be read: {failure}"
        ) from failure
    if not password:
        raise ConfigurationError(f"[wall] password_file {config.wall.password_file} is empty")
    return password


def _older_than_feed(feed: Any, round_id: int) -> bool:
    """Whether round ``round_id``, not found in ``feed``, may be in the table's journal
    before the feed's events: not if the feed holds the journal from its start, nor if no
    round that high was ever opened (round ids count up)."""
    if feed.ready and feed.complete_since == 0:
        return False
    known = [
        event["data"]["round_id"]
        for event in feed.events
        if isinstance((event.get("data") or {}).get("round_id"), int)
    ]
    current = ((feed.state or {}).get("round") or {}).get("id")
    if isinstance(current, int):
        known.append(current)
    return not known or round_id <= max(known)


def _round_from_table(client: Any, table: str, round_id: int, feed: Any) -> list[dict[str, Any]]:
    """Round ``round_id``'s events from the table's ``events`` answers, paged from the
    journal's start and stopped at the round's end, at a later round's opening, or where the
    feed's own events begin (which did not hold its opening; a feed still catching up
    holds nothing yet)."""
    since, span = 0, list[dict[str, Any]]()
    while True:
        answer = client.request(
            table, "events", timeout=REQUEST_TIMEOUT_S, since=since, limit=AUDIT_PAGE
        )
        if not answer.get("ok"):
            raise RuntimeError(answer.get("message") or "the table refused the events")
        data = answer.get("data") or {}
        if feed.epoch is not None and data.get("epoch") != feed.epoch:
            raise RuntimeError(f"table {table}'s journal was replaced: reload the page")
        batch = data.get("events") or []
        for event in batch:
            details = event.get("data") or {}
            opened = event["type"] == "round_opened"
            if opened and details.get("round_id") == round_id:
                span = [event]
            elif span:
                span.append(event)
                ended = event["type"] in ("round_settled", "round_voided")
                if (ended and details.get("round_id") == round_id) or len(span) > (
                    AUDIT_MAX_ENTRIES
                ):
                    return span
            elif (
                opened
                and isinstance(details.get("round_id"), int)
                and details["round_id"] > round_id
            ):
                return []  # round ids count up: that round was never opened
            if not span and feed.ready and int(event["seq"]) > feed.complete_since:
                return []  # from here on the feed has every event, and not that round
        if not data.get("more") or not batch:
            return span
        since = int(batch[-1]["seq"])


async def _body(read: Awaitable[Any]) -> Any:
    """A request's body, read within :data:`BODY_TIMEOUT_S` (else 408)."""
    try:
        return await asyncio.wait_for(read, BODY_TIMEOUT_S)
    except TimeoutError:
        raise web.HTTPRequestTimeout(text="the request's body came too slowly") from None


def _answer(response: dict[str, Any]) -> dict[str, Any]:
    """The page's view of a table's response: ``ok``, ``code``, ``message``, ``data``."""
    failure = response.get("error") or {}
    return {
        "ok": bool(response.get("ok")),
        "code": failure.get("code", "") if not response.get("ok") else "",
        "message": response.get("message", ""),
        "data": response.get("data"),
        "command": response.get("command"),
        "transaction": response.get("transaction"),
    }


def _clock(at: Any) -> str:
    if not isinstance(at, int | float):
        return ""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


async def _send(response: web.StreamResponse, kind: str, data: Any) -> None:
    payload = json.dumps(data, separators=(",", ":"))
    await response.write(f"event: {kind}\ndata: {payload}\n\n".encode())


def describe_broker(broker: BrokerSettings) -> str:
    """``broker HOST:PORT, MQTT 5, TLS``: the broker the console signs people in to."""
    nodes = broker.hosts or ((broker.host, broker.port),)
    where = ",".join(f"{host}:{port}" for host, port in nodes)
    tls = ", TLS" if broker.tls_ca is not None else ""
    return f"broker {where}, MQTT {broker.protocol}{tls}"


def ssl_context(config: ConsoleConfig) -> ssl.SSLContext | None:
    """HTTPS with ``[console] certificate`` and ``key``; None without them."""
    if config.certificate is None or config.key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(config.certificate, config.key)
    except (OSError, ssl.SSLError) as failure:
        where = config.source or "console.toml"
        raise ConfigurationError(
            f"{where}: [console] certificate {config.certificate} and key {config.key} "
            f"cannot be used: {failure}"
        ) from failure
    return context


async def run(config: ConsoleConfig) -> None:
    """Serve until SIGTERM or SIGINT, then stop cleanly: streams ended, every account's
    broker connection closed."""
    context = ssl_context(config)
    console = Console(config)
    # Open streams are ended at shutdown: 5 s is plenty for the requests still running.
    runner = web.AppRunner(
        console.app(),
        access_log_format=ACCESS_LOG_FORMAT,
        shutdown_timeout=5.0,
        keepalive_timeout=IDLE_CONNECTION_S,
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port, ssl_context=context)
        await site.start()
        # At every verbosity: the journal says where the console is, and nothing else.
        logging.getLogger(CONSOLE_LIFECYCLE_LOGGER).info(
            "serving %s (%s)", config.origin, describe_broker(config.broker)
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        logger.info("stopping the console")
    finally:
        await runner.cleanup()


def serve(config: ConsoleConfig) -> int:
    asyncio.run(run(config))
    return 0
