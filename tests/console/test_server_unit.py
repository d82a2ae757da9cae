"""The server's parts that need no network: the audit's CSV (no cell a spreadsheet would
run), the origin check, the tiles' coalescing (feeds held in memory), and the commands the
page may name."""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import re
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from controller.client.api_client import TableFeed, TableUpdate
from controller.console import server
from controller.console.api import ACTIONS, COMMANDS_SHOWN
from controller.console.common import STATIC_DIR
from controller.console.server import (
    COALESCE_S,
    AccountFeed,
    attachment_header,
    audit_csv,
    origin_ok,
    spreadsheet_safe,
)

# Where the page's scripts name a command: sent (``act(table, slot, "pause", ...)``), or a
# control asking whether it may be sent (``actionButton(tile, "pause", ...)``, ``whyNot``).
PAGE_NAMES_A_COMMAND = re.compile(
    r"\bact\(\s*[\w.]+,\s*\"(?:actions|queue)\",\s*\"(\w+)\""
    r"|\b(?:actionButton|whyNot)\(\s*tile,\s*\"(\w+)\""
)


def test_the_page_names_only_the_commands_the_console_serves_it() -> None:
    """The page reads its commands from ``/api/commands`` (the API's one list, as far as the
    console offers it); a command it names that the console does not serve would be a
    button that is never enabled, or an action the server refuses."""
    named: set[str] = set()
    for script in sorted(Path(STATIC_DIR).glob("*.js")):
        for sent, asked in PAGE_NAMES_A_COMMAND.findall(script.read_text()):
            named.add(sent or asked)
    assert {"open_round", "pause", "cancel", "end_shoe", "new_shoe", "resume"} <= named
    assert named <= set(COMMANDS_SHOWN), sorted(named - set(COMMANDS_SHOWN))
    # What the server lets through is exactly what it serves the page.
    served = {name: frozenset(f["name"] for f in c["fields"]) for name, c in COMMANDS_SHOWN.items()}
    assert served == ACTIONS


def test_a_cell_that_starts_like_a_formula_is_text() -> None:
    for dangerous in ("=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"):
        assert spreadsheet_safe(dangerous) == "'" + dangerous
    assert spreadsheet_safe("pause") == "pause"
    assert spreadsheet_safe(None) == ""
    assert spreadsheet_safe(True) == "true" and spreadsheet_safe(-1) == "'-1"
    assert spreadsheet_safe({"reason": "=x"}) == '{"reason": "=x"}'


def test_the_audit_csv_has_a_header_and_one_row_per_entry() -> None:
    entries = [
        {
            "journal_seq": 7,
            "at": 1767225700.25,
            "account": "alice",
            "role": "supervisor",
            "command": "pause",
            "transaction": "=cmd|' /C calc'!A0",
            "args": {"reason": "spill"},
            "ok": False,
            "code": "refused",
            "message": "-the table is already paused",
        }
    ]
    rows = list(csv.reader(io.StringIO(audit_csv(entries))))
    assert rows[0][:4] == ["journal_seq", "at", "time_utc", "account"]
    assert rows[1] == [
        "7",
        "1767225700.25",
        "2026-01-01T00:01:40.250+00:00",
        "alice",
        "supervisor",
        "pause",
        "'=cmd|' /C calc'!A0",
        '{"reason": "spill"}',
        "false",
        "refused",
        "'-the table is already paused",
    ]


def test_the_origin_is_the_consoles_own_or_absent() -> None:
    def request(origin: str | None, host: str = "console.studio:8080") -> bool:
        headers = {"Host": host, **({"Origin": origin} if origin is not None else {})}
        return origin_ok(make_mocked_request("POST", "/api/tables/t1/request", headers=headers))

    assert request(None)
    assert request("http://console.studio:8080")
    assert request("https://console.studio:8080"), "behind a TLS proxy"
    assert request("https://console.studio", host="console.studio")
    assert not request("http://evil.example")
    assert not request("http://console.studio:8081")
    assert not request("null")
    assert not request("http://console.studio:8080.evil.example")


class Feeds:
    """A StudioClient's reading side, for the tiles: feeds held here, no connection."""

    def __init__(self, *feeds: TableFeed) -> None:
        self.held = {feed.table_id: feed for feed in feeds}

    def feeds(self) -> dict[str, TableFeed]:
        return dict(self.held)

    def feed(self, table_id: str) -> TableFeed | None:
        return self.held.get(table_id)


