"""The outbox follows from the journal alone: a restart keeps it, a lost one is rebuilt the
same, and a crash between the journal's commit and the outbox's is repaired at the next
start. (No broker here: the daemon is built but its MQTT link never started.)"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from controller.kernel.cards import parse_card
from controller.service.config import LivetableConfig, MqttConfig
from controller.service.daemon import TableDaemon
from controller.service.outbox import outbox_path
from controller.table.config import TableConfig
from controller.table.events import CardDrawn, RoundRequested, SupervisorCommanded, TimerExpired
from controller.table.state import Phase

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
    daemon.close()


@pytest.fixture
def played(tmp_path: Path) -> list[tuple[int, int, bytes]]:
    daemon = TableDaemon(config(tmp_path), shoe=False)
    daemon.publications.live()
    daemon.assembled.start(at=99.0)
    play(daemon)
    assert daemon.runtime.table.machine.state.phase is Phase.SHOE_READY
    daemon.outbox.note_delivered(5)  # what a broker acknowledged, written down
    daemon.outbox.save_delivered()
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
    # The table died right after the journal's commit of that row, before the outbox's: the
    # journal has no row after it (the shoe's checkpoint among them), and the outbox is as
    # its commit of the row before left it, its meta included.
    with sqlite3.connect(tmp_path / "t1.journal") as db:
        db.execute("DELETE FROM events WHERE seq > ?", (last_journal_row,))
    with sqlite3.connect(outbox_path(tmp_path / "t1.journal")) as db:
        db.execute("DELETE FROM messages WHERE journal_seq >= ?", (last_journal_row,))
        db.execute("DELETE FROM answers WHERE journal_seq >= ?", (last_journal_row,))
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'journal_seq'", (str(last_journal_row - 1),)
        )
        db.execute(
            "UPDATE meta SET value = (SELECT MAX(seq) FROM messages) WHERE key = 'last_seq'"
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


def stored_delivered(path: Path) -> str | None:
    """The delivery mark as written in the outbox file (not as held in memory)."""
    with sqlite3.connect(outbox_path(path)) as db:
        row = db.execute("SELECT value FROM meta WHERE key = 'delivered_seq'").fetchone()
    return None if row is None else str(row[0])


def test_the_delivery_mark_goes_with_the_next_commit_or_is_saved_at_rest(tmp_path: Path) -> None:
    journal = tmp_path / "t1.journal"
    daemon = TableDaemon(config(tmp_path), shoe=False)
    daemon.publications.live()
    daemon.assembled.start(at=99.0)
    runtime = daemon.runtime
    runtime.handle(SupervisorCommanded("alice/1", "new_shoe", "alice", "supervisor", 100.0))
    runtime.handle(CardDrawn(parse_card("KD"), None, 100.5))  # the burn's reveal
    published = daemon.outbox.last_seq
    assert published >= 2
    # An acknowledgement is noted, not written in a transaction of its own...
    daemon.outbox.note_delivered(published - 1)
    assert daemon.outbox.delivered_seq == published - 1
    assert stored_delivered(journal) is None
    # ... but with what the next journal row causes.
    runtime.handle(CardDrawn(parse_card("4S"), None, 101.0))
    assert stored_delivered(journal) == str(published - 1)
    # At rest, the publisher writes it down; a mark not far enough behind waits.
    daemon.outbox.note_delivered(published)
    daemon.outbox.save_delivered(behind=2)
    assert stored_delivered(journal) == str(published - 1)
    daemon.outbox.save_delivered()
    assert stored_delivered(journal) == str(published)
    close(daemon)
    daemon = TableDaemon(config(tmp_path), shoe=False)
    try:
        assert daemon.outbox.delivered_seq == published
    finally:
        close(daemon)


class RecordingClient:
    """In place of the daemon's paho client: notes each publish, its topic and its thread."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, int, threading.Thread]] = []

    def publish(
        self,
        topic: str,
        payload: bytes,
        qos: int = 0,
        retain: bool = False,
        properties: object = None,
    ) -> SimpleNamespace:
        mid = len(self.sent) + 1
        self.sent.append((topic, payload, mid, threading.current_thread()))
        return SimpleNamespace(mid=mid, rc=0)


def test_a_rows_messages_leave_from_the_tables_thread_events_before_their_state(
    tmp_path: Path,
) -> None:
    """With a broker there, each journal row's events, then the state, go to the MQTT client
    on the table's own thread before it takes the next event: nothing waits for the
    publisher thread. Their acknowledgements are noted and written with the next commit."""
    journal = tmp_path / "t1.journal"
    daemon = TableDaemon(config(tmp_path), shoe=False)
    client = RecordingClient()
    daemon.link.client = client  # type: ignore[assignment]
    daemon.link.connected.set()  # as after a connect; the link's threads are not started
    daemon.publications.live()
    daemon.assembled.start(at=99.0)
    topics = daemon.topics
    handle = daemon.runtime.handle

    def handled(event: object) -> object:
        effects = handle(event)
        # Back from the event: its state is with the client already.
        last_state = next(
            body for topic, body, *_ in reversed(client.sent) if topic == topics.state
        )
        assert json.loads(last_state) == daemon.publications.state_snapshot()[1]
        return effects

    daemon.runtime.handle = handled  # type: ignore[method-assign]
    try:
        play(daemon)
        assert {thread for *_, thread in client.sent} == {threading.current_thread()}
        events = [
            (json.loads(body), mid) for topic, body, mid, _ in client.sent if topic == topics.events
        ]
        assert [event["seq"] for event, _mid in events] == list(
            range(1, daemon.outbox.last_seq + 1)
        )
        sent_up_to = 0
        for topic, body, _mid, _thread in client.sent:
            if topic == topics.events:
                sent_up_to = json.loads(body)["seq"]
            elif topic == topics.state:
                assert json.loads(body)["seq"] <= sent_up_to
        states = [json.loads(body) for topic, body, *_ in client.sent if topic == topics.state]
        assert states[-1] == daemon.publications.state_snapshot()[1]
        assert any(topic == topics.dealer for topic, *_ in client.sent)
        # The broker acknowledges every event: noted at once, written with the next commit.
        for _event, mid in events:
            daemon.link._on_publish(None, None, mid, None, None)
        assert daemon.outbox.delivered_seq == daemon.outbox.last_seq
        assert stored_delivered(journal) != str(daemon.outbox.last_seq)
        daemon.runtime.handle(RoundRequested("platform/2", "platform", 999.0))
        assert stored_delivered(journal) == str(len(events))
    finally:
        close(daemon)
