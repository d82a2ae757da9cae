"""Pauses nest, through the API of the real thing: ``livetable run`` with its shoe a
simulator on a pty, a real mosquitto (the production ACL and password file), a supervisor
and the platform as real MQTT clients.

A supervisor pauses; the dealer draws a card anyway (the simulator's shoe ignores its
gate); the supervisor burns it: the table stays paused by that supervisor, and only a plain
resume lifts it. A supervisor's pause asked while the table is paused by an anomaly is
taken and outlasts the anomaly. Every state on the way fits docs/asyncapi.yaml.
"""

from __future__ import annotations

import json
from typing import Any

from controller.client.api_client import ApiClient
from tests.daemon.test_audit import client
from tests.daemon.test_ctl import (  # noqa: F401 (studio, peers, tables: fixtures)
    Studio,
    draw_until,
    open_round,
    peers,
    state_of,
    studio,
    tables,
)
from tests.daemon.test_security import BASE
from tests.support.api_schema import validate_message


def pauses(state: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(p["reason"], p["by"]) for p in state["pauses"]]


def valid(state: dict[str, Any]) -> dict[str, Any]:
    validate_message(f"{BASE}/state", json.dumps(state).encode())
    return state


def test_a_card_burnt_during_a_supervisors_pause_leaves_the_table_paused_by_them(
    studio: Studio,  # noqa: F811
) -> None:
    alice: ApiClient = client(studio, "supervisor")
    name = alice.account.name
    try:
        assert alice.request("new_shoe", 10.0)["ok"]
        draw_until(studio, ("SHOE_READY",))
        open_round(studio)
        draw_until(studio, ("DEALING",))
        studio.table.shoe.draw()  # the player's first card
        state_of(studio, lambda s: (s["awaiting"] or {}).get("position") == "banker", "dealt")

        assert alice.request("pause", 10.0, reason="dealer change")["ok"]
        held = state_of(studio, lambda s: s["phase"] == "PAUSED", "paused")
        assert pauses(valid(held)) == [("supervisor", name)]
        studio.table.shoe.draw()  # the dealer draws anyway
        both = state_of(
            studio, lambda s: s["pause"]["reason"] == "card_out_of_turn", "the card held"
        )
        assert pauses(valid(both)) == [("supervisor", name), ("card_out_of_turn", None)]
        assert "dealer change" in both["pauses"][0]["message"]

        answer = alice.request("resume", 10.0, resolution="burn")
        assert answer["ok"] and "dealer change" in answer["message"], answer
        after = state_of(
            studio, lambda s: s["pause"] and s["pause"]["reason"] == "supervisor", "burnt"
        )
        assert after["phase"] == "PAUSED" and after["pause"]["by"] == name
        assert "dealer change" in after["pause"]["message"] and after["pause"]["needs"] == []
        assert pauses(valid(after)) == [("supervisor", name)]
        assert after["pause"]["since"] == held["pause"]["since"]  # paused all along

        assert alice.request("resume", 10.0)["ok"]
        resumed = state_of(studio, lambda s: s["phase"] == "DEALING", "resumed")
        assert valid(resumed)["pause"] is None and resumed["pauses"] == []
    finally:
        alice.close()


def test_a_supervisors_pause_during_an_anomaly_is_taken_and_outlasts_it(
    studio: Studio,  # noqa: F811
) -> None:
    alice: ApiClient = client(studio, "supervisor")
    name = alice.account.name
    try:
        assert alice.request("new_shoe", 10.0)["ok"]
        draw_until(studio, ("SHOE_READY",))
        studio.table.shoe.draw()  # between rounds: out of turn, the table pauses itself
        state_of(studio, lambda s: s["phase"] == "PAUSED", "paused by the card")

        answer = alice.request("pause", 10.0, reason="looking at the card")
        assert answer["ok"], answer  # taken, not refused "already paused"
        nested = state_of(studio, lambda s: len(s["pauses"]) == 2, "the pause nested")
        assert pauses(valid(nested)) == [("card_out_of_turn", None), ("supervisor", name)]
        assert nested["pause"]["needs"]  # the card still needs a resolution

        assert alice.request("resume", 10.0, resolution="burn")["ok"]
        held = state_of(studio, lambda s: len(s["pauses"]) == 1, "the card burnt")
        assert held["phase"] == "PAUSED" and pauses(valid(held)) == [("supervisor", name)]
        assert alice.request("resume", 10.0)["ok"]
        state_of(studio, lambda s: s["phase"] == "SHOE_READY", "resumed")
    finally:
        alice.close()
