"""A studio for console tests: a locked-down mosquitto, two real table daemons with simulated
shoes, the people around them, and ``livetable console`` serving them on a free port.

:func:`start_console_studio` starts everything and returns a :class:`ConsoleStudio`:

- the broker is mosquitto with anonymous access refused, a password file, the shipped ACL
  (``systemd/mosquitto/livetable.acl``) and the shipped rule that a client's id is its
  account's name (so one connection per account), with the accounts ``livetable-t1``,
  ``livetable-t2`` (the daemons), ``platform``, ``alice`` and ``bob`` (supervisors) and
  ``viewer`` (also the console's own, its ``[wall]`` account, when the studio is started
  with ``wall=True``) and ``dealer-t1`` (table t1's dealer station: the dealer's
  screen); :attr:`ConsoleStudio.passwords` has each one's password;
- tables ``t1`` (baccarat) and ``t2`` (blackjack-classic): ``livetable run`` subprocesses,
  each shoe a :class:`~simulators.shoe.simulator.ShoeSimulator` on its own pty. Each starts
  with a shoe declared (a short-lived ``bob`` connection sends ``new_shoe``) and burned, and
  waits in ``SHOE_READY``;
- the people: one thread that, for every table, draws the next card whenever the table
  waits for one (the dealer), and, as the ``platform`` account, answers every decision the
  table asks for and opens rounds while :meth:`ConsoleStudio.play` has asked for some. It
  never resolves a pause: that is the supervisor's, through the console. It holds the
  ``platform`` account's one connection (a :class:`~controller.client.api_client.StudioClient`);
  ``alice``, ``bob`` and ``viewer`` are free for the console;
- the console: ``livetable -v console --config console.toml --listen 127.0.0.1:PORT`` as a
  subprocess, its log (stderr) in a file (:meth:`ConsoleProcess.log`), ready once
  ``/healthz`` answers. :attr:`ConsoleStudio.url` is its base URL.

A test makes a table pause with :meth:`ConsoleStudio.draw_out_of_turn` (the dealer draws a
card between rounds: ``card_out_of_turn``, which asks to accept or burn it) or
:meth:`ConsoleStudio.pause` (a supervisor's ``pause`` over MQTT, by ``bob`` unless told);
reads what the tables publish with :meth:`ConsoleStudio.state` and
:meth:`ConsoleStudio.wait_state`; reads a table's journal with
:meth:`ConsoleTable.journal_rows`; kills a table's daemon with
``studio.tables["t2"].daemon.kill()``; plays rounds with :meth:`ConsoleStudio.play`; sends
a table's dealer away (a round waits for a card, the table falls silent: stale) with
:meth:`ConsoleStudio.hold_dealer`. :meth:`ConsoleStudio.close` stops it all, and fails if
the console did not exit 0 on SIGTERM.

A browser's side over real HTTP: :class:`ConsoleHttp` (cookies kept, redirects not
followed, the console's own ``Origin`` sent unless told otherwise) signs in through the
form (:meth:`ConsoleHttp.sign_in`), acts (:meth:`ConsoleHttp.act`, with the session's CSRF
token), reads (:meth:`ConsoleHttp.tables`) and opens the live stream
(:meth:`ConsoleHttp.stream`, a :class:`SseStream` whose events arrive on a queue).

The pytest fixtures ``console_studio`` and ``console_studio_with(**options)``
(``tests/console/conftest.py``) wrap this.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import queue
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt

from controller.client.api_client import Account, StudioClient
from simulators.broker import BrokerProcess, free_port, start_broker
from simulators.mqtt_bots import decision, progress
from simulators.shoe.simulator import ShoeSimulator
from tests.support.broker import write_password_file
from tests.support.daemon import REPO_ROOT, DaemonProcess, write_config
from tests.support.wait import wait_until

__all__ = [
    "ACCOUNTS",
    "TABLES",
    "ConsoleHttp",
    "ConsoleProcess",
    "ConsoleStudio",
    "ConsoleTable",
    "HttpAnswer",
    "SseStream",
    "start_console_studio",
]

PRODUCTION_ACL = REPO_ROOT / "systemd" / "mosquitto" / "livetable.acl"
PRODUCTION_CONF = REPO_ROOT / "systemd" / "mosquitto" / "livetable.conf"
# The accounts of the studio's broker, by name, and the role each has in the shipped ACL.
ACCOUNTS: dict[str, str] = {
    "livetable-t1": "table",
    "livetable-t2": "table",
    "platform": "platform",
    "alice": "supervisor",
    "bob": "supervisor",
    "viewer": "viewer",
    "dealer-t1": "dealer",
}
# The tables: id -> game.
TABLES: dict[str, str] = {"t1": "baccarat", "t2": "blackjack-classic"}
# Each table's windows: betting short (rounds go quickly), the rest long enough that a
# loaded machine never pauses a table the test did not mean to pause.
TABLE_SETTINGS: dict[str, Any] = {"betting_s": 0.5, "decision_s": 10.0, "dealer_idle_s": 60.0}
TIMEOUT_S = 30.0
DRAWING_PHASES = ("BURN_REVEAL", "BURNING", "DEALING")


def _table_block(table_id: str) -> str:
    """The shipped ACL's block of table t1, for another table (the ACL's way to add one)."""
    shipped = PRODUCTION_ACL.read_text()
    start = shipped.index("user livetable-t1\n")
    block = shipped[start : shipped.index("\n\n", start) + 1]
    return "\n" + block.replace("t1", table_id)


def _password(name: str) -> str:
    return f"{name}-console-secret-{os.getpid()}"


@dataclass
class ConsoleTable:
    """One table: its daemon (``livetable run``), its shoe on a pty, its journal."""

    table_id: str
    game: str
    workdir: Path
    shoe: ShoeSimulator
    daemon: DaemonProcess
    journal_path: Path
    # The dealer's hand: one card out of the shoe at a time.
    draw_lock: threading.Lock = field(default_factory=threading.Lock)

    def draw(self) -> None:
        with self.draw_lock:
            self.shoe.draw()

    def entries(self) -> list[Any]:
        """The journal's rows (:class:`controller.service.journal.JournalEntry`), its hash
        chain checked; readable while the daemon writes."""
        from controller.service.journal import Journal

        with Journal(self.journal_path, read_only=True) as journal:
            journal.verify()
            return list(journal.entries(0))

    def journal_rows(self, kind: str) -> list[dict[str, Any]]:
        """The fields of every journal row of ``kind`` (``SupervisorCommanded``, ...)."""
        return [entry.fields for entry in self.entries() if entry.kind == kind]

    def close(self) -> None:
        try:
            self.daemon.stop()
        finally:
            self.shoe.stop()


@dataclass
class ConsoleProcess:
    """``livetable -v console`` as a child process, its stderr in ``log_path``."""

    config: Path
    log_path: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "controller.tools.cli", "-v", "console"),
                    *("--config", str(self.config), "--listen", f"127.0.0.1:{self.port}"),
                ],
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )

        def healthy() -> bool:
            assert self.alive(), f"the console stopped: {self.log()[-3000:]}"
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                    return bool(answer.read() == b"ok")
            except OSError:
                return False

        wait_until(healthy, TIMEOUT_S, "the console answering /healthz")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> int | None:
        """SIGTERM, as systemd stops it; its exit status (killed after 10 s)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")
        return ""


