"""A round's history older than the console's feed, against the real thing: the studio's
broker and daemons, and a console run in this process (``Console`` on aiohttp, a real
socket) whose ``StudioClient`` keeps only the last few events and counts the ``events``
requests it sends, so the test sees what a history costs the table.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.console.fleet import round_events
from tests.console.inprocess import KEEP, TIMEOUT_S, CountingStudioClient, InProcessConsole
from tests.support.console import ConsoleHttp, ConsoleStudio
from tests.support.wait import wait_until


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
