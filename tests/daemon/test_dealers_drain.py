"""Dealers on duty and a table that stops between rounds, end to end: the real daemon
(``livetable run``), a shoe simulator on a real pty, a real mosquitto, and the platform,
supervisor and dealer talking to the table only over MQTT.

A dealer signed in is named in the state and in every round; a dealer change lets the round
in play finish and opens none until the next dealer signs in; SIGTERM (``systemctl stop``)
lets the round in play settle, the daemon exits 0, and the restarted table opens its next
round without a pause."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.client.api_client import Account, ApiClient
from tests.support.daemon import SimulatedTable, unique_by_seq
from tests.support.wait import wait_until

# Generous for a loaded machine: a baccarat round takes well under a second here.
ROUND_TIMEOUT_S = 60.0


@pytest.fixture
def table(tmp_path: Path, mqtt_broker: tuple[str, int]) -> Iterator[SimulatedTable]:
    simulated = SimulatedTable(tmp_path, *mqtt_broker, "baccarat", 4, stop_timeout_s=60.0)
    yield simulated
    simulated.close()


@pytest.fixture
def dealer(mqtt_broker: tuple[str, int]) -> Iterator[ApiClient]:
    client = ApiClient(*mqtt_broker, "t1", Account("dealer", "dealer-t1"))
    assert client.wait_connected(), "the broker refused the dealer's client"
    yield client
    client.close()


def events_of(table: SimulatedTable, kind: str) -> list[dict[str, Any]]:
    return [e for e in unique_by_seq(table.viewer.events) if e["type"] == kind]


def test_the_dealer_names_each_round_and_a_change_waits_for_the_next_dealer(
    table: SimulatedTable, dealer: ApiClient
) -> None:
    table.daemon.start()
    wait_until(lambda: table.viewer.state is not None, 30, "the table's first state")
    answer = dealer.request("dealer_sign_in", 10, staff_id="D-1043")
    assert answer["ok"], answer
    wait_until(
        lambda: (
            (table.viewer.state or {}).get("dealer", {}) is not None
            and (table.viewer.state or {}).get("dealer", {}).get("staff_id") == "D-1043"
        ),
        10,
        "D-1043 in the state",
    )
    table.bots.start()
    wait_until(lambda: table.bots.rounds_settled >= 2, ROUND_TIMEOUT_S, "two rounds")
    # A dealer change, asked for while the table plays: the round in play (if any) settles.
    wait_until(
        lambda: (table.viewer.state or {}).get("round") is not None, ROUND_TIMEOUT_S, "a round"
    )
    changed = table.supervisor.request("dealer_change", 10)
    assert changed["ok"], changed
    wait_until(
        lambda: (
            (state := table.viewer.state or {})["phase"] == "SHOE_READY"
            and [hold["reason"] for hold in state["holds"]] == ["dealer_change"]
        ),
        ROUND_TIMEOUT_S,
        "the table held between rounds",
    )
    settled_before = len(events_of(table, "round_settled"))
    held = table.platform.request("open_round", 10)
    assert held["error"]["code"] == "held" and "dealer_change" in held["message"], held
    # The next dealer signs in: rounds open again, dealt by D-2001.
    assert dealer.request("dealer_sign_out", 10)["ok"]
    assert dealer.request("dealer_sign_in", 10, staff_id="D-2001")["ok"]
    wait_until(
        lambda: len(events_of(table, "round_settled")) > settled_before,
        ROUND_TIMEOUT_S,
        "a round after the change",
    )
    table.bots.stop()
    assert not table.bots.errors, table.bots.errors[:5]

    events = unique_by_seq(table.viewer.events)
    held_at = next(e["seq"] for e in events if e["type"] == "rounds_held")
    back_at = next(
        e["seq"]
        for e in events
        if e["type"] == "dealer_signed_in" and e["data"]["staff_id"] == "D-2001"
    )
    between = [e for e in events if held_at < e["seq"] < back_at]
    assert not [e for e in between if e["type"] == "round_opened"], "a round opened while held"
    assert len([e for e in between if e["type"] == "round_settled"]) <= 1
    dealers = [
        e["data"]["dealer"]
        for e in events
        if e["type"] in ("round_opened", "round_settled") and e["seq"] < back_at
    ]
    assert dealers and set(dealers) == {"D-1043"}, dealers
    after = [e["data"]["dealer"] for e in events if e["type"] == "round_settled"][settled_before:]
    assert after and set(after) == {"D-2001"}, after
    assert table.viewer.state["dealer"]["staff_id"] == "D-2001"


def test_sigterm_lets_the_round_in_play_settle_and_the_restart_deals_on(
    table: SimulatedTable,
) -> None:
    table.daemon.start()
    wait_until(lambda: table.viewer.state is not None, 30, "the table's first state")
    table.bots.start()
    wait_until(lambda: table.bots.rounds_settled >= 1, ROUND_TIMEOUT_S, "a first round")
    # SIGTERM once a card of a round is awaited: the dealer keeps dealing.
    wait_until(
        lambda: (table.viewer.state or {}).get("phase") == "DEALING", ROUND_TIMEOUT_S, "dealing"
    )
    in_play = table.viewer.state["round"]["id"]
    assert table.daemon.kill(signal.SIGTERM) == 0
    table.bots.stop()
    wait_until(lambda: table.viewer.availability == "offline", 10, "availability offline")
    events = unique_by_seq(table.viewer.events)
    settled = [e["data"]["round_id"] for e in events if e["type"] == "round_settled"]
    assert in_play in settled, (in_play, settled)
    held_at = next(e["seq"] for e in events if e["type"] == "rounds_held")
    assert not [e for e in events if e["type"] == "round_opened" and e["seq"] > held_at]
    assert not [e for e in events if e["type"] == "table_paused"]
    assert [hold["reason"] for hold in table.viewer.state["holds"]] == ["closing"]

    # The restart lifts the process's hold and opens the next round without a pause.
    seen = len(events)
    table.daemon.start()
    table.bots.start()
    wait_until(
        lambda: any(e["type"] == "round_opened" for e in unique_by_seq(table.viewer.events)[seen:]),
        ROUND_TIMEOUT_S,
        "a round after the restart",
    )
    table.bots.stop()
    after = unique_by_seq(table.viewer.events)[seen:]
    assert not [e for e in after if e["type"] == "table_paused"], after

    # A second SIGTERM stops at once: the round the bots left is not waited for (60 s).
    assert table.daemon.process is not None
    table.daemon.process.send_signal(signal.SIGTERM)
    wait_until(
        lambda: any(e["type"] == "rounds_held" for e in unique_by_seq(table.viewer.events)[seen:]),
        10,
        "the table closing",
    )
    assert table.daemon.kill(signal.SIGTERM) == 0


def test_a_round_that_cannot_finish_in_stop_timeout_s_is_left_to_the_journal(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    table = SimulatedTable(tmp_path, *mqtt_broker, "baccarat", 4, stop_timeout_s=1.0)
    try:
        table.daemon.start()
        wait_until(lambda: table.viewer.state is not None, 30, "the table's first state")
        table.bots.start()
        wait_until(
            lambda: (table.viewer.state or {}).get("phase") == "DEALING",
            ROUND_TIMEOUT_S,
            "dealing",
        )
        table.bots.stop()  # nobody deals any more: the round cannot finish
        in_play = table.viewer.state["round"]["id"]
        assert table.daemon.kill(signal.SIGTERM) == 0
        assert "did not finish within stop_timeout_s" in table.daemon.log_of_this_start()
        table.daemon.start()
        wait_until(
            lambda: (
                (state := table.viewer.state or {}).get("pause") is not None
                and state["pause"]["reason"] == "recovered"
            ),
            30,
            "the recovered pause",
        )
        assert table.viewer.state["round"]["id"] == in_play
        assert table.viewer.state["holds"] == []
    finally:
        table.close()
