"""The console's page in a real headless Chromium (Debian's ``/usr/bin/chromium``, driven by
playwright), against the real thing: ``livetable console`` serving two ``livetable run``
tables on a locked-down mosquitto (``console_studio``, :mod:`tests.support.console`).

Every action is taken on the page as a supervisor takes it (a click, a key, typing) and
checked where it lands: on MQTT (the platform's connection of the studio) and in the table's
journal under the supervisor's name. The pauses come from the simulated dealer and shoe: a
card drawn between rounds or while paused (out of turn), a card the shoe cannot read
(misread), the shoe's cable pulled in the middle of a deal (an outage).

The cases: the wall (both tables, most urgent first, a pause from the page pausing exactly
that table, a tablet's width); accept and burn of cards drawn out of turn; enter_card of a
misread and of a card drawn during an outage, typed in the picker; no_cards_drawn; a plain
resume; cancel, end shoe and new shoe after their confirmations; a round's history and its
printable page; the audit and its CSV; a viewer without actions, whose forged request is
refused; a killed daemon OFFLINE within 2 s; the sign-in delays; the browser's connection
lost and back (beeps never replayed); the queue's keys; a stale table; the console's broker
link down; an idle sign-out that keeps the wall live; axe-core (no serious or critical
violation) on every page and dialog.

Screenshots of what a supervisor sees are saved in each test's ``screenshots`` folder (its
path is printed) and copied to ``$LIVETABLE_SCREENSHOTS/<test>/`` when that is set. The
ones ``docs/console.md`` shows (:data:`DOC_SCREENSHOTS`) are written into
``$LIVETABLE_DOC_SCREENSHOTS`` when that is set: ``LIVETABLE_DOC_SCREENSHOTS=docs/console
.venv/bin/python -m pytest tests/console/test_browser.py`` takes them again.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import selectors
import shutil
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.console.fleet import STATUS_ORDER, urgency_order
from simulators.shoe.simulator import FaultPlan
from tests.console.page_words import catalogue, in_language, raw_codes_shown
from tests.support.console import ConsoleStudio, ConsoleTable
from tests.support.wait import wait_until

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (Debian's chromium package) to drive"
)

# playwright drives the system's Chromium: nothing is downloaded (no `playwright install`).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_S = 30.0
# How long a page may take to show what the console has (a loaded machine: generous).
PAGE_TIMEOUT_MS = 20_000
DESK = {"width": 1400, "height": 1000}
TABLET = {"width": 768, "height": 1024}


# The screenshots docs/console.md shows: the test's name of each -> its file in docs/console/.
DOC_SCREENSHOTS: dict[str, str] = {
    "wall-running-and-paused": "wall.png",
    "tablet": "tablet.png",
    "broker-link-down": "link-down.png",
    "wall-offline-table": "offline.png",
    "pause-queue-out-of-turn": "pause-queue.png",
    "undo-window": "undo.png",
    "three-pauses-1280x720": "busy-night.png",
    "card-picker": "card-picker.png",
    "cancel-confirmation": "cancel.png",
    "round-history": "history.png",
    "round-history-es": "history-es.png",
    "audit": "audit.png",
    "viewer-wall": "viewer.png",
}


def by_id(name: str) -> str:
    """The CSS selector of the element with that data-testid."""
    return f'[data-testid="{name}"]'


# --- the browser -------------------------------------------------------------------------------


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium of the test's own (playwright's driver and its threads end with
    it: the leak check sees nothing left)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class Screens:
    """Where a test's screenshots go (and their copy under ``$LIVETABLE_SCREENSHOTS``)."""

    folder: Path
    copy_to: Path | None
    docs: Path | None = None
    taken: list[Path] = field(default_factory=list)

    def shoot(self, page: Any, name: str, *, full_page: bool = False) -> Path:
        path = self.folder / f"{len(self.taken) + 1:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        self.taken.append(path)
        if self.copy_to is not None:
            self.copy_to.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, self.copy_to / path.name)
        if self.docs is not None and name in DOC_SCREENSHOTS:
            shutil.copy(path, self.docs / DOC_SCREENSHOTS[name])
        return path


@pytest.fixture
def screens(tmp_path: Path, request: pytest.FixtureRequest) -> Screens:
    folder = tmp_path / "screenshots"
    folder.mkdir()
    root = os.environ.get("LIVETABLE_SCREENSHOTS")
    copy_to = Path(root) / request.node.name if root else None
    print(f"screenshots of {request.node.name}: {folder}" + (f" and {copy_to}" if copy_to else ""))
    docs = os.environ.get("LIVETABLE_DOC_SCREENSHOTS")
    return Screens(folder, copy_to, Path(docs) if docs else None)


@dataclass
class Visit:
    """One person's browser page on the console, and what went wrong in it."""

    page: Any
    errors: list[str]

    def locator(self, selector: str) -> Any:
        return self.page.locator(selector)

    def tile(self, table: str) -> Any:
        return self.page.locator(by_id(f"tile-{table}"))

    def queue_item(self, table: str) -> Any:
        return self.page.locator(by_id(f"queue-item-{table}"))

    def check_clean(self) -> None:
        """No script error and no Content-Security-Policy violation in the page."""
        assert self.errors == [], self.errors


def open_page(browser: Any, url: str, viewport: dict[str, int] = DESK) -> Visit:
    from playwright.sync_api import expect

    expect.set_options(timeout=PAGE_TIMEOUT_MS)
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"script error: {error}"))
    page.on(
        "console",
        lambda message: (
            errors.append(f"console: {message.text}")
            if "Content Security Policy" in message.text or message.type == "assert"
            else None
        ),
    )
    page.goto(url)
    return Visit(page, errors)


def sign_in(
    browser: Any, studio: ConsoleStudio, account: str, *, url: str | None = None, **options: Any
) -> Visit:
    """A new browser (its own cookies) signed in as ``account`` through the sign-in form,
    the wall loaded and its stream up. ``url``: the console's, or a relay's to it."""
    from playwright.sync_api import expect

    visit = open_page(browser, f"{url or studio.url}/", **options)
    page = visit.page
    page.wait_for_url(re.compile(r"/signin$"))
    page.fill(by_id("signin-username"), account)
    page.fill(by_id("signin-password"), studio.passwords[account])
    page.click(by_id("signin-submit"))
    page.wait_for_url(re.compile(r"/$"))
    expect(page.locator("body")).to_have_attribute("data-loaded", "true")
    expect(page.locator("body")).to_have_attribute("data-stream", "up")
    return visit


# --- accessibility -----------------------------------------------------------------------------

# axe-core's impacts that fail a test (the others, "minor" and "moderate", are reported only).
AXE_FAILING = ("serious", "critical")


def axe_violations(page: Any, where: str, context: str | None = None) -> list[str]:
    """axe-core (shipped in axe-playwright-python: nothing fetched) on ``page`` (or only
    ``context``, a CSS selector): its serious and critical violations, one line each."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, context=context)
    found = []
    for violation in results.response["violations"]:
        if violation["impact"] in AXE_FAILING:
            targets = [", ".join(node["target"]) for node in violation["nodes"]][:3]
            found.append(f"{where}: {violation['id']} ({violation['impact']}) {targets}")
    return found


# --- the dealer's hand, held -----------------------------------------------------------------


class DealerHand:
    """The studio's dealer draws on a table whenever it waits for a card; this holds the
    dealer's hand on one table: a card the dealer would draw now is not drawn (counted in
    :attr:`wanted`) until the test draws it (:meth:`draw_wanted`) or lets go (:meth:`go`).
    So a round can be held in ``DEALING``, awaiting its next card, as long as a test needs."""

    def __init__(self, table: ConsoleTable) -> None:
        self.table = table
        self._lock = threading.Lock()
        self._holding = False
        self._wanted = 0
        self._draw = table.draw
        table.draw = self._dealer_draws  # type: ignore[method-assign]

    def _dealer_draws(self) -> None:
        with self._lock:
            if self._holding:
                self._wanted += 1
                return
        self._draw()

    def hold(self) -> None:
        with self._lock:
            self._holding = True
            self._wanted = 0

    @property
    def wanted(self) -> int:
        with self._lock:
            return self._wanted

    def draw_wanted(self, faults: FaultPlan | None = None) -> Any:
        """The card the dealer waited to draw leaves the shoe now (with ``faults`` for this
        card, e.g. unreadable); what the shoe emitted."""
        with self._lock:
            assert self._wanted > 0, "the dealer was not about to draw"
            self._wanted -= 1
        shoe = self.table.shoe
        with self.table.draw_lock:
            if faults is not None:
                shoe.faults = faults
            try:
                return shoe.draw()
            finally:
                shoe.faults = FaultPlan()

    def go(self) -> None:
        """The dealer draws again by itself (from the next state the table publishes)."""
        with self._lock:
            self._holding = False
            self._wanted = 0


class Relay:
    """A TCP relay between the browser and the console, on a loopback port of its own, that
    can cut the browser's connections (as a lost network does) while the console and its
    sessions stay up. One thread moves the bytes of every connection (selectors)."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.down = threading.Event()
        self._cut = threading.Event()
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.listener, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._peers: dict[socket.socket, socket.socket] = {}
        self._thread = threading.Thread(target=self._run, name="browser-relay")
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut(self) -> None:
        """Close every connection, and refuse new ones until :meth:`restore`."""
        self.down.set()
        self._cut.set()
        self._wake_w.send(b"x")

    def restore(self) -> None:
        self.down.clear()

    def close(self) -> None:
        self._stop.set()
        self._wake_w.send(b"x")
        self._thread.join(TIMEOUT_S)
        for sock in (self.listener, self._wake_r, self._wake_w, *self._peers):
            sock.close()
        self._selector.close()

    def _drop(self, sock: socket.socket) -> None:
        other = self._peers.pop(sock, None)
        for each in (sock, other):
            if each is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(each)
                each.close()
                self._peers.pop(each, None)

    def _run(self) -> None:
        while not self._stop.is_set():
            for key, _mask in self._selector.select(timeout=1.0):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._wake_r:
                    sock.recv(64)
                elif sock is self.listener:
                    with contextlib.suppress(BlockingIOError):
                        client, _ = self.listener.accept()
                        if self.down.is_set():
                            client.close()
                            continue
                        upstream = socket.create_connection(self.target)
                        for one, two in ((client, upstream), (upstream, client)):
                            self._peers[one] = two
                            self._selector.register(one, selectors.EVENT_READ, None)
                elif sock in self._peers:
                    try:
                        data = sock.recv(65536)
                        if data:
                            self._peers[sock].sendall(data)
                            continue
                    except OSError:
                        pass
                    self._drop(sock)
            if self._cut.is_set():
                self._cut.clear()
                for sock in list(self._peers):
                    self._drop(sock)


