"""The outbox does not grow without bound: at each checkpoint the events the broker
acknowledged from before the checkpoint before it are deleted; what was not delivered stays."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.service.journal import Journal
from controller.service.journaled_table import JournaledTable
from controller.service.outbox import Outbox, outbox_path
from controller.service.publishing import Publications
from controller.service.runtime import TableRuntime
from controller.table.config import TableConfig
from controller.table.effects import EffectBatch
from controller.table.events import ControllerStarted
from controller.tools.crash_runner import START_TIME, next_event


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """In memory where there is one: a few thousand rows, each flushed (synchronous=FULL)."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm) as folder:
        yield Path(folder)


def play_shoes(journal_path: Path, shoes: int, acknowledged: bool) -> Outbox:
    """Play ``shoes`` shoes through the runtime and the publisher, as the daemon does; the
    broker acknowledges every event at once when ``acknowledged``."""
    config = TableConfig(table_id="t1", game="baccarat", journal_path=journal_path)
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    outbox = Outbox(outbox_path(journal_path))
    publications = Publications("t1", outbox, table.journal.epoch)
    publications.live()

    class Publish:
        def carry_out(self, batch: EffectBatch) -> None:
            publications.record(batch)
            if acknowledged:
                outbox.note_delivered(outbox.last_seq)

    runtime = TableRuntime(table, Publish())
    try:
        event: object = ControllerStarted(START_TIME)
        while table.machine.state.shoes_started <= shoes:
            runtime.handle(event)
            event = next_event(table.machine, 2, table.journal.last_seq + 1)
    finally:
        table.close()
    return outbox


def checkpoints(journal_path: Path) -> list[int]:
    with Journal(journal_path, read_only=True) as journal:
        return sorted(entry.seq for entry in journal.newest_first({"Checkpoint"}))


def stored(outbox: Outbox) -> list[tuple[int, int]]:
    db = sqlite3.connect(outbox.path)
    try:
        return db.execute("SELECT seq, journal_seq FROM messages ORDER BY seq").fetchall()
    finally:
        db.close()


def test_acknowledged_events_before_the_previous_checkpoint_are_deleted(fast_dir: Path) -> None:
    # The same play twice (it is deterministic): the broker away, then acknowledging all.
    kept_all = play_shoes(fast_dir / "away.journal", shoes=3, acknowledged=False)
    try:
        every = stored(kept_all)
        # Nothing the broker did not acknowledge is ever deleted.
        assert [seq for seq, _ in every] == list(range(1, kept_all.last_seq + 1))
    finally:
        kept_all.close()
    journal_path = fast_dir / "t1.journal"
    outbox = play_shoes(journal_path, shoes=3, acknowledged=True)
    try:
        *_, before_last, _last = checkpoints(journal_path)
        # The events since the checkpoint before the last stay (at least the last whole
        # shoe's, for catch-up requests); the older ones are gone.
        assert stored(outbox) == [row for row in every if row[1] >= before_last]
        assert len(stored(outbox)) < len(every)
        last_seq = outbox.last_seq
        assert last_seq == every[-1][0]
    finally:
        outbox.close()
    reopened = Outbox(outbox_path(journal_path))
    try:
        assert reopened.last_seq == last_seq  # the numbering goes on
    finally:
        reopened.close()
