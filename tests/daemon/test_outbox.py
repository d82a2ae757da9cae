"""The outbox follows from the journal alone: a restart keeps it, a lost one is rebuilt the
same, and a crash between the journal's commit and the outbox's is repaired at the next
start. (No broker here: the daemon is built but its MQTT link never started.)"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from controller.config import LivetableConfig, MqttConfig
from controller.daemon import TableDaemon
from controller.games.cards import parse_card
from controller.outbox import outbox_path
from controller.table.events import CardDrawn, RoundRequested, SupervisorCommanded, TimerExpired
from controller.table.state import Phase
from controller.table_config import TableConfig

CARDS = ["4S", "2H", "9D", "KD", "3C", "5H", "6S", "7C", "8D", "QS", "JH", "TC", "AD", "2S"]


def config(tmp_path: Path) -> LivetableConfig:
    return LivetableConfig(
        table=TableConfig(table_id="t1", game="baccarat", journal_path=tmp_path / "t1.journal"),
        mqtt=MqttConfig(host="127.0.0.1", port=1),
    )


def play(daemon: TableDaemon) -> None:
    """A new shoe, its burn, and one round, through the daemon's own loop."""
    runtime, now = daemon.runtime, [100.0]

    def at() -> float:
        now[0] += 1.0
        return now[0]

    runtime.handle(SupervisorCommanded("alice/1", "new_shoe", "alice", "supervisor", at()))
    cards = iter(CARDS)
    while runtime.table.machine.state.phase in (Phase.BURN_REVEAL, Phase.BURNING):
        runtime.handle(CardDrawn(parse_card(next(cards)), None, at()))
    runtime.handle(RoundRequested("platform/1", "platform", at()))
    (timer,) = runtime.table.machine.state.timers
    runtime.handle(TimerExpired(timer, at()))
    while runtime.table.machine.state.phase is Phase.DEALING:
        runtime.handle(CardDrawn(parse_card(next(cards)), None, at()))


def rows(path: Path) -> list[tuple[int, int, bytes]]:
    with sqlite3.connect(outbox_path(path)) as db:
        return db.execute("SELECT seq, journal_seq, body FROM messages ORDER BY seq").fetchall()


def close(daemon: TableDaemon) -> None:
    daemon.assembled.close()
    daemon.outbox.close()


@pytest.fixture
def played(tmp_path: Path) -> list[tuple[int, int, bytes]]:
    daemon = TableDaemon(config(tmp_path), shoe=False)
    daemon.publications.live()
    daemon.assembled.start(at=99.0)
    play(daemon)
    assert daemon.runtime.table.machine.state.phase is Phase.SHOE_READY
    daemon.outbox.set_delivered(5)  # what a broker acknowledged
    close(daemon)
    return rows(tmp_path / "t1.journal")


def test_a_restart_keeps_the_outbox_and_its_numbers(
    tmp_path: Path, played: list[tuple[int, int, bytes]]
) -> None:
    assert [seq for seq, _, _ in played] == list(range(1, len(played) + 1))
    daemon = TableDaemon(config(tmp_path), shoe=False)
    try:
        assert daemon.publications.seq == len(played)
        assert rows(tmp_path / "t1.journal") == played
        # Kept, not rebuilt: a rebuild would forget what the broker acknowledged.
        assert daemon.outbox.delivered_seq == 5
    finally:
        close(daemon)


def test_a_lost_outbox_is_rebuilt_the_same_from_the_journal(
    tmp_path: Path, played: list[tuple[int, int, bytes]]
) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(outbox_path(tmp_path / "t1.journal")) + suffix).unlink(missing_ok=True)
    daemon = TableDaemon(config(tmp_path), shoe=False)
    close(daemon)
    assert rows(tmp_path / "t1.journal") == played


def test_a_crash_between_the_two_commits_is_repaired_at_the_next_start(
    tmp_path: Path, played: list[tuple[int, int, bytes]]
) -> None:
    last_journal_row = played[-1][1]
    with sqlite3.connect(outbox_path(tmp_path / "t1.journal")) as db:
        db.execute("DELETE FROM messages WHERE journal_seq = ?", (last_journal_row,))
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'journal_seq'", (str(last_journal_row - 1),)
        )
    assert len(rows(tmp_path / "t1.journal")) < len(played)
    daemon = TableDaemon(config(tmp_path), shoe=False)
    close(daemon)
    assert rows(tmp_path / "t1.journal") == played


def test_a_damaged_outbox_is_moved_aside_and_rebuilt(
    tmp_path: Path, played: list[tuple[int, int, bytes]]
) -> None:
    path = outbox_path(tmp_path / "t1.journal")
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(b"not an SQLite file, as after a power cut" * 100)
    daemon = TableDaemon(config(tmp_path), shoe=False)
    close(daemon)
    assert rows(tmp_path / "t1.journal") == played
    assert path.with_name(path.name + ".damaged").is_file()