def hold_a_deal(studio: ConsoleStudio, hand: DealerHand, table: str) -> dict[str, Any]:
    """A round opened on ``table`` and held in ``DEALING`` at its first card; its state."""
    hand.hold()
    studio.play(table, 1)
    wait_until(lambda: hand.wanted > 0, TIMEOUT_S, f"the dealer about to deal on {table}")
    return studio.wait_state(
        table,
        lambda s, _f: s["phase"] == "DEALING" and s["round"] is not None,
        "dealing a round",
    )


def paused(studio: ConsoleStudio, table: str, reason: str, need: str = "") -> dict[str, Any]:
    """Wait until ``table`` is paused for ``reason`` with a need that says ``need``."""
    try:
        return studio.wait_state(
            table,
            lambda s, _f: (
                s["phase"] == "PAUSED"
                and s["pause"]["reason"] == reason
                and (not need or any(need in n for n in s["pause"]["needs"]))
            ),
            f"paused ({reason}, needing {need!r})",
        )
    except AssertionError as failure:
        raise AssertionError(f"{failure}; the table's state: {studio.state(table)}") from None


def next_event(studio: ConsoleStudio, table: str, kind: str, after: int) -> dict[str, Any]:
    """The table's first ``kind`` event after seq ``after`` (waiting for it)."""

    def found() -> dict[str, Any] | None:
        events = [e for e in studio.events(table) if e["type"] == kind and e["seq"] > after]
        return events[0] if events else None

    return wait_until(found, TIMEOUT_S, f"a {kind} event on {table} after #{after}")


def last_seq(studio: ConsoleStudio, table: str) -> int:
    events = studio.events(table)
    return events[-1]["seq"] if events else 0


def console_has_round(visit: Visit, studio: ConsoleStudio, table: str, round_id: int) -> None:
    """Wait until the console's feed holds the round to its end (its events come a moment
    after the state that ended it, on a loaded machine)."""

    def ended() -> bool:
        answer = visit.page.request.get(f"{studio.url}/api/tables/{table}/rounds/{round_id}")
        if answer.status != 200:
            return False
        kinds = [event["type"] for event in answer.json()["events"]]
        return bool(kinds) and kinds[-1] in ("round_settled", "round_voided")

    wait_until(ended, TIMEOUT_S, f"the console holding round {round_id} of {table} to its end")


def commands_by(table: ConsoleTable, account: str) -> list[dict[str, Any]]:
    """The supervisor commands the table journaled under ``account``'s name."""
    return [
        row
        for row in table.journal_rows("SupervisorCommanded")
        if row["command_id"].split("/")[0] == account
    ]


def choices(visit: Visit, table: str) -> list[str]:
    """The resolutions the pause queue offers for ``table`` (their test ids)."""
    buttons = visit.queue_item(table).locator(f"{by_id('queue-choices')} button")
    return [buttons.nth(i).get_attribute("data-testid") for i in range(buttons.count())]


def typed_form(card: str) -> str:
    """A card as a person types it: lower case, 10 for a ten ("th" -> "10h", "KS" -> "ks")."""
    rank, suit = card[0], card[1]
    return ("10" if rank == "T" else rank.lower()) + suit.lower()


@pytest.fixture
def studio(console_studio: ConsoleStudio) -> ConsoleStudio:
    return console_studio


# --- the tests ---------------------------------------------------------------------------------


