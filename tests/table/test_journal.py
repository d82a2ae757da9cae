"""The journal: hash-chained rows committed before they take effect, verified, replayed."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from controller.kernel.cards import parse_card
from controller.kernel.errors import ConfigurationError, JournalError
from controller.service.journal import GENESIS_HASH, Journal, row_hash
from controller.service.journaled_table import JournaledTable, export_round, replay
from controller.table.checkpoint import encode_state
from controller.table.effects import EventRejected, PublishEvent
from controller.table.events import (
    EVENT_KINDS,
    CameraOffline,
    CameraOnline,
    CameraRead,
    CardDrawn,
    CardMisread,
    CardPictured,
    CardsLost,
    Checkpoint,
    ControllerStarted,
    ControllerStopping,
    CutCardDrawn,
    DealerSignedIn,
    DealerSignedOut,
    PlatformDecided,
    RoundRequested,
    SettingsChanged,
    ShoeFault,
    ShoeFaultCleared,
    ShoeLockChanged,
    ShoeOffline,
    ShoeOnline,
    SupervisorCommanded,
    TimerExpired,
    check_event,
    decode_event,
    encode_event,
)
from controller.table.state import Phase, TableState
from tests.table.driver import Driver, config_for, play_rounds, shuffled_shoe

ONE_OF_EACH = [
    CardDrawn(parse_card("AS"), 7, 1.5),
    CardDrawn(parse_card("TD"), 8, 1.6, "banker"),
    CutCardDrawn(None, 2.0),
    CardMisread(3, 2.5),
    CardsLost((4, 5), 3.0),
    ShoeFault("E1", "jam", 3.5),
    ShoeFaultCleared("E1", 3.7),
    ShoeLockChanged(True, 4.0),
    ShoeOnline("/dev/ttyUSB0", 4.5),
    ShoeOffline("/dev/ttyUSB0", "gone", 5.0),
    CameraRead("player", parse_card("TD"), 5.5),
    CameraRead("player", None, 6.0),
    TimerExpired(3, 6.5),
    PlatformDecided(1, "play", 1, 1, "H", 7.0),
    SupervisorCommanded(
        "c1", "resume", "sam", "supervisor", 7.5, "", "enter_card", parse_card("KH")
    ),
    RoundRequested("r1", "platform", 8.0, 3),
    ControllerStarted(8.5),
    CameraOnline("rtsp://cam", 1920, 1080, 9.0),
    CameraOffline("rtsp://cam", "stream ended", 2.0, 9.5),
    SettingsChanged(12.0, 8.0, 45.0, 1, True, 10.0),
    DealerSignedIn("d1", "D-1043", "dealer7", "dealer", 10.5),
    DealerSignedOut("d2", "alice", "supervisor", 11.0),
    ControllerStopping(11.5),
    CardPictured(4, 17, "card", "dealer", "dealer.card2", True, "ab" * 32, 521, "image/jpeg", 12.0),
    CardPictured(4, 19, "settled", None, None, False, "cd" * 32, 80211, "image/jpeg", 12.5),
    Checkpoint(encode_state(TableState()), 0, 12.0),
]


def test_every_event_kind_round_trips_through_its_encoding() -> None:
    assert {type(event).__name__ for event in ONE_OF_EACH} == set(EVENT_KINDS)
    for event in ONE_OF_EACH:
        kind, fields = encode_event(event)
        assert decode_event(kind, fields) == event
        check_event(event)


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        ("Nonsense", {}),
        ("CardDrawn", {"card": "ZZ", "sequence": None, "at": 1.0}),
        ("CardDrawn", {"card": "AS", "at": 1.0}),
        ("TimerExpired", {"timer_id": "3", "at": 1.0}),
        ("TimerExpired", {"timer_id": True, "at": 1.0}),
        ("CardsLost", {"sequences": 4, "at": 1.0}),
    ],
)
def test_decoding_a_bad_row_is_a_journal_error(kind: str, fields: dict) -> None:
    with pytest.raises(JournalError):
        decode_event(kind, fields)


def test_an_event_with_a_field_of_the_wrong_type_is_refused_before_the_journal(
    tmp_path: Path,
) -> None:
    table, _ = JournaledTable.open(config_for("baccarat", tmp_path), at=1.0)
    try:
        rows = table.journal.last_seq
        (effect,) = table.handle(TimerExpired(True, 2.0))  # type: ignore[arg-type]
        assert isinstance(effect, EventRejected)
        (effect,) = table.handle(object())
        assert isinstance(effect, EventRejected)
        assert table.journal.last_seq == rows
    finally:
        table.close()


def test_rows_chain_and_are_durable(tmp_path: Path) -> None:
    path = tmp_path / "j.journal"
    with Journal(path) as journal:
        entries = [journal.append(event) for event in ONE_OF_EACH]
        mode = journal._db.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = journal._db.execute("PRAGMA synchronous").fetchone()[0]
    assert mode == "wal" and synchronous == 2  # 2 = FULL
    assert entries[0].prev_hash == GENESIS_HASH
    for previous, entry in itertools.pairwise(entries):
        assert entry.prev_hash == previous.hash
        assert entry.hash == row_hash(entry.seq, entry.kind, entry.body, entry.prev_hash)
    with Journal(path, read_only=True) as journal:
        assert journal.verify() == len(ONE_OF_EACH)
        assert [entry.event() for entry in journal.entries()] == ONE_OF_EACH
        with pytest.raises(JournalError, match="read-only"):
            journal.append(ONE_OF_EACH[0])


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        ("UPDATE events SET body = replace(body, 'AS', 'AH') WHERE seq = 1", "row 1 was altered"),
        ("DELETE FROM events WHERE seq = 4", "row 4 is missing"),
        ("UPDATE events SET prev_hash = hash WHERE seq = 6", "row 6 does not chain"),
    ],
)
def test_verify_finds_an_edited_or_removed_row(tmp_path: Path, tamper: str, message: str) -> None:
    path = tmp_path / "j.journal"
    with Journal(path) as journal:
        for event in ONE_OF_EACH:
            journal.append(event)
    with sqlite3.connect(path) as db:
        db.execute(tamper)
    with Journal(path, read_only=True) as journal, pytest.raises(JournalError, match=message):
        journal.verify()


def test_a_journal_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.journal"
    Journal(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(JournalError, match="schema version 99"):
        Journal(path)


def test_restart_replays_to_the_same_state_and_pauses_a_round_recovered(tmp_path: Path) -> None:
    config = config_for("blackjack-classic", tmp_path)
    table, _ = JournaledTable.open(config, at=1.0)
    driver = Driver(table)
    driver.new_shoe()
    driver.open_and_close_betting(boxes=2)
    driver.draw("9S", "5C", "7D")
    before = table.machine.snapshot()
    rows = table.journal.last_seq
    table.close()

    with Journal(config.journal_path, read_only=True) as journal:
        assert journal.verify() == rows
        assert replay(journal, config).snapshot() == before

    table, effects = JournaledTable.open(config, at=5_000.0)
    assert any(getattr(effect, "name", "") == "table_paused" for effect in effects)
    try:
        assert table.journal.last_seq == rows + 1  # the restart itself is journaled
        assert table.machine.state.phase is Phase.PAUSED
        assert table.machine.state.pause.reason.value == "recovered"
        driver = Driver(table, now=5_000.0)
        # No shoe said it accounts for every card drawn while the table was down.
        assert not driver.command("resume").ok
        assert driver.command("resume", resolution="no_cards_drawn").ok
        assert driver.expected_position() == "box1"  # after box1, box2 and the hole card
        driver.draw("2H")
        assert driver.machine.state.round_id == 1
    finally:
        table.close()


def test_round_and_shoe_ids_never_repeat_across_restarts(tmp_path: Path) -> None:
    config = config_for("baccarat", tmp_path)
    shoe = shuffled_shoe(2)[3:]
    seen_rounds: list[int] = []
    seen_shoes: list[int] = []
    for restart in range(3):
        table, _ = JournaledTable.open(config, at=10_000.0 * (restart + 1))
        driver = Driver(table, now=10_000.0 * (restart + 1))
        try:
            if driver.phase is Phase.PAUSED:
                driver.command("cancel")
            driver.new_shoe() if driver.phase is Phase.AWAITING_SHUFFLE else None
            driver.open_and_close_betting()
            seen_rounds.append(driver.machine.state.round_id)
            driver.draw(shoe.pop(0), shoe.pop(0))  # mid-round when the process "dies"
            assert driver.command("end_shoe").ok is False
            seen_shoes.append(driver.machine.state.shoe_id)
        finally:
            table.close()
    assert seen_rounds == [1, 2, 3]
    assert seen_shoes == [1, 1, 1]


def test_a_journal_replays_only_under_the_settings_it_was_written_with(tmp_path: Path) -> None:
    table, _ = JournaledTable.open(config_for("baccarat", tmp_path), at=1.0)
    table.close()
    with pytest.raises(ConfigurationError, match="start a new journal"):
        JournaledTable.open(config_for("blackjack-21", tmp_path), at=2.0)


def test_export_gives_a_rounds_whole_history(tmp_path: Path) -> None:
    config = config_for("baccarat", tmp_path)
    table, _ = JournaledTable.open(config, at=1.0)
    try:
        play_rounds(Driver(table), rounds=2)
        with Journal(config.journal_path, read_only=True) as journal:
            first = export_round(journal, config, 1)
            second = export_round(journal, config, 2)
            assert export_round(journal, config, 3) == []
    finally:
        table.close()
    assert [line["kind"] for line in first] == ["RoundRequested", "TimerExpired"] + [
        "CardDrawn"
    ] * 4
    assert first[-1]["effects"][1]["name"] == "round_settled"
    assert [line["kind"] for line in second][-1] == "SupervisorCommanded"
    assert second[-1]["event"]["by"] == "sam"


def test_a_second_writer_on_the_same_journal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.journal"
    with Journal(path) as first, Journal(path) as second:
        first.append(ONE_OF_EACH[0])
        with pytest.raises(JournalError, match="cannot append"):
            second.append(ONE_OF_EACH[1])
        first.append(ONE_OF_EACH[1])
    with Journal(path, read_only=True) as journal:
        assert journal.verify() == 2


def test_operational_settings_change_under_a_living_journal_from_the_next_round(
    tmp_path: Path,
) -> None:
    table, _ = JournaledTable.open(config_for("baccarat", tmp_path, betting_s=15.0), at=1.0)
    driver = Driver(table, now=2.0)
    try:
        driver.new_shoe()
        driver.open_and_close_betting()  # a round in progress when the process stops
    finally:
        table.close()
    changed = config_for("baccarat", tmp_path, betting_s=5.0, dealer_idle_s=30.0)
    table, effects = JournaledTable.open(changed, at=100.0)
    driver = Driver(table, now=101.0)
    try:
        (notice,) = [
            e for e in effects if isinstance(e, PublishEvent) and e.name == "settings_changed"
        ]
        assert notice.payload["betting_s"] == 5.0
        assert notice.payload["applies"] == "next_round"
        # The recovered round keeps the settings it opened with.
        assert table.machine.settings.betting_s == 15.0
        assert driver.command("cancel").ok
        assert table.machine.settings.betting_s == 5.0
        answer = driver.request_round()
        assert answer.ok
        (opened,) = driver.published_events("round_opened")
        assert opened["betting_closes_at"] == pytest.approx(driver.now + 5.0)
        live = table.machine.snapshot()
    finally:
        table.close()
    # The change is a journaled event: a replay reaches the same state, and opening again
    # with the same settings journals no second change.
    with Journal(changed.journal_path, read_only=True) as journal:
        assert [entry.kind for entry in journal.entries()].count("SettingsChanged") == 1
        started_with = config_for("baccarat", betting_s=15.0).operational()
        assert replay(journal, changed, started_with).snapshot() == live
    table, effects = JournaledTable.open(changed, at=200.0)
    table.close()
    assert not [e for e in effects if isinstance(e, PublishEvent) and e.name == "settings_changed"]