class ConsoleStudio:
    """The broker, the tables, the dealer and platform, and the console (see the module)."""

    def __init__(
        self,
        workdir: Path,
        *,
        tables: dict[str, str] | None = None,
        idle_timeout_s: float = 900,
        stale_after_s: float = 120,
        undo_s: float | None = 1,
        protocol: str = "5",
        wall: bool = False,
        console_settings: dict[str, Any] | None = None,
    ) -> None:
        self.workdir = workdir
        # More [console] settings of console.toml (pause_amber_s, language ...), as TOML values.
        self.console_settings = dict(console_settings or {})
        self.wall = wall
        self.idle_timeout_s = idle_timeout_s
        self.stale_after_s = stale_after_s
        # The page's undo window for a one-key action: short, for the tests that resolve
        # pauses; None leaves it out of console.toml (the console's default).
        self.undo_s = undo_s
        self.protocol = protocol
        # Tables whose dealer has stepped away: nothing is drawn for them (see hold_dealer).
        self.dealer_away: set[str] = set()
        workdir.mkdir(parents=True, exist_ok=True)
        self.table_games = dict(tables or TABLES)
        # A table beyond the shipped ACL's own examples gets an account of its own, as the
        # ACL's comment says an account is added (its role's block, the name changed).
        accounts = [*ACCOUNTS, *(f"livetable-{t}" for t in self.table_games)]
        self.passwords: dict[str, str] = {name: _password(name) for name in accounts}
        self.tables: dict[str, ConsoleTable] = {}
        self._wanted: dict[str, int] = {}
        self._acted: dict[str, Any] = {}
        self._decided: set[tuple[str, int]] = set()
        self._rng = random.Random(7)
        self._stop = threading.Event()
        self._people: threading.Thread | None = None
        self.platform: StudioClient | None = None
        self.console: ConsoleProcess | None = None
        self.errors: list[str] = []
        self._locked_ptys: list[ShoeSimulator] = []
        self.broker = self._start_broker()
        for table_id, game in self.table_games.items():
            self.tables[table_id] = self._make_table(table_id, game)
            self._wanted[table_id] = 0

    # -- starting -----------------------------------------------------------------------

    def _start_broker(self) -> BrokerProcess:
        workdir = self.workdir / "broker"
        workdir.mkdir()
        password_file = workdir / "passwords"
        users = {name: (name, password) for name, password in self.passwords.items()}
        write_password_file(password_file, users)
        identity = "".join(
            line + "\n"
            for line in PRODUCTION_CONF.read_text().splitlines()
            if line.startswith("use_username_as_clientid")
        )
        acl = PRODUCTION_ACL
        shipped = PRODUCTION_ACL.read_text()
        added = [t for t in self.table_games if f"\nuser livetable-{t}\n" not in shipped]
        if added:
            acl = workdir / "livetable.acl"
            acl.write_text(shipped + "".join(_table_block(t) for t in added))
        return start_broker(
            workdir,
            extra_config=(
                f"allow_anonymous false\npassword_file {password_file}\n"
                f"acl_file {acl}\n" + identity
            ),
            users=users,
        )

    def _make_table(self, table_id: str, game: str) -> ConsoleTable:
        workdir = self.workdir / table_id
        workdir.mkdir()
        shoe = self._free_shoe(workdir, seed=len(self.tables) + 3)
        account = f"livetable-{table_id}"
        config = write_config(
            workdir / f"{table_id}.toml",
            table_id=table_id,
            game=game,
            shoe_port=shoe.link,
            broker_port=self.broker.port,
            username=account,
            password=self.passwords[account],
            **TABLE_SETTINGS,
        )
        daemon = DaemonProcess(config, workdir / "daemon.log")
        return ConsoleTable(table_id, game, workdir, shoe, daemon, workdir / f"{table_id}.journal")

    def _free_shoe(self, workdir: Path, seed: int) -> ShoeSimulator:
        """A shoe simulator on a pty that the daemon can lock. On a shared machine a
        process outside this test (another test's orphaned daemon) may still hold the lock
        of a pty whose number the kernel hands out again, and a daemon would then wait for
        that port for ever: such a pty is kept aside (open, so its number is not handed out
        a third time) until :meth:`close`, and another one taken."""
        for attempt in range(8):
            link = workdir / ("shoe" if attempt == 0 else f"shoe-{attempt}")
            shoe = ShoeSimulator("angel-eye", link, seed=seed)
            shoe.start()
            descriptor = os.open(os.path.realpath(link), os.O_RDWR | os.O_NOCTTY)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(descriptor, fcntl.LOCK_UN)
                return shoe
            except BlockingIOError:
                self._locked_ptys.append(shoe)
            finally:
                os.close(descriptor)
        raise AssertionError(f"every pty offered in {workdir} is locked by another process")

    def start(self) -> ConsoleStudio:
        for table in self.tables.values():
            table.daemon.start()
        self.platform = StudioClient(
            self.broker.host,
            self.broker.port,
            Account("platform", "platform", self.passwords["platform"]),
            protocol=mqtt.MQTTv5,
            client_id="platform",
        )
        assert self.platform.wait_connected(TIMEOUT_S), f"platform: {self.platform.refused}"
        for table_id in self.tables:
            self.wait_state(
                table_id,
                lambda s, f: f.availability == "online" and s["devices"]["shoe_online"],
                "online with its shoe",
            )
        self._people = threading.Thread(target=self._run_people, name="studio-people")
        self._people.start()
        self._declare_shoes()
        for table_id in self.tables:
            self.wait_state(table_id, lambda s, _f: s["phase"] == "SHOE_READY", "its shoe burned")
        self.console = ConsoleProcess(
            self._write_console_config(), self.workdir / "console.log", free_port()
        )
        self.console.start()
        return self

    def _declare_shoes(self) -> None:
        """``new_shoe`` on every table, as ``bob``, whose connection is closed afterwards."""
        bob = self.supervisor("bob")
        try:
            for table_id in self.tables:
                answer = bob.request(table_id, "new_shoe", timeout=TIMEOUT_S)
                assert answer["ok"], answer
        finally:
            bob.close()

    def _write_console_config(self) -> Path:
        path = self.workdir / "console.toml"
        path.write_text(
            "[console]\n"
            'listen = "127.0.0.1:8080"\n'
            f"idle_timeout_s = {self.idle_timeout_s}\n"
            f"stale_after_s = {self.stale_after_s}\n"
            + ("" if self.undo_s is None else f"undo_s = {self.undo_s}\n")
            + "".join(
                f"{key} = {json.dumps(value)}\n" for key, value in self.console_settings.items()
            )
            + "[broker]\n"
            f'host = "{self.broker.host}"\n'
            f"port = {self.broker.port}\n"
            f'protocol = "{self.protocol}"\n'
            'topic_prefix = "livetable"\n',
            encoding="utf-8",
        )
        if self.wall:
            secret = self.workdir / "wall.password"
            secret.write_text(self.passwords["viewer"] + "\n", encoding="utf-8")
            with path.open("a", encoding="utf-8") as config:
                config.write('[wall]\naccount = "viewer"\npassword_file = "wall.password"\n')
        return path

    # -- the people around the tables (one thread) ---------------------------------------

    def _run_people(self) -> None:
        while not self._stop.is_set():
            for table_id in self.tables:
                try:
                    self._serve(table_id)
                except Exception as error:  # the test reads them; the studio goes on
                    self.errors.append(f"{table_id}: {error!r}")
            time.sleep(0.01)

    def _serve(self, table_id: str) -> None:
        assert self.platform is not None
        feed = self.platform.feed(table_id)
        if feed is None or feed.state is None or feed.availability != "online":
            return
        state = feed.state
        # Not the journal's head: a lock confirmation moves it and asks nothing, and a dealer
        # who drew again on it drew a card out of turn (simulators.mqtt_bots.progress).
        key = (state["epoch"], progress(state))
        if key == self._acted.get(table_id):
            return
        phase = state["phase"]
        if phase in DRAWING_PHASES:
            if table_id in self.dealer_away:
                return
            self.tables[table_id].draw()
        elif phase == "SHOE_READY" and self._wanted[table_id] > 0:
            answer = self.platform.request(table_id, "open_round", timeout=TIMEOUT_S)
            if answer["ok"]:
                self._wanted[table_id] -= 1
            else:
                self.errors.append(f"{table_id} open_round: {answer['message']}")
        elif phase == "DECIDING":
            asked = [e for e in feed.events if e["type"] == "decision_requested"]
            if not asked or (table_id, asked[-1]["seq"]) in self._decided:
                return  # its event is still to come: served on a later pass
            self._decided.add((table_id, asked[-1]["seq"]))
            self.platform.request(
                table_id, "decide", timeout=TIMEOUT_S, **decision(asked[-1], self._rng)
            )
        else:
            return
        self._acted[table_id] = key

    # -- what a test does -----------------------------------------------------------------

    @property
    def url(self) -> str:
        """The console's base URL, ``http://127.0.0.1:PORT``."""
        assert self.console is not None, "the studio was not started"
        return self.console.url

    def supervisor(self, name: str = "bob") -> StudioClient:
        """A connected :class:`StudioClient` of supervisor ``name`` (MQTT 5); close it after
        use: the broker takes one connection per account, and the console's sign-in of
        ``name`` needs it."""
        client = StudioClient(
            self.broker.host,
            self.broker.port,
            Account("supervisor", name, self.passwords[name]),
            protocol=mqtt.MQTTv5,
            client_id=name,
        )
        if not client.wait_connected(TIMEOUT_S):
            client.close()
            raise AssertionError(f"the broker did not take {name}: {client.refused}")
        return client

    def play(self, table_id: str, rounds: int) -> None:
        """Have the platform open ``rounds`` more rounds on ``table_id`` (one after the
        other, each played out by the dealer and the platform)."""
        self._wanted[table_id] += rounds

    def hold_dealer(self, table_id: str, away: bool = True) -> None:
        """The dealer of ``table_id`` steps away (draws nothing: a round waits for its next
        card, and the table publishes nothing meanwhile), or comes back (``away`` false)."""
        if away:
            self.dealer_away.add(table_id)
        else:
            self.dealer_away.discard(table_id)
            self._acted.pop(table_id, None)

    def state(self, table_id: str) -> dict[str, Any] | None:
        """The table's latest state, as the platform's connection saw it."""
        assert self.platform is not None
        feed = self.platform.feed(table_id)
        return None if feed is None else feed.state

    def events(self, table_id: str) -> list[dict[str, Any]]:
        """The table's events as the platform's connection holds them, in ``seq`` order."""
        assert self.platform is not None
        feed = self.platform.feed(table_id)
        return [] if feed is None else list(feed.events)

    def wait_state(
        self,
        table_id: str,
        predicate: Callable[[dict[str, Any], Any], Any],
        what: str,
        timeout: float = TIMEOUT_S,
    ) -> dict[str, Any]:
        """Wait until ``predicate(state, feed)`` holds for the table (its daemon alive);
        return that state."""
        assert self.platform is not None
        table = self.tables[table_id]

        def check() -> dict[str, Any] | None:
            assert table.daemon.alive(), f"{table_id}'s daemon died: {table.daemon.why()}"
            feed = self.platform.feed(table_id) if self.platform else None
            if feed is None or feed.state is None:
                return None
            return feed.state if predicate(feed.state, feed) else None

        return wait_until(check, timeout, f"table {table_id} {what}")

    def draw_out_of_turn(self, table_id: str) -> dict[str, Any]:
        """The dealer draws a card while the table waits between rounds: it pauses
        (``card_out_of_turn``; ``pause.needs`` asks to accept or burn it). Returns the
        paused state."""
        self.wait_state(table_id, lambda s, _f: s["phase"] == "SHOE_READY", "between rounds")
        self.tables[table_id].draw()
        return self.wait_state(
            table_id,
            lambda s, _f: s["phase"] == "PAUSED" and s["pause"]["reason"] == "card_out_of_turn",
            "paused by the card out of turn",
        )

    def pause(self, table_id: str, reason: str = "test pause", by: str = "bob") -> dict[str, Any]:
        """Supervisor ``by`` pauses the table over MQTT (a connection of that account, closed
        after: not one the console holds). Returns the paused state."""
        client = self.supervisor(by)
        try:
            answer = client.request(table_id, "pause", timeout=TIMEOUT_S, reason=reason)
        finally:
            client.close()
        assert answer["ok"], answer
        return self.wait_state(table_id, lambda s, _f: s["phase"] == "PAUSED", "paused")

    def close(self) -> None:
        """Stop the console, the people, the daemons and the broker; the console's exit
        status must have been 0 (a clean stop on SIGTERM)."""
        problems: list[str] = []
        if self.console is not None:
            code = self.console.stop()
            if code != 0:
                problems.append(f"the console exited {code}: {self.console.log()[-2000:]}")
        self._stop.set()
        if self._people is not None:
            self._people.join(TIMEOUT_S)
        if self.platform is not None:
            self.platform.close()
        for table in self.tables.values():
            table.close()
        for shoe in self._locked_ptys:
            shoe.stop()
        self.broker.stop()
        assert not problems, problems


