"""End to end: the real daemon (``livetable run`` as a subprocess), a shoe simulator on a real
pty, a real mosquitto, and the platform, supervisor and dealer talking to the table only over
MQTT. An independent subscriber recomputes every round from the cards it saw and checks the
published results, the ``seq`` series and the secrets."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.games.registry import BLACKJACK, GAME_IDS, game_spec
from tests.support.api_schema import validate_message
from tests.support.daemon import SimulatedTable, check_stream, gaps, unique_by_seq
from tests.support.wait import wait_until

ROUNDS = 50
PLAY_TIMEOUT_S = 240.0


@pytest.fixture
def make_table(tmp_path: Path, mqtt_broker: tuple[str, int]) -> Iterator[Any]:
    tables: list[SimulatedTable] = []

    def make(game: str, rounds: int = ROUNDS) -> SimulatedTable:
        table = SimulatedTable(tmp_path / game, *mqtt_broker, game, rounds)
        tables.append(table)
        return table

    for game in GAME_IDS:
        (tmp_path / game).mkdir(exist_ok=True)
    yield make
    for table in tables:
        table.close()


@pytest.mark.slow
@pytest.mark.parametrize("game", GAME_IDS)
def test_rounds_over_mqtt_match_the_rules_with_no_gap_and_no_secret(
    make_table: Any, game: str
) -> None:
    table = make_table(game)
    table.daemon.start()
    table.bots.start()
    try:
        wait_until(
            lambda: table.bots.done or not table.daemon.alive(),
            PLAY_TIMEOUT_S,
            f"{ROUNDS} rounds of {game}",
        )
    finally:
        table.bots.stop()
    assert table.daemon.alive(), table.daemon.log()[-3000:]
    assert not table.bots.errors, table.bots.errors[:5]
    # Let the last messages arrive, then stop the daemon as systemd would.
    wait_until(
        lambda: (
            table.viewer.state is not None
            and table.viewer.events
            and table.viewer.state["seq"] == table.viewer.events[-1]["seq"]
        ),
        10,
        "the last state",
    )
    started = time.monotonic()
    assert table.daemon.kill(signal.SIGTERM) == 0
    assert time.monotonic() - started < 2.0, "SIGTERM must stop the daemon within 2 s"
    wait_until(lambda: table.viewer.availability == "offline", 5, "availability offline")
    # The journal was closed, not abandoned: SQLite folds its write-ahead log back into the
    # journal and removes it when the last connection closes cleanly.
    journal = table.workdir / "t1.journal"
    assert journal.exists() and not journal.with_name("t1.journal-wal").exists()

    events = unique_by_seq(table.viewer.events)
    assert gaps([event["seq"] for event in events]) == []
    assert check_stream(events, game) >= ROUNDS
    # A face-down card is published without its face; a state shows it as hidden (null)
    # until the rules reveal it, and the burn cards never (the state has no place for them).
    # Every message seen, against the published contract (docs/asyncapi.yaml).
    for topic, payload in table.raw:
        validate_message(topic, payload)
    face_down = 0
    for topic, payload in table.raw:
        message = json.loads(payload) if topic.endswith(("/state", "/events")) else None
        if topic.endswith("/events") and message["type"] == "card_dealt":
            assert message["data"]["face_down"] or "card" in message["data"], message
            if message["data"]["face_down"]:
                face_down += 1
                assert "card" not in message["data"], message
        if topic.endswith("/state"):
            assert "burn" not in json.dumps(message.get("shoe")), message
    # Every blackjack round deals the dealer's hole card face down; baccarat deals none.
    assert (face_down > 0) == (game_spec(game).family == BLACKJACK), (game, face_down)