def test_the_wall_shows_both_tables_and_a_pause_from_it_pauses_only_that_table(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    page = alice.page
    for table, game in (("t1", "baccarat"), ("t2", "blackjack-classic")):
        tile = alice.tile(table)
        expect(tile).to_have_attribute("data-status", "running")
        expect(tile.locator(by_id("tile-status"))).to_have_text("RUNNING")
        expect(tile.locator(by_id("tile-game"))).to_have_attribute("data-game", game)
        expect(tile.locator(by_id("tile-game"))).to_contain_text(catalogue("en")[f"game.{game}"])
        expect(tile.locator(by_id("tile-phase"))).to_have_text("Between rounds")
        expect(tile.locator(by_id("tile-shoe"))).to_contain_text("shoe 1")
        expect(tile.locator(by_id("device-shoe"))).to_contain_text("shoe online")
        # The devices at a glance, in the tile's head: no camera is fitted in this studio.
        head = tile.locator(by_id("tile-head"))
        expect(head.locator(by_id("device-shoe"))).to_have_attribute("data-health", "online")
        expect(head.locator(by_id("device-camera"))).to_have_attribute("data-health", "none")
        expect(head.locator(by_id("device-camera"))).to_have_text("no camera")
        expect(tile.locator(by_id("tile-age"))).to_contain_text("last message")
    expect(page.locator(by_id("session-role"))).to_have_text("supervisor")
    expect(page.locator(by_id("queue-empty"))).to_be_visible()
    # The wall's order is the server's one list, sent with the tables: the page sorts every
    # status as the server does (unknown last, after running).
    served = page.evaluate("() => fetch('/api/tables').then((answer) => answer.json())")
    assert served["order"] == list(STATUS_ORDER), served["order"]
    mixed = [
        {"table": table, "status": status}
        for table, status in zip(
            [f"t{n}" for n in range(2 * len(STATUS_ORDER), 0, -1)], STATUS_ORDER * 2, strict=True
        )
    ]
    # The camera's words, from what a state says of it (no table here has a camera).
    for online, words in ((True, "reading"), (False, "offline"), (None, "none")):
        health = page.evaluate(
            "(online) => window.livetableConsole.health({devices: "
            "{shoe_online: true, camera_online: online}}, false)",
            online,
        )
        assert health == {"shoe": "online", "camera": words}, (online, health)
    gone = page.evaluate(
        "() => window.livetableConsole.health({devices: {shoe_online: true}}, true)"
    )
    assert gone == {"shoe": "unknown", "camera": "unknown"}, gone
    on_page = page.evaluate("(tiles) => window.livetableConsole.wallOrder(tiles)", mixed)
    assert [tile["table"] for tile in on_page] == [
        tile["table"] for tile in urgency_order(mixed)
    ], on_page
    # Buttons the state does not allow are disabled and say why.
    cancel = alice.tile("t1").locator(by_id("action-cancel"))
    expect(cancel).to_be_disabled()
    expect(cancel).to_have_attribute("title", "no round is in play")

    # Opt in to the beep on a new pause.
    page.check(by_id("sound-toggle"))

    # Controls a change does not touch stay the same elements across redraws (a click in
    # progress is never lost): t2's pause button, t1's history button.
    kept = [
        alice.tile("t2").locator(by_id("action-pause")).element_handle(),
        alice.tile("t1").locator(by_id("action-history")).element_handle(),
    ]

    # Pause t1 from the page, with a reason that looks like markup (shown as text).
    before_t2 = last_seq(studio, "t2")
    alice.tile("t1").locator(by_id("action-pause")).click()
    dialog = page.locator(by_id("confirm-dialog"))
    expect(dialog).to_be_visible()
    expect(dialog.locator(by_id("confirm-title"))).to_contain_text("t1")
    # A pause needs a reason: an empty one is not sent.
    dialog.locator(by_id("confirm-ok")).click()
    expect(dialog.locator(by_id("confirm-error"))).to_be_visible()
    dialog.locator(by_id("confirm-reason")).fill("spilled <b>drink</b>")
    dialog.locator(by_id("confirm-ok")).click()
    expect(dialog).to_be_hidden()

    # On MQTT: t1 is paused by alice, for that reason.
    state = paused(studio, "t1", "supervisor")
    assert state["pause"]["by"] == "alice", state["pause"]
    assert "spilled <b>drink</b>" in state["pause"]["message"], state["pause"]
    # On the page: t1's tile says PAUSED (colour and word), with reason, message, since, by.
    tile = alice.tile("t1")
    expect(tile).to_have_attribute("data-status", "paused")
    expect(tile.locator(by_id("tile-status"))).to_have_text("PAUSED")
    expect(tile.locator(by_id("tile-pause"))).to_have_attribute("data-reason", "supervisor")
    expect(tile.locator(by_id("pause-message"))).to_contain_text("spilled <b>drink</b>")
    expect(tile.locator(by_id("pause-by"))).to_have_text("alice")
    expect(tile.locator(by_id("pause-since"))).not_to_be_empty()
    assert tile.locator("b").count() == 0, "the table's text was parsed as HTML"
    answer = tile.locator(by_id("answer"))
    expect(answer).to_have_attribute("data-ok", "true")
    expect(answer).to_contain_text("t1 Pause: done")
    # Most urgent first: the paused table leads the wall.
    expect(page.locator(f"{by_id('wall')} > article").first).to_have_attribute("data-table", "t1")
    # The queue offers exactly a plain resume.
    expect(alice.queue_item("t1")).to_be_visible()
    assert choices(alice, "t1") == ["resolve-resume"]
    expect(page.locator("body")).to_have_attribute("data-beeps", "1")
    assert [handle.evaluate("(element) => element.isConnected") for handle in kept] == [
        True,
        True,
    ], "a redraw replaced a control it did not change"

    # t2 was not touched, and plays on: a round opened and settled after t1's pause.
    studio.play("t2", 1)
    next_event(studio, "t2", "round_settled", after=before_t2)
    assert studio.state("t2")["pause"] is None  # type: ignore[index]
    expect(alice.tile("t2")).to_have_attribute("data-status", "running")
    screens.shoot(page, "wall-running-and-paused", full_page=True)

    # The journals: t1 has alice's pause under her name; t2 has no command of hers.
    [pause_row] = commands_by(studio.tables["t1"], "alice")
    assert (pause_row["command"], pause_row["role"]) == ("pause", "supervisor"), pause_row
    assert commands_by(studio.tables["t2"], "alice") == []

    # A plain resume, by its keyboard shortcut, resolves it.
    before = last_seq(studio, "t1")
    page.keyboard.press("r")
    resumed = next_event(studio, "t1", "table_resumed", after=before)
    assert (resumed["data"]["by"], resumed["data"]["resolution"]) == ("alice", ""), resumed
    studio.wait_state("t1", lambda s, _f: s["phase"] == "SHOE_READY", "resumed")
    expect(alice.tile("t1")).to_have_attribute("data-status", "running")
    expect(alice.queue_item("t1")).to_have_attribute("data-state", "resolved")
    expect(alice.queue_item("t1").locator(by_id("answer"))).to_contain_text("t1 Resume: done")

    # The help overlay documents the shortcuts.
    page.keyboard.press("?")
    expect(page.locator(by_id("help-overlay"))).to_be_visible()
    expect(page.locator(by_id("help-keys"))).to_contain_text("accept")
    page.keyboard.press("Escape")
    expect(page.locator(by_id("help-overlay"))).to_be_hidden()

    # On a tablet: the wall fits the screen's width, nothing scrolls sideways.
    page.set_viewport_size(TABLET)
    expect(alice.tile("t2")).to_be_visible()
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= TABLET["width"], f"the page is {width} px wide on a 768 px tablet"
    screens.shoot(page, "tablet", full_page=True)
    alice.check_clean()


def test_accept_and_burn_resolve_the_cards_drawn_out_of_turn(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    hand = DealerHand(studio.tables["t1"])
    alice = sign_in(browser, studio, "alice")
    page = alice.page

    # Between rounds: the dealer draws a card; the queue offers accept and burn.
    studio.draw_out_of_turn("t1")
    item = alice.queue_item("t1")
    expect(item).to_have_attribute("data-state", "paused")
    expect(item).to_have_attribute("data-reason", "card_out_of_turn")
    # Plain words on screen: the table's message, never the reason code nor raw JSON.
    expect(item.locator(by_id("queue-message"))).not_to_be_empty()
    alice.tile("t1").locator(by_id("tile-recent")).locator("summary").click()
    shown = page.locator("body").inner_text()
    assert "card_out_of_turn" not in shown and '{"' not in shown, shown
    expect(item.locator(by_id("queue-needs"))).to_contain_text("Accept or burn the 1 card(s)")
    assert choices(alice, "t1") == ["resolve-accept", "resolve-burn"]
    screens.shoot(page, "pause-queue-out-of-turn")
    # Accept is not what the table can do between rounds (no card is expected): it is shown
    # disabled, saying why, and its key sends nothing (the journal below has no accept).
    accept = item.locator(by_id("resolve-accept"))
    expect(accept).to_be_disabled()
    expect(accept).to_have_attribute("title", re.compile("no card is expected now: burn it"))
    expect(item.locator(by_id("resolve-burn"))).to_be_enabled()
    page.keyboard.press("a")
    expect(item.locator(by_id("answer"))).to_have_text("")
    assert studio.state("t1")["phase"] == "PAUSED"  # type: ignore[index]
    before = last_seq(studio, "t1")
    item.locator(by_id("resolve-burn")).click()
    burned = next_event(studio, "t1", "cards_burned", after=before)
    assert burned["data"]["count"] == 1
    resumed = next_event(studio, "t1", "table_resumed", after=before)
    assert (resumed["data"]["resolution"], resumed["data"]["by"]) == ("burn", "alice")
    expect(alice.tile("t1")).to_have_attribute("data-status", "running")

    # In a deal: alice pauses the table just before the dealer draws; the card comes while
    # it is paused and is held; accept deals it where the round expects it.
    dealing = hold_a_deal(studio, hand, "t1")
    round_id = dealing["round"]["id"]
    position = dealing["awaiting"]["position"]
    alice.tile("t1").locator(by_id("action-pause")).click()
    page.locator(by_id("confirm-reason")).fill("checking the shoe")
    page.locator(by_id("confirm-ok")).click()
    paused(studio, "t1", "supervisor")
    emitted = hand.draw_wanted()
    # The pause is the held card's now: its reason says so.
    paused(studio, "t1", "card_out_of_turn", need="accept or burn the 1 card(s)")
    expect(item.locator(by_id("queue-needs"))).to_contain_text("Accept or burn")
    assert choices(alice, "t1") == ["resolve-accept", "resolve-burn"]
    before = last_seq(studio, "t1")
    hand.go()
    # Both pauses are listed, each with who set it.
    listed = alice.tile("t1").locator(by_id("pauses-item"))
    expect(listed).to_have_count(2)
    expect(listed.first.locator(by_id("pauses-by"))).to_have_text("paused by alice")
    expect(listed.last.locator(by_id("pauses-by"))).to_have_text("the table (an anomaly)")
    page.keyboard.press("a")  # the shortcut for accept, on the selected (only) pause
    dealt = next_event(studio, "t1", "card_dealt", after=before)
    assert (dealt["data"]["round_id"], dealt["data"]["position"]) == (round_id, position)
    assert dealt["data"]["card"] == emitted.card, (dealt, emitted)
    # The card is dealt within alice's pause, which holds: the queue names whose pause a
    # plain resume lifts.
    paused(studio, "t1", "supervisor")
    expect(alice.tile("t1").locator(by_id("pause-by"))).to_have_text("alice")
    expect(item.locator(by_id("queue-needs"))).to_contain_text("lifts the pause of alice")
    assert choices(alice, "t1") == ["resolve-resume"]
    page.keyboard.press("r")
    resumed = next_event(studio, "t1", "table_resumed", after=before)
    assert (resumed["data"]["resolution"], resumed["data"]["by"]) == ("", "alice")
    assert resumed["data"]["reason"] == "supervisor"
    # The round plays on to its result.
    settled = next_event(studio, "t1", "round_settled", after=before)
    assert settled["data"]["round_id"] == round_id
    # The round's history: the pause, the held card accepted (entered by the supervisor),
    # the result.
    console_has_round(alice, studio, "t1", round_id)
    alice.tile("t1").locator(by_id("action-history")).click()
    history = page.locator(by_id("history-dialog"))
    expect(history.locator(by_id("history-round"))).to_have_value(str(round_id))
    rows = history.locator(by_id("history-row"))
    expect(rows.last).to_have_attribute("data-type", "round_settled")
    kinds = [rows.nth(i).get_attribute("data-type") for i in range(rows.count())]
    assert kinds[0] == "round_opened" and "table_paused" in kinds, kinds
    assert kinds.index("table_paused") < kinds.index("table_resumed"), kinds
    accepted = history.locator(f'{by_id("history-row")}[data-seq="{dealt["seq"]}"]')
    expect(accepted).to_contain_text("from a supervisor")
    expect(accepted.locator(f'[data-card="{emitted.card}"]')).to_be_visible()
    screens.shoot(page, "round-history-with-a-pause")
    assert raw_codes_shown(page) == [], "a raw code in the history of a paused round"
    history.locator(by_id("history-close")).click()
    # In Spanish, on its printable page: the pause and how it was resolved in its words.
    sheet = page.context.new_page()
    sheet.goto(f"{studio.url}/history?table=t1&round={round_id}")
    in_language(sheet, "es")
    sheet.reload()
    es = catalogue("es")
    paused_row = sheet.locator(f"{by_id('history-row')}[data-type=table_paused]").first
    expect(paused_row.locator("td").nth(2)).to_have_text(es["event.table_paused"])
    accepted_es = sheet.locator(f'{by_id("history-row")}[data-seq="{dealt["seq"]}"]')
    expect(accepted_es).to_contain_text(es["source.supervisor"])
    assert raw_codes_shown(sheet) == [], "a raw code in the Spanish history of a paused round"
    in_language(sheet, "en")  # this browser's wall stays in English
    sheet.close()
    # Under alice's name, in the order she acted: the refused accept is journaled too.
    done = [(r["command"], r["resolution"]) for r in commands_by(studio.tables["t1"], "alice")]
    assert done == [
        ("resume", "burn"),
        ("pause", ""),
        ("resume", "accept"),
        ("resume", ""),
    ]
    alice.check_clean()


def test_a_one_key_action_waits_out_its_undo_window_and_esc_or_undo_sends_nothing(
    console_studio_with: Any, browser: Any, screens: Screens
) -> None:
    """The console's default window (3 s): a burn by its key says so and waits; Esc, or the
    Undo button, takes it back (the table's state and journal show nothing sent); let be,
    it is sent when the window ends."""
    from playwright.sync_api import expect

    studio: ConsoleStudio = console_studio_with(undo_s=None)
    alice = sign_in(browser, studio, "alice")
    page = alice.page
    studio.draw_out_of_turn("t1")
    item = alice.queue_item("t1")
    burn = item.locator(by_id("resolve-burn"))
    expect(burn).to_be_enabled()
    waiting = item.locator(by_id("undo"))
    before = last_seq(studio, "t1")

    # The key: "Burning in 3 s - Undo (Esc)", and the table still paused meanwhile.
    page.keyboard.press("b")
    expect(waiting).to_have_text(re.compile(r"^Burning in [123] s \u2014 Undo \(Esc\)$"))
    assert studio.state("t1")["phase"] == "PAUSED"  # type: ignore[index]
    expect(burn).to_be_disabled()
    screens.shoot(page, "undo-window")
    assert axe_violations(page, "the undo window", by_id("pause-queue")) == []
    page.keyboard.press("Escape")
    expect(waiting).to_have_count(0)
    expect(item.locator(by_id("answer"))).to_contain_text("undone, nothing sent")
    # The button, then its Undo.
    burn.click()
    expect(waiting).to_be_visible()
    waiting.locator(by_id("undo-button")).click()
    expect(waiting).to_have_count(0)
    # Both windows over (3 s each, and a margin): nothing reached the table.
    page.wait_for_timeout(4_500)
    assert studio.state("t1")["phase"] == "PAUSED"  # type: ignore[index]
    assert commands_by(studio.tables["t1"], "alice") == []
    assert [e["type"] for e in studio.events("t1") if e["seq"] > before] == []

    # Let be: sent when the window ends, not before.
    pressed = time.time()
    page.keyboard.press("b")
    expect(waiting).to_be_visible()
    resumed = next_event(studio, "t1", "table_resumed", after=before)
    assert (resumed["data"]["resolution"], resumed["data"]["by"]) == ("burn", "alice")
    [command] = commands_by(studio.tables["t1"], "alice")
    assert command["command"] == "resume", command
    assert resumed["at"] - pressed >= 2.9, (pressed, resumed)
    expect(alice.tile("t1")).to_have_attribute("data-status", "running")
    expect(waiting).to_have_count(0)
    alice.check_clean()


def test_enter_card_resolves_a_misread_with_the_card_typed_in_the_picker(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    hand = DealerHand(studio.tables["t1"])
    alice = sign_in(browser, studio, "alice")
    page = alice.page
    dealing = hold_a_deal(studio, hand, "t1")
    round_id, position = dealing["round"]["id"], dealing["awaiting"]["position"]
    # The shoe cannot read the card the dealer draws (and no camera reads it either).
    emitted = hand.draw_wanted(FaultPlan(unreadable_rate=1.0))
    assert emitted.event == "misread" and emitted.card is not None, emitted
    paused(studio, "t1", "misread", need="enter_card for the unread card")
    item = alice.queue_item("t1")
    expect(item.locator(by_id("queue-needs"))).to_contain_text("Enter the unread card")
    assert choices(alice, "t1") == ["resolve-enter-card"]

    item.locator(by_id("resolve-enter-card")).click()
    picker = page.locator(by_id("card-picker"))
    expect(picker).to_be_visible()
    # Only the faces still possible in this shoe, as the console says.
    faces = page.request.get(f"{studio.url}/api/tables/t1/faces").json()
    offered = picker.locator(f"{by_id('card-faces')} button")
    expect(offered).to_have_count(len(faces["possible"]))
    offered_faces = {offered.nth(i).get_attribute("data-card") for i in range(offered.count())}
    assert offered_faces == set(faces["possible"])
    card_field = picker.locator(by_id("card-input"))
    submit = picker.locator(by_id("card-submit"))
    # Typing: "KH", "10h", "kh" are cards; "1x" is not.
    for typed, card in (("KH", "KH"), ("10h", "TH"), ("kh", "KH"), (" 10 S ", "TS")):
        card_field.fill(typed)
        if card in faces["possible"]:
            expect(submit).to_be_enabled()
            expect(submit).to_have_attribute("data-card", card)
        else:  # its eight copies were dealt: the picker says so and will not send it
            expect(submit).to_be_disabled()
            expect(picker.locator(by_id("card-parse"))).to_contain_text("cannot be in this shoe")
    card_field.fill("1x")
    expect(submit).to_be_disabled()
    expect(picker.locator(by_id("card-parse"))).to_contain_text("not a card")
    # The card on the felt, typed as a person types it.
    card_field.fill(typed_form(emitted.card))
    expect(submit).to_have_attribute("data-card", emitted.card)
    screens.shoot(page, "card-picker")
    assert raw_codes_shown(page) == [], "a raw code in the card picker"
    before = last_seq(studio, "t1")
    hand.go()
    card_field.press("Enter")
    expect(picker).to_be_hidden()
    dealt = next_event(studio, "t1", "card_dealt", after=before)
    assert dealt["data"] == {
        "round_id": round_id,
        "position": position,
        "face_down": False,
        "source": "supervisor",
        "card": emitted.card,
    }, dealt
    resumed = next_event(studio, "t1", "table_resumed", after=before)
    assert (resumed["data"]["resolution"], resumed["data"]["by"]) == ("enter_card", "alice")
    next_event(studio, "t1", "round_settled", after=before)
    [entered] = [r for r in commands_by(studio.tables["t1"], "alice") if r["command"] == "resume"]
    assert (entered["resolution"], entered["card"]) == ("enter_card", emitted.card), entered
    alice.check_clean()


def test_an_outage_is_resolved_by_entering_the_card_drawn_then_no_cards_drawn(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    table = studio.tables["t1"]
    hand = DealerHand(table)
    alice = sign_in(browser, studio, "alice")
    page = alice.page
    dealing = hold_a_deal(studio, hand, "t1")
    round_id, position = dealing["round"]["id"], dealing["awaiting"]["position"]
    # The shoe's cable comes out in the middle of the deal; the dealer draws meanwhile.
    table.shoe.unplug()
    paused(studio, "t1", "shoe_offline")
    expect(alice.tile("t1").locator(by_id("device-shoe"))).to_contain_text("shoe offline")
    expect(alice.tile("t1").locator(by_id("device-shoe"))).to_have_attribute(
        "data-health", "offline"
    )
    # The table refuses every resume while its shoe is offline: none is offered, each says why.
    offered = alice.queue_item("t1").locator(f"{by_id('queue-choices')} button")
    expect(offered.first).to_be_visible()
    for i in range(offered.count()):
        expect(offered.nth(i)).to_be_disabled()
        expect(offered.nth(i)).to_have_attribute(
            "title", re.compile("the shoe is offline: bring it back first")
        )
    emitted = hand.draw_wanted()
    assert emitted.card is not None
    table.shoe.replug()
    state = studio.wait_state(
        "t1", lambda s, _f: s["devices"]["shoe_online"] and s["phase"] == "PAUSED", "shoe back"
    )
    assert state["pause"]["offline_gap"], state["pause"]
    item = alice.queue_item("t1")
    expect(item.locator(by_id("queue-needs"))).to_contain_text("no cards drawn")
    assert choices(alice, "t1") == ["resolve-no-cards-drawn", "resolve-enter-card"]
    screens.shoot(page, "pause-queue-outage")

    # The card that left the shoe while it was offline, entered by typing (upper case).
    before = last_seq(studio, "t1")
    page.keyboard.press("e")
    picker = page.locator(by_id("card-picker"))
    expect(picker).to_be_visible()
    picker.locator(by_id("card-input")).fill(
        emitted.card.replace("T", "10") if emitted.card[0] == "T" else emitted.card
    )
    picker.locator(by_id("card-submit")).click()
    dealt = next_event(studio, "t1", "card_dealt", after=before)
    assert (dealt["data"]["position"], dealt["data"]["card"], dealt["data"]["source"]) == (
        position,
        emitted.card,
        "supervisor",
    )
    expect(item.locator(by_id("answer"))).to_contain_text("stays paused")
    # Still paused, for the same outage: confirm no other card left the shoe.
    paused(studio, "t1", "shoe_offline", need="no_cards_drawn")
    expect(item).to_have_attribute("data-state", "paused")
    hand.go()
    item.locator(by_id("resolve-no-cards-drawn")).click()
    resumed = next_event(studio, "t1", "table_resumed", after=before)
    assert (resumed["data"]["resolution"], resumed["data"]["by"]) == ("no_cards_drawn", "alice")
    settled = next_event(studio, "t1", "round_settled", after=before)
    assert settled["data"]["round_id"] == round_id
    resolutions = [r["resolution"] for r in commands_by(table, "alice")]
    assert resolutions == ["enter_card", "no_cards_drawn"], resolutions
    alice.check_clean()


def test_cancel_voids_the_round_after_its_confirmation_and_its_history_shows_it(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    hand = DealerHand(studio.tables["t1"])
    alice = sign_in(browser, studio, "alice")
    page = alice.page
    dealing = hold_a_deal(studio, hand, "t1")
    round_id = dealing["round"]["id"]
    cancel = alice.tile("t1").locator(by_id("action-cancel"))
    expect(cancel).to_be_enabled()
    expect(cancel).to_contain_text(f"round {round_id}")

    # The confirmation names the round and says what cancelling does; Back sends nothing.
    cancel.click()
    dialog = page.locator(by_id("confirm-dialog"))
    text = dialog.locator(by_id("confirm-text"))
    expect(dialog.locator(by_id("confirm-title"))).to_contain_text(f"round {round_id}")
    expect(text).to_contain_text(f"Round {round_id} is void")
    expect(text).to_contain_text("Every bet in it is refunded")
    expect(text).to_contain_text("cards dealt in it are discarded")
    screens.shoot(page, "cancel-confirmation")
    dialog.locator(by_id("confirm-back")).click()
    expect(dialog).to_be_hidden()
    expect(alice.tile("t1").locator(by_id("answer"))).to_have_text("")
    assert commands_by(studio.tables["t1"], "alice") == []

    before = last_seq(studio, "t1")
    cancel.click()
    dialog.locator(by_id("confirm-reason")).fill("dispute at the table")
    dialog.locator(by_id("confirm-ok")).click()
    voided = next_event(studio, "t1", "round_voided", after=before)
    assert (voided["data"]["round_id"], voided["data"]["by"]) == (round_id, "alice"), voided
    assert voided["data"]["refund"] == "all" and voided["data"]["reason"] == "dispute at the table"
    studio.wait_state("t1", lambda s, _f: s["round"] is None, "the round voided")
    hand.go()  # the card the dealer was about to draw stays in the shoe
    [only] = [r for r in commands_by(studio.tables["t1"], "alice")]
    assert only["command"] == "cancel", only
    expect(alice.tile("t1").locator(by_id("answer"))).to_have_attribute("data-ok", "true")
    expect(alice.tile("t1").locator(by_id("tile-phase"))).to_have_text("Between rounds")

    # The round's history, from round_opened to round_voided.
    console_has_round(alice, studio, "t1", round_id)
    alice.tile("t1").locator(by_id("action-history")).click()
    history = page.locator(by_id("history-dialog"))
    expect(history.locator(by_id("history-round"))).to_have_value(str(round_id))
    rows = history.locator(by_id("history-row"))
    expect(rows.last).to_have_attribute("data-type", "round_voided")
    expect(rows.first).to_have_attribute("data-type", "round_opened")
    expect(history.locator(by_id("history-title"))).to_contain_text("VOID")
    screens.shoot(page, "round-history")
    assert raw_codes_shown(page) == [], "a raw code in the history of a cancelled round"
    printable = history.locator(by_id("history-printable")).get_attribute("href")
    assert printable == f"/history?table=t1&round={round_id}", printable
    history.locator(by_id("history-close")).click()

    # The printable page of that round: the same rows; printed, without the controls.
    sheet = alice.page.context.new_page()
    sheet.goto(f"{studio.url}{printable}")
    sheet_rows = sheet.locator(by_id("history-row"))
    expect(sheet_rows.last).to_have_attribute("data-type", "round_voided")
    expect(sheet_rows).to_have_count(rows.count())
    sheet.emulate_media(media="print")
    expect(sheet.locator(by_id("history-print"))).to_be_hidden()
    screens.shoot(sheet, "round-history-printed", full_page=True)
    assert raw_codes_shown(sheet) == [], "a raw code on the printable history"

    # In Spanish, chosen on the wall: the dialog and the printable page in its words.
    es = catalogue("es")
    page.locator(by_id("language")).select_option("es")
    page.wait_for_load_state()
    expect(page.locator("body")).to_have_attribute("data-stream", "up")
    alice.tile("t1").locator(by_id("action-history")).click()
    expect(rows.last).to_have_attribute("data-type", "round_voided")
    expect(history.locator(by_id("history-title"))).to_contain_text(es["history.void"])
    expect(rows.last.locator("td").nth(2)).to_have_text(es["event.round_voided"])
    screens.shoot(page, "round-history-es")
    assert raw_codes_shown(page) == [], "a raw code in the Spanish history"
    history.locator(by_id("history-close")).click()
    sheet.reload()
    expect(sheet.locator("html")).to_have_attribute("lang", "es")
    expect(sheet_rows.first.locator("td").nth(2)).to_have_text(es["event.round_opened"])
    expect(sheet.locator(by_id("history-back"))).to_have_text(es["history.back"])
    assert raw_codes_shown(sheet) == [], "a raw code on the Spanish printable history"

    alice.check_clean()


def test_a_viewer_sees_no_actions_and_a_request_forged_from_its_page_is_refused(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    studio.pause("t1", reason="for the viewer to see", by="bob")
    viewer = sign_in(browser, studio, "viewer")
    page = viewer.page
    expect(page.locator(by_id("session-role"))).to_have_text("viewer")
    expect(viewer.tile("t1")).to_have_attribute("data-status", "paused")
    expect(viewer.tile("t1").locator(by_id("pause-by"))).to_have_text("bob")
    expect(viewer.tile("t2")).to_have_attribute("data-status", "running")
    expect(viewer.queue_item("t1")).to_be_visible()
    # No action anywhere: no tile actions, no resolution in the queue.
    for selector in (
        by_id("tile-actions"),
        by_id("queue-choices"),
        by_id("action-pause"),
        by_id("action-cancel"),
        by_id("resolve-resume"),
    ):
        assert page.locator(selector).count() == 0, f"a viewer sees {selector}"
    # A key does nothing either.
    page.keyboard.press("r")
    screens.shoot(page, "viewer-wall")

    # A request forged from the viewer's own page, with its own CSRF token: refused.
    forged = page.evaluate(
        """async () => {
            const session = await (await fetch("/api/session")).json();
            const answer = await fetch("/api/tables/t1/request", {
                method: "POST",
                headers: {"Content-Type": "application/json", "X-CSRF-Token": session.csrf},
                body: JSON.stringify({command: "resume", args: {}}),
            });
            return {status: answer.status, body: await answer.json()};
        }"""
    )
    assert forged["status"] == 403, forged
    assert forged["body"]["code"] == "forbidden", forged
    # Nothing reached the table: bob's pause is the only command it journaled, and it is
    # still paused (a resume by alice, sent after, is the first to be taken).
    alice = studio.supervisor("alice")
    try:
        assert alice.request("t1", "resume", timeout=TIMEOUT_S)["ok"]
    finally:
        alice.close()
    rows = studio.tables["t1"].journal_rows("SupervisorCommanded")
    assert [(r["command_id"].split("/")[0], r["command"]) for r in rows] == [
        ("bob", "new_shoe"),
        ("bob", "pause"),
        ("alice", "resume"),
    ], rows
    viewer.check_clean()


def wall_order(visit: Visit) -> list[str]:
    """The tables of the wall, as the page shows them."""
    return visit.page.eval_on_selector_all(
        f"{by_id('wall')} > article", "(tiles) => tiles.map((tile) => tile.dataset.table)"
    )


def test_the_wall_does_not_reorder_under_the_pointer_nor_around_the_focus(
    studio: ConsoleStudio, browser: Any
) -> None:
    """A tile that moves as the supervisor reaches for it takes the click meant for another:
    while the pointer is over the wall, or the keyboard focus is in a tile, the new order
    waits, and comes when they leave."""
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    page = alice.page
    expect(alice.tile("t2")).to_have_attribute("data-status", "running")
    assert wall_order(alice) == ["t1", "t2"]
    # The pointer rests on t2; t2 pauses: most urgent, it would lead the wall.
    alice.tile("t2").locator(by_id("tile-shoe")).hover()
    studio.pause("t2", "spill under the pointer")
    expect(alice.tile("t2")).to_have_attribute("data-status", "paused")
    expect(page.locator(by_id("wall"))).to_have_attribute("data-order", "held")
    assert wall_order(alice) == ["t1", "t2"], "the wall moved under the pointer"
    # The pointer leaves the wall (to the page's header): the new order comes.
    page.mouse.move(5, 5)
    expect(page.locator(f"{by_id('wall')} > article").first).to_have_attribute("data-table", "t2")
    expect(page.locator(by_id("wall"))).to_have_attribute("data-order", "sorted")
    # The keyboard's focus in t1's tile holds the order the same way.
    alice.tile("t1").locator(by_id("action-history")).focus()
    client = studio.supervisor("bob")
    try:
        assert client.request("t2", "resume", timeout=TIMEOUT_S)["ok"]
    finally:
        client.close()
    expect(alice.tile("t2")).to_have_attribute("data-status", "running")
    expect(page.locator(by_id("wall"))).to_have_attribute("data-order", "held")
    assert wall_order(alice) == ["t2", "t1"], "the wall moved around the focus"
    page.evaluate("() => document.activeElement.blur()")
    expect(page.locator(f"{by_id('wall')} > article").first).to_have_attribute("data-table", "t1")
    assert wall_order(alice) == ["t1", "t2"]
    alice.check_clean()


HD = {"width": 1280, "height": 720}
FULL_HD = {"width": 1920, "height": 1080}


def test_three_pauses_fit_a_1280x720_screen_and_a_1920x1080_wall_uses_its_width(
    console_studio_with: Any, browser: Any, screens: Screens
) -> None:
    """A busy night on a small screen: three cards drawn out of turn at once, each pause and
    its buttons on screen without scrolling; on a large one, the tiles use the width."""
    from playwright.sync_api import expect

    tables = {"t1": "baccarat", "t2": "blackjack-classic", "t3": "baccarat"}
    studio: ConsoleStudio = console_studio_with(tables=tables)
    alice = sign_in(browser, studio, "alice", viewport=HD)
    page = alice.page
    for table in tables:
        studio.draw_out_of_turn(table)
    for table in tables:
        expect(alice.queue_item(table)).to_have_attribute("data-reason", "card_out_of_turn")
        expect(alice.queue_item(table).locator(by_id("resolve-burn"))).to_be_enabled()
    assert page.evaluate("() => window.scrollY") == 0
    for table in tables:
        for part in (
            alice.queue_item(table),
            alice.queue_item(table).locator(by_id("resolve-burn")),
        ):
            box = part.bounding_box()
            assert box is not None and box["y"] >= 0, (table, box)
            assert box["y"] + box["height"] <= HD["height"], (
                f"{table}'s pause is below the fold: {box}"
            )
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= HD["width"], f"the page is {width} px wide at 1280"
    screens.shoot(page, "three-pauses-1280x720")
    assert axe_violations(page, "three pauses at 1280x720") == []

    # 1920x1080: no column of the wall left empty, no third of the screen unused.
    page.set_viewport_size(FULL_HD)
    expect(alice.tile("t3")).to_be_visible()
    wall = page.locator(by_id("wall")).bounding_box()
    assert wall is not None
    boxes = [alice.tile(table).bounding_box() for table in tables]
    right = max(box["x"] + box["width"] for box in boxes)  # type: ignore[index]
    assert right >= wall["x"] + wall["width"] - 2, (
        f"the wall's right part is empty: {boxes}, {wall}"
    )
    assert FULL_HD["width"] - right < FULL_HD["width"] / 3, (right, boxes)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= FULL_HD["width"], f"the page is {width} px wide at 1920"
    screens.shoot(page, "three-pauses-1920x1080")
    alice.check_clean()


def test_open_round_is_offered_between_rounds_and_opens_one_under_her_name(
    studio: ConsoleStudio, browser: Any
) -> None:
    """A supervisor may open a round (the API's roles and the shipped ACL allow it): the
    tile offers it to a table idle between rounds, and says why not otherwise."""
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    button = alice.tile("t1").locator(by_id("action-open-round"))
    expect(button).to_be_enabled()
    # Enabled, it says what it does in the words of the API's one list (/api/commands).
    expect(button).to_have_attribute("title", "Open betting on the next round")
    before = last_seq(studio, "t1")
    button.click()
    opened = next_event(studio, "t1", "round_opened", after=before)
    [requested] = studio.tables["t1"].journal_rows("RoundRequested")
    assert requested["by"] == "alice", requested
    expect(alice.tile("t1").locator(by_id("answer"))).to_contain_text("t1 Open round: done")
    # While it plays: refused, saying why.
    expect(button).to_be_disabled()
    expect(button).to_have_attribute("title", re.compile("a round is in play"))
    settled = next_event(studio, "t1", "round_settled", after=before)
    assert settled["data"]["round_id"] == opened["data"]["round_id"]
    expect(button).to_be_enabled()
    # A paused table opens no round.
    studio.pause("t1")
    expect(button).to_be_disabled()
    expect(button).to_have_attribute("title", re.compile("paused"))
    # A viewer has no actions at all.
    viewer = sign_in(browser, studio, "viewer")
    expect(viewer.tile("t2")).to_be_visible()
    expect(viewer.tile("t2").locator(by_id("action-open-round"))).to_have_count(0)
    alice.check_clean()
    viewer.check_clean()


def test_a_killed_daemon_shows_its_tile_offline_within_2_s_and_the_other_stays_live(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    """...and a dead table is in the pause queue, announced as a pause is, until it is back."""
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    page = alice.page
    page.check(by_id("sound-toggle"))
    expect(alice.tile("t2")).to_have_attribute("data-status", "running")
    expect(page).to_have_title("livetable console")
    studio.tables["t2"].daemon.kill(signal.SIGKILL)
    # The requirement: OFFLINE on the wall within 2 s of the daemon's death.
    expect(alice.tile("t2")).to_have_attribute("data-status", "offline", timeout=2000)
    expect(alice.tile("t2").locator(by_id("tile-status"))).to_have_text("OFFLINE")
    expect(alice.tile("t2").locator(by_id("tile-offline"))).to_be_visible()
    for device in ("device-shoe", "device-camera"):
        expect(alice.tile("t2").locator(by_id(device))).to_have_attribute("data-health", "unknown")
    # A dead table is something for a supervisor to see to: it is in the pause queue, in
    # plain words, said in the live region, counted in the title, and it beeps.
    item = alice.queue_item("t2")
    expect(item).to_have_attribute("data-state", "not-answering", timeout=2000)
    not_answering = re.compile(r"Table t2 is not answering since \d\d:\d\d")
    expect(item.locator(by_id("queue-message"))).to_have_text(not_answering)
    expect(page.locator(by_id("announcer"))).to_contain_text(not_answering)
    expect(page).to_have_title("(1 not answering) livetable console")
    expect(page.locator("body")).to_have_attribute("data-beeps", "1")
    expect(page.locator(by_id("queue-empty"))).to_be_hidden()
    # Nothing to resolve from the queue: nothing would reach the table.
    assert choices(alice, "t2") == []
    for action in ("action-pause", "action-new-shoe"):
        button = alice.tile("t2").locator(by_id(action))
        expect(button).to_be_disabled()
        expect(button).to_have_attribute("title", re.compile("offline"))
    # t1 stays live: a round played on it shows on the wall.
    before = last_seq(studio, "t1")
    studio.play("t1", 1)
    settled = next_event(studio, "t1", "round_settled", after=before)
    expect(alice.tile("t1")).to_have_attribute("data-status", "running")
    expect(alice.tile("t1").locator(by_id("tile-shoe"))).to_contain_text(
        f"round {studio.state('t1')['shoe']['round_number']}"  # type: ignore[index]
    )
    assert settled["data"]["round_id"] >= 1
    screens.shoot(page, "wall-offline-table")
    # Back: the daemon started again, the table leaves the queue and the title.
    studio.tables["t2"].daemon.start()
    expect(alice.tile("t2")).to_have_attribute("data-status", "running")
    expect(alice.queue_item("t2")).to_have_count(0)
    expect(page.locator(by_id("queue-empty"))).to_be_visible()
    expect(page).to_have_title("livetable console")
    alice.check_clean()


def test_five_wrong_sign_ins_each_wait_longer(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    visit = open_page(browser, f"{studio.url}/signin")
    page = visit.page
    message = page.locator(by_id("signin-message"))

    @dataclass
    class Attempt:
        status: int
        retry_after: str | None
        sent_at: float
        answered_at: float

    def attempt(*, fresh: bool) -> Attempt:
        # The page a refusal leaves has the form again, the name kept: sending it from there
        # is the quickest next try (no page load between a failure and the check of its delay).
        if fresh:
            page.goto(f"{studio.url}/signin")
            page.fill(by_id("signin-username"), "alice")
        page.fill(by_id("signin-password"), "not-alice's-password")
        with page.expect_response(
            lambda response: response.url.endswith("/signin") and response.request.method == "POST"
        ) as answered:
            sent_at = time.monotonic()
            page.click(by_id("signin-submit"))
        response = answered.value
        return Attempt(
            response.status, response.headers.get("retry-after"), sent_at, time.monotonic()
        )

    def announced_delay() -> int:
        # A failure names the delay it earns: unlike a later Retry-After, it does not shrink
        # with the time the next try takes to arrive.
        found = re.search(r"[Ww]ait (\d+) s", message.inner_text())
        assert found, message.inner_text()
        return int(found.group(1))

    delays: list[int] = []
    waits: list[int] = []
    # The first real attempt: refused.
    failure = attempt(fresh=True)
    while True:
        assert failure.status == 401, failure.status
        delays.append(announced_delay())
        # Each failure waits longer than the one before (and the first at least a second).
        assert all(later > earlier for earlier, later in itertools.pairwise([0, *delays])), delays
        # Right after a failure, the next attempt must wait.
        refused = attempt(fresh=False)
        if refused.status == 401 and delays[-1] < 4:
            # A loaded machine took longer than a short delay to send it: taken, and so it is
            # a new failure, unless it came back before that delay could have passed since
            # the failure was counted (between that failure's request and its answer).
            assert refused.answered_at - failure.sent_at >= delays[-1], (
                f"an attempt {refused.answered_at - failure.sent_at:.2f} s after a failure "
                f"was taken although the failure named a {delays[-1]} s wait"
            )
            failure = refused
            continue
        assert refused.status == 429 and refused.retry_after is not None, refused
        waits.append(int(refused.retry_after))
        assert 1 <= waits[-1] <= delays[-1], (waits, delays)
        assert f"wait {refused.retry_after} s" in message.inner_text(), message.inner_text()
        if len(delays) == 5:
            break
        # The next real attempt, once the failure's delay has passed: taken, and refused.
        failure = wait_until(
            lambda: (found := attempt(fresh=True)).status != 429 and found,
            TIMEOUT_S + delays[-1],
            f"attempt {len(delays) + 1} taken",
            interval_s=0.2,
        )
    screens.shoot(page, "signin-throttled")
    assert studio.passwords["alice"] not in page.content()
    visit.check_clean()


def test_the_audit_lists_the_tables_entries_with_a_csv_download_link(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    page = alice.page
    studio.pause("t1", reason="for the audit", by="bob")
    listed = page.request.get(f"{studio.url}/api/tables/t1/audit")
    assert listed.status == 200, listed.text()
    entries = listed.json()["entries"]
    assert entries, "bob's new shoe and pause are in t1's audit"
    alice.tile("t1").locator(by_id("action-audit")).click()
    audit = page.locator(by_id("audit-dialog"))
    expect(audit.locator(by_id("audit-row"))).to_have_count(len(entries))
    expect(audit.locator(by_id("audit-content"))).to_contain_text("for the audit")
    csv_link = audit.locator(by_id("audit-csv"))
    expect(csv_link).to_have_attribute("href", "/api/tables/t1/audit.csv")
    expect(csv_link).to_have_attribute("download", "audit-t1.csv")
    screens.shoot(page, "audit")
    assert raw_codes_shown(page) == [], "a raw code in the audit"
    with page.expect_download() as downloading:
        csv_link.click()
    saved = screens.folder.parent / "audit-t1.csv"
    downloading.value.save_as(saved)
    lines = saved.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + len(entries), lines
    assert "for the audit" in "\n".join(lines)
    # In Spanish: the columns, the commands and the roles in its words.
    es = catalogue("es")
    page.locator(by_id("language")).select_option("es")
    page.wait_for_load_state()
    expect(page.locator("body")).to_have_attribute("data-stream", "up")
    alice.tile("t1").locator(by_id("action-audit")).click()
    expect(audit.locator(by_id("audit-row"))).to_have_count(len(entries))
    expect(audit.locator("th").first).to_have_text(es["audit.column_journal_seq"])
    expect(audit.locator(by_id("audit-content"))).to_contain_text(es["command.pause"])
    assert raw_codes_shown(page) == [], "a raw code in the Spanish audit"
    alice.check_clean()


def test_old_words_go_when_the_table_moves_on(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    """What the page said of a moment past does not stay as if it were now: the last
    action's answer goes when a new pause comes, a shoe at a table in AWAITING_SHUFFLE is not
    shown RUNNING, an offline table's devices are not "online", the audit is newest first."""
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    page = alice.page
    studio.pause("t1", reason="first pause", by="bob")
    item = alice.queue_item("t1")
    expect(item).to_have_attribute("data-state", "paused")
    page.keyboard.press("r")
    expect(item).to_have_attribute("data-state", "resolved")
    expect(item.locator(by_id("answer"))).to_have_attribute("data-ok", "true")
    # A while later (the answer is no new pause's cause), the table pauses again.
    page.wait_for_timeout(2500)
    studio.pause("t1", reason="second pause", by="bob")
    expect(item).to_have_attribute("data-state", "paused")
    expect(item.locator(by_id("queue-message"))).to_contain_text("second pause")
    expect(item.locator(by_id("answer"))).to_have_text("")
    expect(item.locator(by_id("answer"))).not_to_have_attribute("data-ok", re.compile("."))

    # The audit: newest first.
    alice.tile("t1").locator(by_id("action-audit")).click()
    audit = page.locator(by_id("audit-dialog"))
    rows = audit.locator(by_id("audit-row"))
    expect(rows.first).to_be_visible()
    seqs = [
        int(rows.nth(i).locator('[data-column="journal_seq"]').inner_text())
        for i in range(rows.count())
    ]
    assert len(seqs) >= 3 and seqs == sorted(seqs, reverse=True), seqs
    audit.locator(by_id("audit-close")).click()

    # t2's shoe ends: the table waits for a shuffle, and its badge says so, not RUNNING.
    client = studio.supervisor("bob")
    try:
        answer = client.request("t2", "end_shoe", timeout=TIMEOUT_S, reason="end of shift")
    finally:
        client.close()
    assert answer["ok"], answer
    tile = alice.tile("t2")
    expect(tile.locator(by_id("tile-phase"))).to_have_text("Awaiting a shuffle")
    badge = tile.locator(by_id("tile-status"))
    expect(badge).to_have_text("NO SHOE")
    expect(badge).not_to_have_class(re.compile("status-running"))
    screens.shoot(page, "no-shoe-badge")

    # t2's daemon dies: its last state stays, but nothing says its shoe is online.
    expect(tile.locator(by_id("device-shoe"))).to_contain_text("shoe online")
    studio.tables["t2"].daemon.kill(signal.SIGKILL)
    expect(tile).to_have_attribute("data-status", "offline")
    for name in ("shoe", "camera"):
        shown = tile.locator(by_id(f"device-{name}"))
        expect(shown).to_have_attribute("data-online", "unknown")
        expect(shown).not_to_contain_text("online")
    expect(tile.locator(by_id("device-shoe"))).to_contain_text("unknown")
    screens.shoot(page, "offline-devices-unknown")
    alice.check_clean()


def test_a_lost_connection_shows_its_banner_and_a_pause_beeps_once_across_a_reconnect(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    assert studio.console is not None
    relay = Relay(studio.console.port)
    try:
        alice = sign_in(browser, studio, "alice", url=relay.url)
        page = alice.page
        body = page.locator("body")
        expect(page.locator(by_id("banner-connection"))).to_be_hidden()
        page.check(by_id("sound-toggle"))
        studio.pause("t1", reason="before the outage", by="bob")
        expect(alice.tile("t1")).to_have_attribute("data-status", "paused")
        expect(body).to_have_attribute("data-beeps", "1")

        # The browser's connection to the console is lost: its banner says so.
        relay.cut()
        expect(page.locator(by_id("banner-connection"))).to_be_visible()
        expect(body).to_have_attribute("data-stream", "down")
        # A tile that got no new state is drawn again all the same: its actions say why
        # nothing can be sent now.
        pause_t2 = alice.tile("t2").locator(by_id("action-pause"))
        expect(pause_t2).to_be_disabled()
        expect(pause_t2).to_have_attribute("title", "no connection to the console")
        screens.shoot(page, "connection-lost")
        # Meanwhile t2 pauses too.
        studio.pause("t2", reason="during the outage", by="bob")
        relay.restore()
        expect(body).to_have_attribute("data-stream", "up", timeout=TIMEOUT_S * 1000)
        expect(page.locator(by_id("banner-connection"))).to_be_hidden()
        expect(alice.tile("t2")).to_have_attribute("data-status", "paused")
        expect(alice.queue_item("t2")).to_be_visible()
        # t2's pause is new to this page: one beep; t1's, beeped for already, is not again.
        expect(body).to_have_attribute("data-beeps", "2")
        # A new pause of t1 (resumed, paused again), live: the third beep, not a fourth.
        bob = studio.supervisor("bob")
        try:
            assert bob.request("t1", "resume", timeout=TIMEOUT_S)["ok"]
            studio.wait_state("t1", lambda s, _f: s["phase"] != "PAUSED", "resumed")
            assert bob.request("t1", "pause", timeout=TIMEOUT_S, reason="again")["ok"]
        finally:
            bob.close()
        expect(alice.tile("t1").locator(by_id("pause-message"))).to_contain_text("again")
        expect(body).to_have_attribute("data-beeps", "3")
        alice.check_clean()
    finally:
        relay.close()


def test_the_queue_is_oldest_first_and_its_keys_act_on_the_selected_pause(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    page = alice.page
    first = studio.draw_out_of_turn("t1")
    second = studio.draw_out_of_turn("t2")
    assert first["pause"]["since"] <= second["pause"]["since"]
    items = page.locator(f"{by_id('queue-items')} > li")
    expect(items).to_have_count(2)
    assert [items.nth(i).get_attribute("data-table") for i in range(2)] == ["t1", "t2"]
    expect(alice.queue_item("t1")).to_have_attribute("aria-current", "true")
    page.keyboard.press("j")
    expect(alice.queue_item("t2")).to_have_attribute("aria-current", "true")
    page.keyboard.press("k")
    expect(alice.queue_item("t1")).to_have_attribute("aria-current", "true")
    page.keyboard.press("ArrowDown")
    expect(alice.queue_item("t2")).to_have_attribute("aria-current", "true")
    screens.shoot(page, "pause-queue-two-tables")
    # "b" burns the selected table's card: t2's, not t1's.
    before = last_seq(studio, "t2")
    page.keyboard.press("b")
    burned = next_event(studio, "t2", "cards_burned", after=before)
    assert burned["data"]["count"] == 1
    studio.wait_state("t2", lambda s, _f: s["phase"] == "SHOE_READY", "t2 resumed")
    assert studio.state("t1")["phase"] == "PAUSED"  # type: ignore[index]
    # The selection moves to what is left; "r" is not what t1's pause offers: nothing sent.
    expect(alice.queue_item("t1")).to_have_attribute("aria-current", "true")
    page.keyboard.press("r")
    before = last_seq(studio, "t1")
    page.keyboard.press("b")
    next_event(studio, "t1", "cards_burned", after=before)
    assert [r["resolution"] for r in commands_by(studio.tables["t1"], "alice")] == ["burn"]
    alice.check_clean()


def test_a_table_silent_in_a_round_shows_stale(
    console_studio_with: Any, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    studio: ConsoleStudio = console_studio_with(stale_after_s=2)
    hand = DealerHand(studio.tables["t1"])
    alice = sign_in(browser, studio, "alice")
    hold_a_deal(studio, hand, "t1")
    # The dealer does not draw: t1 publishes nothing while it waits for the card.
    tile = alice.tile("t1")
    expect(tile).to_have_attribute("data-status", "stale")
    expect(tile.locator(by_id("tile-status"))).to_have_text("STALE")
    expect(tile.locator(by_id("tile-stale"))).to_be_visible()
    expect(alice.tile("t2")).to_have_attribute("data-status", "running")
    # Its state stopped arriving: it is in the pause queue, said as a pause is.
    item = alice.queue_item("t1")
    expect(item).to_have_attribute("data-state", "not-answering")
    expect(item).to_have_attribute("data-status", "stale")
    not_answering = re.compile(r"Table t1 is not answering since \d\d:\d\d")
    expect(item.locator(by_id("queue-message"))).to_have_text(not_answering)
    expect(alice.page.locator(by_id("announcer"))).to_contain_text(not_answering)
    expect(alice.page).to_have_title("(1 not answering) livetable console")
    screens.shoot(alice.page, "wall-stale-table")
    # The card comes: live again, and out of the queue.
    drawn = hand.draw_wanted()
    hand.go()
    assert drawn.card is not None
    expect(tile).to_have_attribute("data-status", "running")
    expect(alice.queue_item("t1")).to_have_count(0)
    expect(alice.page).to_have_title("livetable console")
    alice.check_clean()


def test_the_consoles_broker_link_down_shows_its_banner_and_no_table_as_offline(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    page = alice.page
    banner = page.locator(by_id("banner-link"))
    expect(banner).to_be_hidden()
    studio.broker.stop()
    expect(banner).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-link", "down")
    for table in ("t1", "t2"):
        # Unknown, never offline: the console cannot tell.
        expect(alice.tile(table)).to_have_attribute("data-status", "unknown")
        pause = alice.tile(table).locator(by_id("action-pause"))
        expect(pause).to_be_disabled()
        expect(pause).to_have_attribute("title", "the console's link to the broker is down")
    screens.shoot(page, "broker-link-down")
    studio.broker.restart()
    expect(banner).to_be_hidden(timeout=TIMEOUT_S * 1000)
    for table in ("t1", "t2"):
        expect(alice.tile(table)).to_have_attribute(
            "data-status", "running", timeout=TIMEOUT_S * 1000
        )
    expect(alice.tile("t1").locator(by_id("action-pause"))).to_be_enabled()
    alice.check_clean()


def test_end_shoe_and_new_shoe_are_sent_after_their_confirmations(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    page = alice.page
    tile = alice.tile("t2")
    dialog = page.locator(by_id("confirm-dialog"))
    before = last_seq(studio, "t2")
    tile.locator(by_id("action-end-shoe")).click()
    expect(dialog.locator(by_id("confirm-title"))).to_contain_text("End shoe 1 on table t2")
    expect(dialog.locator(by_id("confirm-text"))).to_contain_text("no more rounds")
    dialog.locator(by_id("confirm-reason")).fill("end of shift")
    dialog.locator(by_id("confirm-ok")).click()
    ended = next_event(studio, "t2", "shoe_ended", after=before)
    assert ended["data"]["shoe_id"] == 1, ended
    studio.wait_state("t2", lambda s, _f: s["phase"] == "AWAITING_SHUFFLE", "the shoe ended")
    expect(tile.locator(by_id("tile-shoe"))).to_contain_text("no shoe")
    end = tile.locator(by_id("action-end-shoe"))
    expect(end).to_be_disabled()
    expect(end).to_have_attribute("title", "no shoe is in play")

    tile.locator(by_id("action-new-shoe")).click()
    expect(dialog.locator(by_id("confirm-title"))).to_contain_text("new shoe on table t2")
    expect(dialog.locator(by_id("confirm-text"))).to_contain_text("shuffled")
    screens.shoot(page, "new-shoe-confirmation")
    dialog.locator(by_id("confirm-ok")).click()
    started = next_event(studio, "t2", "shoe_started", after=before)
    assert (started["data"]["shoe_id"], started["data"]["by"]) == (2, "alice"), started
    # The dealer reveals and burns: the new shoe is ready.
    studio.wait_state("t2", lambda s, _f: s["phase"] == "SHOE_READY", "the new shoe burned")
    expect(tile.locator(by_id("tile-shoe"))).to_contain_text("shoe 2")
    done = [(r["command"], r["reason"]) for r in commands_by(studio.tables["t2"], "alice")]
    assert done == [("end_shoe", "end of shift"), ("new_shoe", "")], done
    alice.check_clean()


def test_an_awaited_decision_shows_its_countdown_to_the_tables_deadline(
    console_studio_with: Any, browser: Any, monkeypatch: pytest.MonkeyPatch, screens: Screens
) -> None:
    from playwright.sync_api import expect

    import tests.support.console as support

    # Five minutes per decision, and the platform holds back t2's: the decision stays
    # awaited, with its deadline, for as long as the test looks.
    monkeypatch.setitem(support.TABLE_SETTINGS, "decision_s", 300.0)
    studio: ConsoleStudio = console_studio_with()
    holding = threading.Event()
    holding.set()
    serve = studio._serve

    def platform_holding_t2(table_id: str) -> None:
        state = studio.state(table_id) or {}
        if table_id == "t2" and holding.is_set() and state.get("phase") == "DECIDING":
            return
        serve(table_id)

    studio._serve = platform_holding_t2  # type: ignore[method-assign]
    alice = sign_in(browser, studio, "alice")
    # A round with a decision (a dealer blackjack asks none: then the next round).
    studio.play("t2", 20)
    deciding = studio.wait_state("t2", lambda s, _f: s["phase"] == "DECIDING", "a decision due")
    deadline = deciding["round"]["deadline"]
    assert deciding["settings"]["decision_s"] == 300.0
    asked = next_event(studio, "t2", "decision_requested", after=0)
    assert deadline is not None and deadline == asked["data"]["deadline"], (deadline, asked)
    tile = alice.tile("t2")
    awaiting = tile.locator(by_id("tile-awaiting"))
    expect(awaiting).to_contain_text(f"box {deciding['awaiting']['box']}")
    countdown = tile.locator(by_id("tile-countdown"))
    # Minutes and seconds left (a decision of five minutes), not "due now".
    expect(countdown).to_have_text(re.compile(r"^ \d+ min \d+ s left$"))
    shown = float(countdown.get_attribute("data-deadline") or "nan")
    assert shown == pytest.approx(deadline, abs=0.001), (shown, deadline)
    screens.shoot(alice.page, "decision-countdown")
    # The platform decides: that decision's countdown goes.
    holding.clear()
    studio.wait_state(
        "t2",
        lambda s, _f: s["round"] is None or s["round"]["deadline"] != deadline,
        "the decision taken",
    )
    expect(tile.locator(f'[data-deadline="{countdown_value(deadline)}"]')).to_have_count(0)
    alice.check_clean()


def countdown_value(deadline: float) -> str:
    """A number as the page writes it in ``data-deadline`` (JavaScript's String(number))."""
    text = repr(float(deadline))
    return text[:-2] if text.endswith(".0") else text


MARKUP = "<img src=x onerror=\"document.body.dataset.pwned='1'\"><b>bold</b> & \"quoted\" 'single'"


def test_markup_in_a_pause_reason_is_shown_as_text_on_the_wall_the_queue_and_the_audit(
    studio: ConsoleStudio, browser: Any
) -> None:
    from playwright.sync_api import expect

    alice = sign_in(browser, studio, "alice")
    page = alice.page
    # A supervisor's reason is the table's pause message, reason field of the audit, and
    # the journal's: whatever it holds, the page shows it as it was typed.
    studio.pause("t1", reason=MARKUP, by="bob")
    tile = alice.tile("t1")
    expect(tile).to_have_attribute("data-status", "paused")
    expect(tile.locator(by_id("tile-pause"))).to_contain_text(MARKUP)
    expect(alice.queue_item("t1")).to_contain_text(MARKUP)
    tile.locator(by_id("action-audit")).click()
    audit = page.locator(by_id("audit-dialog"))
    # The audit shows the command's arguments, each field by its words: the reason as text.
    args = f"{catalogue('en')['field.reason']}: {MARKUP}"
    expect(audit.locator(by_id("audit-content"))).to_contain_text(args)
    for where in (tile, alice.queue_item("t1"), audit):
        assert where.locator("img, b").count() == 0, "markup from a table was parsed as HTML"
    assert page.evaluate("document.body.dataset.pwned") is None
    alice.check_clean()


def test_an_idle_sign_out_keeps_the_wall_live_and_a_new_pause_announced(
    console_studio_with: Any, browser: Any, screens: Screens
) -> None:
    """A wall nobody touched for ``idle_timeout_s`` is the one that must keep watching: the
    person's session ends (their broker connection closes), and the page goes on, read-only,
    on the console's own viewer account (``[wall]``): a new pause is on the wall, said in
    the page's live region and counted in its title, with a banner to sign in again."""
    from playwright.sync_api import expect

    studio = console_studio_with(idle_timeout_s=10, wall=True)
    alice = sign_in(browser, studio, "alice")
    page = alice.page
    expect(page.locator(by_id("banner-wall"))).to_be_hidden()
    expect(alice.tile("t1").locator(by_id("action-pause"))).to_be_visible()
    # Nobody clicks: the session ends, and the page stays on the wall, read-only.
    wait_until(
        lambda: "alice: a session ended after 10 s idle" in studio.console.log(),  # type: ignore[union-attr]
        TIMEOUT_S,
        "alice's session ending for being idle",
    )
    expect(page.locator(by_id("banner-wall"))).to_be_visible()
    expect(page.locator(by_id("banner-wall"))).to_contain_text("sign in again to act")
    expect(page.locator("body")).to_have_attribute("data-stream", "up")
    assert page.url.endswith("/"), page.url
    expect(alice.tile("t1").locator(by_id("action-pause"))).to_have_count(0)
    assert "alice: the last session ended" in studio.console.log()  # type: ignore[union-attr]

    studio.draw_out_of_turn("t1")
    expect(alice.tile("t1")).to_have_attribute("data-status", "paused")
    expect(alice.tile("t1").locator(by_id("tile-status"))).to_have_text("PAUSED")
    announcer = page.locator(by_id("announcer"))
    expect(announcer).to_have_attribute("aria-live", "assertive")
    expect(announcer).to_contain_text("Table t1 paused")
    expect(page).to_have_title(re.compile(r"^\(1 paused\) "))
    screens.shoot(page, "idle-wall")

    # Well past another idle timeout, the open wall still watches.
    page.wait_for_timeout(12_000)
    studio.pause("t2", reason="still watched", by="bob")
    expect(alice.tile("t2")).to_have_attribute("data-status", "paused")
    expect(announcer).to_contain_text("Table t2 paused")
    expect(page).to_have_title(re.compile(r"^\(2 paused\) "))

    # Signing in again gives the person's actions back.
    page.click(by_id("banner-wall-signin"))
    page.wait_for_url(re.compile(r"/signin$"))
    page.fill(by_id("signin-username"), "alice")
    page.fill(by_id("signin-password"), studio.passwords["alice"])
    page.click(by_id("signin-submit"))
    page.wait_for_url(re.compile(r"/$"))
    expect(page.locator(by_id("banner-wall"))).to_be_hidden()
    expect(alice.queue_item("t1")).to_be_visible()
    alice.check_clean()


def test_every_page_and_dialog_passes_axe_core_without_a_serious_violation(
    studio: ConsoleStudio, browser: Any
) -> None:
    """axe-core in the browser on the sign-in page, the wall with a pause, every dialog
    (pause, the card picker, a round's history, the audit, the keys' help) and the printable
    history: no serious or critical violation (WCAG 2 A and AA rules, colour contrast
    included)."""
    from playwright.sync_api import expect

    found: list[str] = []
    # The console's page injects nothing from elsewhere (CSP): axe's script is the test's.
    entry = open_page(browser, f"{studio.url}/signin")
    found += axe_violations(entry.page, "sign-in page")
    entry.page.fill(by_id("signin-password"), "wrong")
    entry.page.fill(by_id("signin-username"), "nobody")
    entry.page.click(by_id("signin-submit"))
    expect(entry.page.locator(by_id("signin-message"))).to_contain_text("Wrong")
    found += axe_violations(entry.page, "sign-in page, refused")
    entry.page.context.close()

    # Enough audit entries that the audit's list scrolls (bob's requests t2 refuses count;
    # 18, within the table's budget of 20 refusals at once).
    bob = studio.supervisor("bob")
    try:
        for _ in range(18):
            bob.request("t2", "resume", timeout=TIMEOUT_S)
    finally:
        bob.close()
    hand = DealerHand(studio.tables["t1"])
    alice = sign_in(browser, studio, "alice")
    page = alice.page
    hold_a_deal(studio, hand, "t1")
    hand.draw_wanted(FaultPlan(unreadable_rate=1.0))
    paused(studio, "t1", "misread", need="enter_card for the unread card")
    expect(alice.queue_item("t1")).to_be_visible()
    found += axe_violations(page, "the wall, t1 paused")

    def dialog(name: str, opener: Any, closer: str) -> None:
        nonlocal found
        opener.click()
        shown = page.locator(by_id(name))
        expect(shown).to_be_visible()
        found += axe_violations(page, name)
        shown.locator(by_id(closer)).click()
        expect(shown).to_be_hidden()

    dialog("confirm-dialog", alice.tile("t2").locator(by_id("action-pause")), "confirm-back")
    dialog(
        "card-picker", alice.queue_item("t1").locator(by_id("resolve-enter-card")), "card-cancel"
    )
    alice.tile("t2").locator(by_id("action-audit")).click()
    audit = page.locator(by_id("audit-dialog"))
    expect(audit.locator(by_id("audit-row")).nth(18)).to_be_attached()
    page.set_viewport_size({"width": DESK["width"], "height": 500})
    scrolls = audit.locator(by_id("audit-content")).evaluate("e => e.scrollHeight > e.clientHeight")
    assert scrolls, "the audit's list scrolls: the check below sees its region"
    found += axe_violations(page, "audit-dialog")
    audit.locator(by_id("audit-close")).click()
    page.set_viewport_size(DESK)
    dialog("help-overlay", page.locator(by_id("help-open")), "help-close")
    # A round's history: t2 plays one to its end.
    studio.play("t2", 1)
    studio.wait_state(
        "t2", lambda s, _f: s["phase"] == "SHOE_READY" and s["shoe"]["round_number"] >= 1, "round"
    )
    round_id = next(
        event["data"]["round_id"]
        for event in reversed(studio.events("t2"))
        if event["type"] == "round_settled"
    )
    console_has_round(alice, studio, "t2", round_id)
    history = page.locator(by_id("history-dialog"))
    alice.tile("t2").locator(by_id("action-history")).click()
    expect(history.locator(by_id("history-row")).last).to_have_attribute(
        "data-type", "round_settled"
    )
    found += axe_violations(page, "history-dialog")
    printable = history.locator(by_id("history-printable")).get_attribute("href")
    history.locator(by_id("history-close")).click()
    sheet = page.context.new_page()
    sheet.goto(f"{studio.url}{printable}")
    expect(sheet.locator(by_id("history-row")).last).to_have_attribute("data-type", "round_settled")
    found += axe_violations(sheet, "printable history")
    # Moderate in axe-core, and still wanted: the printed page says what it is.
    expect(sheet.locator("h1")).to_have_count(1)
    hand.go()
    assert found == [], "\n".join(found)
    alice.check_clean()


def test_a_dragon_tiger_table_shows_its_hands_as_its_game_declares_them(
    console_studio_with: Any, browser: Any, screens: Screens
) -> None:
    """The page knows no game by name: a game it was never written for (Dragon Tiger) is
    shown from the presentation the console serves, on the wall and in a round's history."""
    from playwright.sync_api import expect

    studio: ConsoleStudio = console_studio_with(tables={"t1": "dragon-tiger"})
    hand = DealerHand(studio.tables["t1"])
    alice = sign_in(browser, studio, "alice")
    tile = alice.tile("t1")
    expect(tile.locator(by_id("tile-game"))).to_have_attribute("data-game", "dragon-tiger")
    expect(tile.locator(by_id("tile-game"))).to_have_text(catalogue("en")["game.dragon-tiger"])
    before = last_seq(studio, "t1")
    hold_a_deal(studio, hand, "t1")
    dragon = hand.draw_wanted()
    assert dragon.card is not None
    dealt = tile.locator(f"{by_id('hand')}[data-position='dragon']")
    expect(dealt.locator(f"[data-card='{dragon.card}']")).to_have_count(1)
    # Its total is its rank: ace 1 .. king 13.
    total = str("A23456789TJQK".index(dragon.card[0]) + 1)
    expect(dealt.locator(by_id("hand-total"))).to_have_text(total)
    tiger = tile.locator(f"{by_id('hand')}[data-position='tiger']")
    expect(tiger.locator(by_id("card"))).to_have_count(0)
    screens.shoot(alice.page, "wall-dragon-tiger")
    # The Tiger's card, the round's last.
    wait_until(lambda: hand.wanted > 0, TIMEOUT_S, "the dealer about to deal the Tiger's card")
    hand.draw_wanted()
    hand.go()
    settled = next_event(studio, "t1", "round_settled", after=before)
    result = settled["data"]["result"]
    assert result["dragon"] == [dragon.card], result

    # The round's history says the result in the game's own words.
    round_id = settled["data"]["round_id"]
    console_has_round(alice, studio, "t1", round_id)
    # The tile has drawn the round's end (it shrinks as the hands go) before the click.
    expect(tile).to_have_attribute("data-phase", "SHOE_READY")
    tile.locator(by_id("action-history")).click()
    history = alice.page.locator(by_id("history-dialog"))
    expect(history).to_be_visible()
    last = history.locator(by_id("history-row")).last
    expect(last).to_have_attribute("data-type", "round_settled")
    named = catalogue("en")
    winner, dragon_word = named[f"position.{result['winner']}"], named["position.dragon"]
    expect(last).to_contain_text(f"settled: {winner} wins, {dragon_word} {result['dragon_total']} ")
    expect(last).to_contain_text(f" {named['position.tiger']} {result['tiger_total']} ")
    assert raw_codes_shown(alice.page) == [], "a raw code in the history of a settled round"
    alice.check_clean()
