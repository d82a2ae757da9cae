"""Checkpoints: at a shoe's end the table journals its whole state, and a start replays only
the rows after the last checkpoint. Starting there must give exactly what a full replay gives:
the machine's state, the count of published messages, and the effects of every later row."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.games.registry import GAME_IDS
from controller.kernel.errors import JournalError
from controller.service.journal import Journal, JournalEntry, canonical_json, row_hash
from controller.service.journaled_table import (
    JournaledTable,
    config_of,
    replay,
    replay_counting,
)
from controller.table.checkpoint import decode_state, encode_state
from controller.table.config import TableConfig
from controller.table.effects import Effect
from controller.table.events import Checkpoint, ControllerStarted, SupervisorCommanded
from controller.table.state import Phase
from controller.tools.cli import main
from controller.tools.crash_runner import START_TIME, next_event
from tests.table.test_journal_formats import OLD_JOURNALS


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder in memory where there is one: the journal's flush per row (synchronous=FULL)
    costs nothing there, and these tests append a few thousand rows."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm) as folder:
        yield Path(folder)


def take(table: JournaledTable, event: object) -> None:
    """As the runtime does: the event, then the checkpoint a shoe's end asks for."""
    table.handle(event)
    checkpoint = table.take_checkpoint()
    if checkpoint is not None:
        table.handle(checkpoint)


def end_the_shoe(table: JournaledTable) -> None:
    """A supervisor cancels the round in play, if any, and ends the shoe."""
    for number in range(3):
        if table.machine.state.phase is Phase.AWAITING_SHUFFLE:
            return
        at = START_TIME + table.journal.last_seq + 1
        command = "end_shoe" if table.machine.round_in_progress() is None else "cancel"
        take(table, SupervisorCommanded(f"end{number}", command, "s", "supervisor", at, "test"))


def play(table: JournaledTable, seed: int, until_checkpoints: int) -> None:
    """Feed the crash runner's table until the journal holds that many more checkpoints,
    as the runtime does: each event, then the checkpoint a shoe's end asks for."""
    journal = table.journal
    wanted = count_checkpoints(journal) + until_checkpoints
    event: object = ControllerStarted(START_TIME + journal.last_seq + 1)
    while count_checkpoints(journal) < wanted:
        take(table, event)
        event = next_event(table.machine, seed, journal.last_seq + 1)
    # A few rounds of the next shoe: the start replays them after the checkpoint.
    for _ in range(40):
        table.handle(event)
        event = next_event(table.machine, seed, journal.last_seq + 1)


def count_checkpoints(journal: Journal) -> int:
    return sum(1 for _ in journal.newest_first({"Checkpoint"}))


def replayed(journal: Journal, config: TableConfig, from_checkpoint: bool) -> dict[str, Any]:
    """What a replay gives: the state, the messages counted, each row's effects."""
    effects: dict[int, list[dict[str, Any]]] = {}

    def observe(entry: JournalEntry, said: list[Effect]) -> None:
        effects[entry.seq] = [effect.to_dict() for effect in said]

    machine, published = replay_counting(
        journal,
        config,
        config_of(journal).operational(),
        observe,
        from_checkpoint=from_checkpoint,
    )
    return {"snapshot": machine.snapshot(), "published": published, "effects": effects}


def assert_same_from_checkpoint(journal: Journal, config: TableConfig) -> None:
    whole = replayed(journal, config, from_checkpoint=False)
    begun = replayed(journal, config, from_checkpoint=True)
    checkpoint = journal.last_checkpoint()
    assert checkpoint is not None
    assert min(begun["effects"]) == checkpoint.seq
    assert begun["snapshot"] == whole["snapshot"]
    assert begun["published"] == whole["published"]
    assert begun["effects"] == {
        seq: said for seq, said in whole["effects"].items() if seq >= checkpoint.seq
    }


@pytest.mark.parametrize("game", GAME_IDS)
def test_a_fresh_journal_of_several_shoes_starts_from_its_last_checkpoint(
    game: str, fast_dir: Path
) -> None:
    config = TableConfig(table_id="t1", game=game, journal_path=fast_dir / "t1.journal")
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    try:
        play(table, seed=7, until_checkpoints=2)
        live = table.machine.snapshot()
        published = table.published
    finally:
        table.close()
    with Journal(config.journal_path, read_only=True) as journal:
        assert count_checkpoints(journal) == 2
        # Each checkpoint follows the row that ended its shoe, and holds the state after it.
        for entry in journal.newest_first({"Checkpoint"}):
            event = entry.event()
            assert isinstance(event, Checkpoint)
            assert decode_state(event.state).phase is Phase.AWAITING_SHUFFLE
            assert encode_state(decode_state(event.state)) == event.state
        assert_same_from_checkpoint(journal, config)
        assert replay(journal, config).snapshot() == live
    reopened, _ = JournaledTable.open(config, at=START_TIME, start=False)
    try:
        assert reopened.machine.snapshot() == live
        assert reopened.published == published
    finally:
        reopened.close()


