"""Nothing lost: the broker stopped in mid-round, and the daemon killed at random instants.

A subscriber with a persistent session drops repeats by ``seq`` and must end with every event
exactly once; the retained state must be the table's own (a replay of its journal)."""

from __future__ import annotations

import json
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.service.journal import Journal
from controller.service.journaled_table import config_of, machine_revision, replay
from controller.service.wire import state_message
from controller.table.events import ControllerStarted
from controller.table.machine import TableMachine
from controller.table.state import ACTIVE_PHASES
from simulators.dealer import shoe_target
from tests.support.broker import BrokerProcess, start_broker
from tests.support.daemon import SimulatedTable, check_stream, gaps, unique_by_seq
from tests.support.wait import wait_until

GAME = "baccarat"
OUTAGE_S = 10.0


@pytest.fixture
def persistent_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    broker = start_broker(tmp_path / "broker", persistence=True)
    try:
        yield broker
    finally:
        broker.stop()


def _tolerant(table: SimulatedTable) -> None:
    """Requests in flight when the daemon dies or the broker goes are never answered: the
    bots time out on them and go on, as people would (and say so in ``errors``)."""
    table.platform.response_timeout_s = table.supervisor.response_timeout_s = 3.0


def journal_state(table: SimulatedTable) -> dict[str, Any]:
    """The state a replay of the table's journal gives, as the API publishes it."""
    path = table.workdir / "t1.journal"
    with Journal(path, read_only=True) as journal:
        config = config_of(journal)
        machine = replay(journal, config, config.operational())
        head = (journal.last_seq, journal.last_hash)
        epoch = journal.epoch
    return state_message(0, machine.public_state(), None, head, epoch=epoch)


def comparable(state: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in state.items() if key not in ("seq", "at")}


@pytest.mark.slow
def test_a_broker_outage_in_mid_round_loses_no_event(
    tmp_path: Path, persistent_broker: BrokerProcess
) -> None:
    table = SimulatedTable(
        tmp_path / "table",
        persistent_broker.host,
        persistent_broker.port,
        GAME,
        rounds=6,
        subscriber_id="independent-subscriber",
        betting_s=0.2,
        dealer_idle_s=30.0,
    )
    _tolerant(table)
    try:
        table.daemon.start()
        table.bots.start()
        wait_until(lambda: table.bots.rounds_settled >= 2, 60, "two rounds")
        # Mid-round: the next round opens, betting closes, the dealer deals its first card.
        wait_until(
            lambda: (table.viewer.state or {}).get("phase") == "DEALING", 30, "a round dealing"
        )
        table.bots.stop()
        before = len(unique_by_seq(table.viewer.events))
        persistent_broker.stop()
        # The table keeps dealing while the broker is away: the dealer draws from the shoe.
        for _ in range(3):
            table.shoe.draw()
        wait_until(
            lambda: table.daemon.alive() and "lost the broker" in table.daemon.log(),
            OUTAGE_S,
            "the daemon to notice the broker is gone",
        )
        time.sleep(OUTAGE_S)  # the outage itself: its length is the scenario, not a wait
        persistent_broker.restart()
        table.bots.start()
        wait_until(lambda: table.bots.rounds_settled >= 6, 90, "six rounds in all")
        table.bots.stop()
        wait_until(
            lambda: (
                table.viewer.state is not None
                and table.viewer.events
                and table.viewer.state["seq"] == max(e["seq"] for e in table.viewer.events)
                and table.viewer.state["journal"] == journal_head(table)
            ),
            15,
            "the last state",
        )
        assert table.daemon.alive(), table.daemon.log()[-2000:]
        events = unique_by_seq(table.viewer.events)
        assert len(events) > before
        assert gaps([event["seq"] for event in events]) == []
        assert check_stream(events, GAME) >= 6
        # The cards dealt during the outage reached the subscriber, in order.
        assert comparable(table.viewer.state) == comparable(journal_state(table))
    finally:
        table.close()


def journal_head(table: SimulatedTable) -> dict[str, Any]:
    with Journal(table.workdir / "t1.journal", read_only=True) as journal:
        return {"seq": journal.last_seq, "hash": journal.last_hash}


KILLS = 50


def restarts_in_the_journal(table: SimulatedTable) -> tuple[int, int]:
    """How many times the journal records the table starting, and how many of those found
    a round (or a burn) in progress: being played, or (machine revision 4, with a shoe that
    cannot account for the cards drawn while the table was down) paused."""
    with Journal(table.workdir / "t1.journal", read_only=True) as journal:
        config = config_of(journal)
        machine = TableMachine(config, config.operational(), machine_revision(journal))
        restarts = in_a_round = 0
        for entry in journal.verified_entries():
            event = entry.event()
            if isinstance(event, ControllerStarted):
                restarts += 1
                state = machine.state
                paused_in_one = (
                    machine.revision >= 4
                    and not event.gaps_visible
                    and state.pause is not None
                    and state.pause.resume_to in ACTIVE_PHASES
                )
                in_a_round += state.phase in ACTIVE_PHASES or paused_in_one
            machine.handle(event)
    return restarts, in_a_round


