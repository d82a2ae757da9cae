"""A card frame whose face is no card, end to end: the shoe simulator on a real pty sends
an Angel Eye ``D`` frame (a card drawn in a game, so a card left the shoe) with the suit
"none", the real daemon reads it, and a supervisor resolves the pause over a real mosquitto,
without cancelling anything.

In a round it is the card the round was waiting for, unread: the table pauses (``misread``)
and asks for that card, which the supervisor enters from the felt; the round goes on and
settles. Between rounds it is a card out of turn, which the supervisor burns.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import SimulatedTable
from tests.support.wait import wait_until

TIMEOUT_S = 30.0


@pytest.fixture
def table(tmp_path: Path, mqtt_broker: tuple[str, int]) -> Iterator[SimulatedTable]:
    table = SimulatedTable(tmp_path / "t1", *mqtt_broker, "baccarat", rounds=0)
    table.daemon.start()
    try:
        yield table
    finally:
        table.close()


def state_where(table: SimulatedTable, what: str, **fields: Any) -> dict[str, Any]:
    def matching() -> dict[str, Any] | None:
        state = table.platform.state
        if state is None:
            return None
        return state if all(state.get(key) == value for key, value in fields.items()) else None

    return wait_until(matching, TIMEOUT_S, what)


def events(table: SimulatedTable, kind: str) -> list[dict[str, Any]]:
    return [event for event in list(table.platform.events) if event["type"] == kind]


def ready_shoe(table: SimulatedTable) -> None:
    """A new shoe, its first card revealed and its burn done."""
    state_where(table, "the table online", phase="AWAITING_SHUFFLE")
    assert table.supervisor.request("new_shoe", TIMEOUT_S)["ok"]
    state_where(table, "the burn reveal", phase="BURN_REVEAL")
    table.shoe.draw("first")
    state_where(table, "the burn", phase="BURNING")
    while table.platform.state["phase"] == "BURNING":  # type: ignore[index]
        drawn = table.platform.state["shoe"]["cards_drawn"]  # type: ignore[index]
        table.shoe.draw("burn")
        wait_until(
            lambda drawn=drawn: table.platform.state["shoe"]["cards_drawn"] > drawn,  # type: ignore[index,misc]
            TIMEOUT_S,
            "a burn card taken",
        )
    state_where(table, "the shoe ready", phase="SHOE_READY")


def deal_until_settled(table: SimulatedTable) -> None:
    while not events(table, "round_settled"):
        drawn = len(events(table, "card_dealt"))
        table.shoe.draw()
        wait_until(
            lambda drawn=drawn: len(events(table, "card_dealt")) > drawn,  # type: ignore[misc]
            TIMEOUT_S,
            "the card dealt",
        )
        assert table.platform.state["phase"] != "PAUSED", table.platform.state  # type: ignore[index]


def test_a_garbled_card_in_a_round_is_entered_and_the_round_settles(
    table: SimulatedTable,
) -> None:
    ready_shoe(table)
    answer = table.platform.request("open_round", TIMEOUT_S)
    assert answer["ok"], answer
    state_where(table, "the first card awaited", phase="DEALING")

    garbled = table.shoe.draw("player", 1, garbled=True)
    assert (garbled.event, garbled.detail) == ("misread", "garbled") and garbled.card
    paused = state_where(table, "the misread pause", phase="PAUSED")
    assert paused["pause"]["reason"] == "misread", paused["pause"]
    (needs,) = paused["pause"]["needs"]
    assert needs.startswith("enter_card for the unread card at player, or no_cards_drawn"), needs

    # The card that left the shoe lies on the felt: the supervisor enters it.
    entered = table.supervisor.request("enter_card", TIMEOUT_S, card=garbled.card)
    assert entered["ok"], entered
    state_where(table, "the round dealt on", phase="DEALING")
    dealt = events(table, "card_dealt")
    assert [(e["data"]["position"], e["data"]["card"], e["data"]["source"]) for e in dealt] == [
        ("player", garbled.card, "supervisor")
    ]
    deal_until_settled(table)
    assert not events(table, "round_voided")
    # The shoe's frame was logged with why it is no card, and read as a misread.
    assert "impossible card" in table.daemon.log() and "suit code 0" in table.daemon.log()


def test_a_frame_that_was_no_card_is_dismissed_and_the_round_settles(
    table: SimulatedTable,
) -> None:
    # A forged or glitched frame: on the line it is the garbled card's, but no card lies on
    # the felt. The supervisor says so; the round waits for its card and goes on.
    ready_shoe(table)
    assert table.platform.request("open_round", TIMEOUT_S)["ok"]
    waiting = state_where(table, "the first card awaited", phase="DEALING")
    table.shoe.draw("player", 1, garbled=True)
    state_where(table, "the misread pause", phase="PAUSED")
    answer = table.supervisor.request("resume", TIMEOUT_S, resolution="no_cards_drawn")
    assert answer["ok"], answer
    again = state_where(table, "the first card awaited again", phase="DEALING")
    assert again["shoe"]["cards_drawn"] == waiting["shoe"]["cards_drawn"]  # nothing counted
    assert again["awaiting"] == waiting["awaiting"], again["awaiting"]
    deal_until_settled(table)
    assert not events(table, "round_voided")
    resumed = events(table, "table_resumed")[-1]["data"]
    assert resumed["resolution"] == "no_cards_drawn" and resumed["reason"] == "misread"


def test_a_garbled_card_between_rounds_is_burned(table: SimulatedTable) -> None:
    ready_shoe(table)
    table.shoe.draw("player", 1, garbled=True)
    paused = state_where(table, "the card out of turn", phase="PAUSED")
    assert paused["pause"]["reason"] == "card_out_of_turn", paused["pause"]
    answer = table.supervisor.request("resume", TIMEOUT_S, resolution="burn")
    assert answer["ok"], answer
    state_where(table, "the table ready again", phase="SHOE_READY")
    assert events(table, "cards_burned")[-1]["data"]["count"] == 1
    answer = table.platform.request("open_round", TIMEOUT_S)
    assert answer["ok"], answer