def test_journal_verify_checks_each_checkpoint_against_the_replay(
    fast_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = TableConfig(table_id="t1", game="baccarat", journal_path=fast_dir / "t1.journal")
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    try:
        play(table, seed=9, until_checkpoints=2)
    finally:
        table.close()
    assert main(["journal", "verify", str(config.journal_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checkpoints"] == 2
    assert main(["journal", "verify", str(config.journal_path)]) == 0
    assert "2 checkpoint(s), each the state the rows before it give" in capsys.readouterr().out


@pytest.mark.parametrize(("encoding", "journal_path", "revision"), OLD_JOURNALS)
def test_an_old_journal_replays_whole_then_checkpoints_its_next_shoe(
    encoding: int, journal_path: Path, revision: int, fast_dir: Path
) -> None:
    copy = fast_dir / journal_path.name
    shutil.copy(journal_path, copy)
    with Journal(copy, read_only=True) as journal:
        config = dataclasses.replace(config_of(journal), journal_path=copy)
        if encoding < 7:
            # No checkpoint: a start replays it whole, to the very state of a full replay.
            assert journal.last_checkpoint() is None
            assert replayed(journal, config, True) == replayed(journal, config, False)
        else:
            assert_same_from_checkpoint(journal, config)
        rows = journal.last_seq
    table, _ = JournaledTable.open(config, at=START_TIME + rows + 1)
    try:
        end_the_shoe(table)
        play(table, seed=3, until_checkpoints=0)
        live = table.machine.snapshot()
    finally:
        table.close()
    with Journal(copy, read_only=True) as journal:
        checkpoint = journal.last_checkpoint()
        assert checkpoint is not None and checkpoint.seq > rows
        assert_same_from_checkpoint(journal, config)
        assert replayed(journal, config, True)["snapshot"] == live


def rewrite_row(path: Path, seq: int, body: dict[str, Any]) -> None:
    """Rewrite row ``seq``'s body and rechain every row after it, as a forger would."""
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT seq, kind, body, prev_hash FROM events WHERE seq >= ? ORDER BY seq", (seq,)
    ).fetchall()
    prev = rows[0][3]
    for number, kind, text, _prev in rows:
        text = canonical_json(body) if number == seq else text
        digest = row_hash(number, kind, text, prev)
        db.execute(
            "UPDATE events SET body=?, prev_hash=?, hash=? WHERE seq=?",
            (text, prev, digest, number),
        )
        prev = digest
    db.commit()
    db.close()


def test_a_checkpoint_that_lies_fails_the_full_replay_and_verify(
    fast_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = TableConfig(table_id="t1", game="baccarat", journal_path=fast_dir / "t1.journal")
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    try:
        play(table, seed=5, until_checkpoints=1)
    finally:
        table.close()
    with Journal(config.journal_path, read_only=True) as journal:
        checkpoint = journal.last_checkpoint()
        assert checkpoint is not None
        body = json.loads(checkpoint.body)
    body["state"]["rounds_started"] += 1  # a round that never was
    rewrite_row(config.journal_path, checkpoint.seq, body)
    with Journal(config.journal_path, read_only=True) as journal:
        assert journal.verify() == journal.last_seq  # the chain holds: it was rechained
        with pytest.raises(JournalError, match=f"row {checkpoint.seq} is a checkpoint"):
            replay(journal, config)
    assert main(["journal", "verify", str(config.journal_path)]) == 1
    assert f"row {checkpoint.seq} is a checkpoint that does not hold" in capsys.readouterr().err


def test_the_table_refuses_a_checkpoint_that_is_not_its_state(tmp_path: Path) -> None:
    config = TableConfig(table_id="t1", game="baccarat", journal_path=tmp_path / "t1.journal")
    table, _ = JournaledTable.open(config, at=START_TIME)
    try:
        rows = table.journal.last_seq
        state = encode_state(table.machine.state)
        [refusal] = table.handle(Checkpoint({**state, "shoes_started": 9}, 0, START_TIME))
        assert refusal.to_dict()["effect"] == "EventRejected"
        assert table.journal.last_seq == rows
        assert table.take_checkpoint() is None  # no shoe ended
    finally:
        table.close()