def starts_logged(table: SimulatedTable) -> int:
    """How many times the daemon said it was running (after its journal's replay)."""
    return sum(1 for line in table.daemon.log().splitlines() if "running:" in line)


@pytest.mark.slow
def test_the_daemon_killed_at_random_instants_loses_no_event(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    host, port = mqtt_broker
    table = SimulatedTable(
        tmp_path / "table",
        host,
        port,
        GAME,
        rounds=10_000,
        subscriber_id="independent-subscriber",
        betting_s=0.1,
        dealer_idle_s=30.0,
    )
    _tolerant(table)
    chance = random.Random(20261201)
    recovered_pauses = drawn_while_down = 0
    try:
        table.daemon.start()
        table.bots.start()
        for _kill in range(KILLS):
            seen = len(table.viewer.events)
            # Let it play a little (a random number of events), then kill it.
            target = seen + chance.randint(1, 12)
            wait_until(lambda target=target: len(table.viewer.events) >= target, 60, "play")
            table.daemon.kill(signal.SIGKILL)
            last_before = max(event["seq"] for event in table.viewer.events)
            if chance.random() < 0.3:
                # The dealer draws the card the table last asked for while it is down; the
                # supervisor later enters it from the felt (TableBots.unseen).
                table.bots.stop()
                state = table.viewer.state or {}
                awaiting = state.get("awaiting") or {}
                if state.get("phase") == "DEALING" and awaiting.get("what") == "card":
                    emitted = table.shoe.draw(shoe_target(awaiting["position"]))
                    if emitted.card is not None:
                        table.bots.unseen.append(emitted.card)
                        drawn_while_down += 1
                table.bots.start()
            table.daemon.start()
            wait_until(
                lambda kill=_kill: starts_logged(table) == kill + 2, 30, "the restarted table"
            )
            # After each restart: the table goes on from where its journal was, and the
            # subscriber has every event exactly once so far (repeats dropped by seq).
            wait_until(
                lambda last=last_before: max(e["seq"] for e in table.viewer.events) > last,
                60,
                "an event after the restart",
            )
            assert gaps([event["seq"] for event in unique_by_seq(table.viewer.events)]) == []
            if _kill % 10 == 9:
                # Now and then the people hold still: the retained state becomes the replay
                # of the journal (the daemon's own, not a copy it kept in memory).
                table.bots.stop()
                wait_until(
                    lambda: (
                        table.viewer.state is not None
                        and comparable(table.viewer.state) == comparable(journal_state(table))
                    ),
                    15,
                    "the retained state equal to the journal's replay",
                )
                table.bots.start()
        wait_until(lambda: table.bots.rounds_settled >= 10, 120, "ten rounds in all")
        table.bots.stop()
        wait_until(
            lambda: (
                table.viewer.state is not None
                and table.viewer.state["journal"] == journal_head(table)
            ),
            15,
            "the last state",
        )
        table.daemon.kill(signal.SIGTERM)
        events = unique_by_seq(table.viewer.events)
        assert gaps([event["seq"] for event in events]) == []
        assert check_stream(events, GAME) >= 10
        # A pause a restart made (not the same pause said again after a card the supervisor
        # entered into it, which follows that card's card_dealt).
        recovered_pauses = sum(
            1
            for before, event in zip([None, *events], events, strict=False)
            if event["type"] == "table_paused"
            and event["data"]["reason"] == "recovered"
            and not (
                before is not None
                and before["type"] == "card_dealt"
                and before["data"]["source"] == "supervisor"
            )
        )
        assert recovered_pauses >= 1, "no kill landed in a round: the test proved nothing"
        # Cards drawn while the daemon was down were entered by hand, none dealt in their
        # place by a later card (check_stream: every round is the rules' for its cards).
        assert drawn_while_down >= 1, "no card was drawn while the table was down"
        assert table.bots.unseen_entered >= 1, (drawn_while_down, table.bots.errors)
        # Each restart that found a round in progress paused it as recovered: as many such
        # restarts in the journal as recovered pauses on the wire.
        restarts, in_a_round = restarts_in_the_journal(table)
        assert restarts == KILLS + 1
        assert recovered_pauses == in_a_round, (recovered_pauses, in_a_round)
        # Every start is in the journal, and the state retained is the journal's.
        assert starts_logged(table) == KILLS + 1
        assert comparable(table.viewer.state) == comparable(journal_state(table))
        assert json.dumps(table.viewer.state)  # JSON all the way
    finally:
        table.close()
