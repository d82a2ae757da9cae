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
page; a dealer station's account goes on to ``/dealer``), ``GET /history`` (a round,
printable), ``GET /dealer`` (the dealer's screen of one table), ``GET /static/...``,
``GET /healthz``, and
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

The parts, a module each: :mod:`~controller.console.signin` (signing in and out),
:mod:`~controller.console.pages`, :mod:`~controller.console.api` (the page's JSON API),
:mod:`~controller.console.stream` (server-sent events), :mod:`~controller.console.tls`, and
:mod:`~controller.console.common` (what they share). This module holds :class:`Console`
(the sessions, one :class:`AccountFeed` per signed-in account, the routes of those parts)
and runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import paho.mqtt.client as mqtt
from aiohttp import web

from controller.client.api_client import Account, StudioClient
from controller.console.api import (
    ACTIONS,
    ApiRoutes,
    attachment_header,
    audit_csv,
    spreadsheet_safe,
)
from controller.console.common import (
    CSP,
    IDLE_CONNECTION_S,
    MAX_BODY_BYTES,
    SESSION_COOKIE,
    STATIC_DIR,
    origin_ok,
)
from controller.console.config import BrokerSettings, ConsoleConfig
from controller.console.fleet import (
    build_tile,
    urgency_order,
)
from controller.console.pages import PageRoutes
from controller.console.sessions import (
    AccountLinks,
    DeviceCookies,
    Session,
    SessionStore,
    SignInThrottle,
)
from controller.console.signin import SignInRoutes
from controller.console.stream import StreamRoutes, Subscriber
from controller.console.tls import ssl_context
from controller.kernel.errors import ConfigurationError
from controller.kernel.logs import CONSOLE_LIFECYCLE_LOGGER

__all__ = [
    # The server's names, as they were before its parts had modules of their own.
    "ACTIONS",
    "AccountFeed",
    "Console",
    "attachment_header",
    "audit_csv",
    "describe_broker",
    "origin_ok",
    "run",
    "serve",
    "spreadsheet_safe",
    "ssl_context",
]

logger = logging.getLogger(__name__)

# A tile goes out at most this often per table (the latest state then): a burst of events
# is one repaint, not dozens. 0.1 s held a state behind its burst for up to 0.1 s; with
# 0.03 s `livetable bench console` (20 tables) measured p99 104 ms where 0.1 s gave 166 ms.
COALESCE_S: Final = 0.03
# How often idle sessions are ended and tiles checked for going stale without a message.
SWEEP_S: Final = 1.0
# How long the wall account waits before trying the broker again when it could not connect:
# the first wait, doubled after each failure up to the longest, so that a broker down for
# hours costs the log a line a minute, not one every few seconds (each attempt is a new
# client, whose first problem is said at once).
WALL_RETRY_S: Final = 5.0
WALL_RETRY_LONGEST_S: Final = 60.0
# How long the broker has to take a sign-in's connection, and to say which role it has (one
# that refuses the connection is said at once, a cluster once every node has refused it).
CONNECT_TIMEOUT_S: Final = 8.0
# A CONNACK's "unsupported protocol version" (MQTT 5's 0x84; paho maps MQTT 3.1.1's return
# code 1 onto it): nats-server answers an MQTT 5 CONNECT so.
UNSUPPORTED_PROTOCOL_VERSION: Final = 0x84
PROBE_TIMEOUT_S: Final = 3.0
# Events held per table and account: a shoe's worth for the faces still possible, the last
# rounds for their history (older ones come from the table's ``events`` catch-up). With the
# client's default (5000) the console's memory grew for the first half hour of a studio of
# 20 tables (``livetable bench console``: 51 MB to 118 MB in 10 minutes, still filling).
FEED_EVENTS: Final = 1500
ACCESS_LOG_FORMAT: Final = '%a "%r" %s %b %Tfs'


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


class Console(SignInRoutes, PageRoutes, ApiRoutes, StreamRoutes):
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
        # The broker (a cluster's node) the last client connected to: the next starts there
        # rather than at a dead first node (paho waits 3 s before its second attempt).
        self._node: tuple[str, int] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        # The console's own viewer account (``[wall]``), connected at start; None until then.
        self.wall: AccountFeed | None = None
        self._wall_task: asyncio.Task[None] | None = None
        self._wall_password = _wall_password(config)

    # -- blocking calls, off the event loop ---------------------------------------------------

    async def blocking(self, call: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, call)

    # -- an account signed in to the broker ----------------------------------------------------

    def _open(self, account: Account, feed: AccountFeed | None) -> tuple[Any, str]:
        """A client of ``account`` and how its connection went: "ok", "refused" (the
        credentials), "protocol" (the broker refused [mqtt] protocol's MQTT version) or
        "unreachable" (closed, in the background, unless "ok")."""
        broker = self.config.broker
        options: dict[str, Any] = (
            {"on_update": feed.on_update, "on_link": feed.on_link, "keep": FEED_EVENTS}
            if feed is not None
            else {"backfill": 0, "read_events": False}
        )
        if account.role == "dealer":
            options["read_events"] = False  # a dealer station's account may not read them
        host, port = broker.host, broker.port
        if broker.hosts:  # a cluster's nodes: the client moves on when one fails
            options["hosts"] = broker.hosts
            if self._node in broker.hosts:
                host, port = self._node
        client = self.client_factory(
            host,
            port,
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
            # Every broker refused the connection (or is unknown, or has no route): said at
            # once. The deadline is for a broker that takes it and does not answer.
            if client.refused is not None or client.unreachable or time.monotonic() > deadline:
                outcome = "refused" if client.refused is not None else "unreachable"
                if getattr(client.refused, "value", None) == UNSUPPORTED_PROTOCOL_VERSION:
                    outcome = "protocol"
                # Closed without keeping the answer waiting: paho's loop, waiting to try
                # again, notices the close only between its 1 s sleeps.
                threading.Thread(target=client.close, name="console-close", daemon=True).start()
                return client, outcome
        # From several sign-ins at once, any one's node will do.
        self._node = client.broker
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
        wait_s = WALL_RETRY_S
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
                wait_s,
            )
            await asyncio.sleep(wait_s)
            wait_s = min(wait_s * 2, WALL_RETRY_LONGEST_S)

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
            web.get("/dealer", self.dealer_page),
            web.get("/api/session", self.api_session),
            web.get("/api/tables", self.api_tables),
            web.get("/api/games", self.api_games),
            web.get("/api/commands", self.api_commands),
            web.get("/api/stream", self.api_stream),
            web.post("/api/tables/{table}/request", self.api_request),
            web.get("/api/tables/{table}/rounds/{round_id}", self.api_round),
            web.get("/api/tables/{table}/rounds/{round_id}/pictures", self.api_pictures),
            web.get("/api/tables/{table}/rounds/{round_id}/live", self.api_live_picture),
            web.get(
                "/api/tables/{table}/rounds/{round_id}/pictures/{row}.jpg", self.api_picture
            ),
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


def describe_broker(broker: BrokerSettings) -> str:
    """``broker HOST:PORT, MQTT 5, TLS``: the broker the console signs people in to."""
    nodes = broker.hosts or ((broker.host, broker.port),)
    where = ",".join(f"{host}:{port}" for host, port in nodes)
    tls = ", TLS" if broker.tls_ca is not None else ""
    return f"broker {where}, MQTT {broker.protocol}{tls}"


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
