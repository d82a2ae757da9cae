"""A round's history older than the console's feed, against the real thing: the studio's
broker and daemons, and a console run in this process (``Console`` on aiohttp, a real
socket) whose ``StudioClient`` keeps only the last few events and counts the ``events``
requests it sends, so the test sees what a history costs the table.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from aiohttp import web

from controller.api_client import StudioClient
from controller.console.config import BrokerSettings, ConsoleConfig
from controller.console.fleet import round_events
from controller.console.server import Console
from simulators.broker import free_port
from tests.support.console import ConsoleHttp, ConsoleStudio
from tests.support.wait import wait_until

TIMEOUT_S = 30.0
# Fewer events than two baccarat rounds: the first round of three falls out of the feed.
KEEP = 12


class CountingStudioClient(StudioClient):
    """The real client, keeping :data:`KEEP` events and noting each ``events`` request."""

    asked: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, *args: Any, **options: Any) -> None:
        options.setdefault("keep", KEEP)
        super().__init__(*args, **options)

    def request(self, table_id: str, command: str, *args: Any, **fields: Any) -> dict[str, Any]:
        if command == "events" and threading.current_thread().name.startswith("console"):
            CountingStudioClient.asked.append({"table": table_id, **fields})
        return super().request(table_id, command, *args, **fields)


class InProcessConsole:
    """``Console`` served on a free port by a loop on a thread of its own."""

    def __init__(self, studio: ConsoleStudio) -> None:
        self.port = free_port()
        self.config = ConsoleConfig(
            host="127.0.0.1",
            port=self.port,
            broker=BrokerSettings(host=studio.broker.host, port=studio.broker.port),
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        console = Console(self.config, client_factory=CountingStudioClient)
        runner = web.AppRunner(console.app(), shutdown_timeout=5.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
            self._ready.set()
            await self._stop.wait()
        finally:
            await runner.cleanup()

    def start(self) -> InProcessConsole:
        self._thread.start()
        assert self._ready.wait(TIMEOUT_S), "the console did not start"
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(TIMEOUT_S)


@pytest.fixture
def in_process(console_studio: ConsoleStudio) -> Iterator[InProcessConsole]:
    console = InProcessConsole(console_studio).start()
    CountingStudioClient.asked = []
    try:
        yield console
    finally:
        console.stop()


def test_a_round_older_than_the_feed_is_read_from_the_table_and_one_never_opened_costs_nothing(
    console_studio: ConsoleStudio, in_process: InProcessConsole
) -> None:
    studio = console_studio
    studio.play("t1", 3)
    studio.wait_state(
        "t1",
        lambda s, _f: s["phase"] == "SHOE_READY" and s["shoe"]["round_number"] == 3,
        "three rounds played",
    )
    alice = ConsoleHttp(in_process.url)
    assert alice.sign_in("alice", studio.passwords["alice"]).status == 303
    last_seq = studio.state("t1")["seq"]  # type: ignore[index]
    wait_until(
        lambda: any(e["seq"] == last_seq for e in alice.tables().get("t1", {}).get("recent", [])),
        TIMEOUT_S,
        "the console's feed up to date",
    )
    table_events = studio.events("t1")
    first = next(e for e in table_events if e["type"] == "round_opened")["data"]["round_id"]
    expected = round_events(table_events, first)
    assert expected and expected[-1]["type"] == "round_settled"
    assert len(table_events) - table_events.index(expected[0]) > KEEP, "the round left the feed"

    answer = alice.get(f"/api/tables/t1/rounds/{first}")
    assert answer.status == 200, answer.text
    assert answer.json()["events"] == expected
    assert CountingStudioClient.asked, "read from the table's events"

    # A round never opened (round ids count up): refused from what the feed holds.
    CountingStudioClient.asked = []
    never = max(e["data"]["round_id"] for e in table_events if e["type"] == "round_opened") + 1
    answer = alice.get(f"/api/tables/t1/rounds/{never}")
    assert answer.status == 404, answer.text
    assert CountingStudioClient.asked == [], "a round that never was must not page the journal"