def test_a_burst_of_updates_is_one_tile_per_table_at_most_every_100_ms() -> None:
    async def scenario() -> list[tuple[float, str, Any]]:
        now = time.time()
        tables = [
            TableFeed(t, availability="online", state={"phase": "DEALING"}, last_message_at=now)
            for t in ("t1", "t2")
        ]
        feed = AccountFeed("alice", asyncio.get_running_loop(), stale_after_s=120)
        feed.client, feed.link_up = Feeds(*tables), True
        sent: list[tuple[float, str, Any]] = []
        broadcast = feed.broadcast

        def stamped(kind: str, data: Any) -> None:
            sent.append((time.monotonic(), kind, data))
            broadcast(kind, data)

        feed.broadcast = stamped  # type: ignore[method-assign]
        subscriber = feed.subscribe("session")
        feed.start()
        try:
            for _ in range(3):
                for _ in range(50):  # as the network thread calls it
                    feed.on_update(TableUpdate("t1", "event", {}))
                await asyncio.wait_for(subscriber.queue.get(), 10)
            # The marker: another table's tile, asked for after the last burst's.
            feed.on_update(TableUpdate("t2", "state", {}))
            while (item := await asyncio.wait_for(subscriber.queue.get(), 10)) is not None:
                if item[1]["table"] == "t2":
                    break
        finally:
            feed.close()
        return sent

    sent = asyncio.run(scenario())
    t1 = [at for at, kind, tile in sent if kind == "tile" and tile["table"] == "t1"]
    assert len(t1) == 3, "one tile per burst of 50"
    assert all(later - earlier >= COALESCE_S for earlier, later in itertools.pairwise(t1))
    assert [tile["table"] for _at, _kind, tile in sent] == ["t1", "t1", "t1", "t2"]


def test_the_audit_download_is_named_safely_whatever_the_table_id() -> None:
    # A table id is any MQTT topic level: quotes, semicolons, spaces, line breaks, letters of
    # any script; none of it may end the header's quoted name or start another header.
    for table in ('t"1', "t;1 x", "t\r\nSet-Cookie: a=b", "tisch-ä", "桌1", "t\\1"):
        header = attachment_header(f"{table}-audit.csv")
        assert "\r" not in header and "\n" not in header
        assert header.isascii(), header
        plain = header.split('filename="', 1)[1].split('"', 1)[0]
        assert re.fullmatch(r"[A-Za-z0-9._-]+", plain), header
        encoded = header.split("filename*=UTF-8''", 1)[1]
        assert urllib.parse.unquote(encoded) == f"{table}-audit.csv"


def test_a_table_within_its_window_holds_back_no_other_tables_tile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """t1's second tile waits for t1's window to end; t2's tile, asked for meanwhile, goes
    at once (it waited for t1's window before: every tile of a busy studio came late)."""
    monkeypatch.setattr(server, "COALESCE_S", 5.0)  # a window no scheduling hiccup ends

    async def scenario() -> list[tuple[str, bool]]:
        now = time.time()
        tables = [
            TableFeed(t, availability="online", state={"phase": "DEALING"}, last_message_at=now)
            for t in ("t1", "t2")
        ]
        feed = AccountFeed("alice", asyncio.get_running_loop(), stale_after_s=120)
        feed.client, feed.link_up = Feeds(*tables), True
        subscriber = feed.subscribe("session")
        feed.start()
        seen: list[tuple[str, bool]] = []
        try:
            feed.on_update(TableUpdate("t1", "event", {}))
            first = await asyncio.wait_for(subscriber.queue.get(), 10)
            assert first is not None and first[1]["table"] == "t1"
            feed.on_update(TableUpdate("t1", "event", {}))  # within t1's window: held
            # Turns of the loop (not time): the feed takes t1's update and waits for its
            # window before t2's comes.
            for _ in range(20):
                await asyncio.sleep(0)
            assert "t1" in feed._dirty
            feed.on_update(TableUpdate("t2", "state", {}))
            item = await asyncio.wait_for(subscriber.queue.get(), 10)
            assert item is not None
            # Whether t1's tile was still held when this one went out.
            seen.append((item[1]["table"], "t1" in feed._dirty))
        finally:
            feed.close()
        return seen

    assert asyncio.run(scenario()) == [("t2", True)]