def start_console_studio(workdir: Path, **options: Any) -> ConsoleStudio:
    """Start the whole studio in ``workdir`` (see the module); :meth:`ConsoleStudio.close`
    stops it. ``options`` (:class:`ConsoleStudio`'s): ``tables`` (id -> game, instead of
    :data:`TABLES`), the console's ``idle_timeout_s``, ``stale_after_s`` and ``undo_s``
    (console.toml; default 900, 120 and 1; ``undo_s=None``: the console's default), its
    broker ``protocol`` ("5" or "3.1.1"), ``wall`` (give the console its own viewer
    account, ``[wall]``), ``console_settings`` (more ``[console]`` keys and their values)."""
    studio = ConsoleStudio(workdir, **options)
    try:
        return studio.start()
    except BaseException:
        studio.close()
        raise


# -- a browser's side, over real HTTP ---------------------------------------------------------


@dataclass
class HttpAnswer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


_CSRF_FIELD = re.compile(r'name="csrf" value="([^"]+)"')


class ConsoleHttp:
    """One browser's side of the console: its cookies kept (and dropped when the console
    deletes them), redirects not followed, every request over a new HTTP connection.

    ``origin``: the ``Origin`` header sent with every request (a browser sends the
    console's own on a POST), None for none; a request may give another."""

    def __init__(self, url: str, *, origin: str | None = "same") -> None:
        parsed = urllib.parse.urlsplit(url)
        self.url = url
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 80
        self.origin = url if origin == "same" else origin
        self.cookies: dict[str, str] = {}
        self.csrf: str | None = None

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _headers(self, headers: dict[str, str] | None, origin: str | None) -> dict[str, str]:
        sent = dict(headers or {})
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if origin is not None:
            sent["Origin"] = origin
        return sent

    def _keep_cookies(self, message: http.client.HTTPMessage) -> None:
        for header in message.get_all("Set-Cookie") or []:
            cookie: SimpleCookie = SimpleCookie()
            cookie.load(header)
            for name, morsel in cookie.items():
                if morsel["max-age"] == "0" or not morsel.value:
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        origin: str | None = "default",
        timeout: float = TIMEOUT_S,
    ) -> HttpAnswer:
        """Send one request; ``origin`` "default" sends :attr:`origin`."""
        connection = self._connection(timeout)
        try:
            chosen = self.origin if origin == "default" else origin
            connection.request(method, path, body=body, headers=self._headers(headers, chosen))
            response = connection.getresponse()
            answer = HttpAnswer(response.status, response.headers, response.read())
        finally:
            connection.close()
        self._keep_cookies(answer.headers)
        return answer

    def get(self, path: str, **options: Any) -> HttpAnswer:
        return self.request("GET", path, **options)

    def post_json(
        self, path: str, document: Any, *, csrf: str | None = "session", **options: Any
    ) -> HttpAnswer:
        """POST ``document`` as JSON with ``X-CSRF-Token`` (``csrf`` "session": the token
        :meth:`sign_in` read from ``/api/session``; None: no header)."""
        headers = {"Content-Type": "application/json"}
        token = self.csrf if csrf == "session" else csrf
        if token is not None:
            headers["X-CSRF-Token"] = token
        return self.request(
            "POST", path, body=json.dumps(document).encode(), headers=headers, **options
        )

    def sign_in(self, username: str, password: str) -> HttpAnswer:
        """The sign-in form as a browser fills it in: GET /signin (its CSRF token), POST
        it. On success (303) :attr:`csrf` is the session's token (``/api/session``)."""
        page = self.get("/signin")
        if page.status == 303:
            return page  # signed in already
        found = _CSRF_FIELD.search(page.text)
        assert found is not None, f"no csrf field in the sign-in page: {page.text[:500]}"
        form = urllib.parse.urlencode(
            {"username": username, "password": password, "csrf": found.group(1)}
        ).encode()
        answer = self.request(
            "POST",
            "/signin",
            body=form,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        if answer.status == 303:
            session = self.get("/api/session")
            assert session.status == 200, (session.status, session.text)
            self.csrf = session.json()["csrf"]
        return answer

    def act(self, table: str, command: str, **args: Any) -> HttpAnswer:
        """POST /api/tables/TABLE/request with the session's CSRF token."""
        return self.post_json(f"/api/tables/{table}/request", {"command": command, "args": args})

    def tables(self) -> dict[str, dict[str, Any]]:
        """``/api/tables``' tiles by table id (in the console's order)."""
        answer = self.get("/api/tables")
        assert answer.status == 200, (answer.status, answer.text)
        return {tile["table"]: tile for tile in answer.json()["tables"]}

    def stream(self, *, origin: str | None = "default") -> SseStream:
        """Open ``/api/stream``; its events arrive on :attr:`SseStream.events`."""
        connection = self._connection(TIMEOUT_S)
        chosen = self.origin if origin == "default" else origin
        connection.request(
            "GET", "/api/stream", headers=self._headers({"Accept": "text/event-stream"}, chosen)
        )
        return SseStream(connection, connection.getresponse())


class SseStream:
    """An open ``/api/stream``: each server-sent event as (event, data parsed from JSON) on
    :attr:`events` (a queue: :func:`tests.support.wait.wait_for_item` waits on it), read by
    a thread of its own; comments (``: ping``) are skipped. :meth:`close` ends it."""

    def __init__(self, connection: http.client.HTTPConnection, response: Any) -> None:
        self.connection = connection
        self.response = response
        self.status: int = response.status
        self.headers = response.headers
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._read, name="sse-reader", daemon=True)
        if self.status == 200:
            self._thread.start()
        else:
            self.body = response.read()
            self.ended.set()

    def _read(self) -> None:
        kind, data = "message", []
        try:
            while True:
                line = self.response.readline()
                if not line:
                    break
                text = line.decode("utf-8").rstrip("\r\n")
                if text == "":
                    if data:
                        self.events.put((kind, json.loads("\n".join(data))))
                    kind, data = "message", []
                elif text.startswith(":"):
                    continue
                elif text.startswith("event:"):
                    kind = text[6:].strip()
                elif text.startswith("data:"):
                    data.append(text[5:].strip())
        except (OSError, ValueError, http.client.HTTPException):
            pass
        finally:
            self.ended.set()

    def close(self) -> None:
        # The socket is shut down first: the reader's readline returns, and only then is
        # the connection closed under it (closing it from here while it reads races).
        sock = self.connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread.is_alive():
            self._thread.join(TIMEOUT_S)
        self.connection.close()
