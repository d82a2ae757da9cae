"""Archived segments: old rows move out of the live journal into segment files beside it,
unchanged; each segment verifies on its own, the chain runs from the first segment through
the live file, and every reader (a start, a full replay, verify, export) sees the same
history as before the move."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.kernel.errors import JournalError
from controller.service.journal import Journal, segment_paths, segments_dir
from controller.service.journal_files import JournalLock
from controller.service.journaled_table import JournaledTable, config_of, replay
from controller.service.segments import Archived, archive
from controller.service.signing import HeadSigner, generate_key_pair, load_signing_key
from controller.table.config import TableConfig
from controller.tools.cli import main
from controller.tools.crash_runner import START_TIME
from controller.tools.event_text import time_text
from tests.table.test_checkpoints import (  # noqa: F401 (fast_dir is a fixture)
    assert_same_from_checkpoint,
    fast_dir,
    play,
)


def played(folder: Path, checkpoints: int, seed: int = 3) -> TableConfig:
    """A journal of that many shoes' ends, and some rounds after the last."""
    config = TableConfig(table_id="t1", game="baccarat", journal_path=folder / "t1.journal")
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    try:
        play(table, seed=seed, until_checkpoints=checkpoints)
    finally:
        table.close()
    return config


def checkpoint_rows(path: Path) -> list[int]:
    with Journal(path, read_only=True) as journal:
        return sorted(entry.seq for entry in journal.newest_first({"Checkpoint"}))


def archive_through(path: Path, seq: int) -> Archived:
    """Archive the rows up to about ``seq`` by their age, as a studio would with
    --before-days: the rows older than row ``seq + 1`` by a day's clock (rows may share a
    time, so the cut may come a row or two earlier)."""
    with Journal(path, read_only=True) as journal:
        at = json.loads(next(journal.entries(after=seq)).body)["at"]
    done = archive(path, before_days=1, now=at + 86_400)
    assert seq - 5 < done.last <= seq
    return done


def rows_of(path: Path) -> list[tuple[int, str, str, str, str]]:
    with Journal(path, read_only=True) as journal:
        return [(e.seq, e.kind, e.body, e.prev_hash, e.hash) for e in journal.entries()]


def test_an_archived_journal_starts_replays_and_verifies_as_before(
    fast_dir: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = played(fast_dir, checkpoints=2)
    config.journal_path.chmod(0o640)
    before = rows_of(config.journal_path)
    assert main(["journal", "export", str(config.journal_path), "--round", "1", "--json"]) == 0
    exported = capsys.readouterr().out
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    live, published = table.machine.snapshot(), table.published
    table.close()

    done = archive(config.journal_path)
    with Journal(config.journal_path, read_only=True) as journal:
        checkpoint = journal.last_checkpoint()
        assert checkpoint is not None
        assert (done.first, done.last) == (1, checkpoint.seq - 1)
        assert journal.first_row() == (checkpoint.seq, before[checkpoint.seq - 2][4])
        # Every reader sees the same rows: from the segment, then the live file.
        assert rows_of(config.journal_path) == before
        assert journal.verify() == len(before)
        assert replay(journal, config).snapshot() == live
        assert_same_from_checkpoint(journal, config)
    [segment] = segment_paths(config.journal_path)
    assert segment == done.segment
    assert segment.stat().st_mode == config.journal_path.stat().st_mode
    assert segment.name == f"000001-{1:09d}-{done.last:09d}.sqlite"

    # The table starts from it with the same state, and carries on.
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    try:
        assert table.machine.snapshot() == live
        assert table.published == published
    finally:
        table.close()
    # It journals its start after them: the chain runs on from the live file's rows.
    table, _ = JournaledTable.open(config, at=START_TIME + 10_000)
    try:
        assert table.journal.last_seq > len(before)
    finally:
        table.close()

    assert main(["journal", "verify", str(config.journal_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["archived_through"] == done.last
    assert report["checkpoints"] >= 1
    assert main(["journal", "verify", str(segment)]) == 0
    assert f"rows 1..{done.last}, hash chain intact" in capsys.readouterr().out
    # An archived round exports as it did from the whole journal.
    assert main(["journal", "export", str(config.journal_path), "--round", "1", "--json"]) == 0
    assert capsys.readouterr().out == exported
    assert main(["journal", "rounds", str(config.journal_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["round_id"] == 1


def test_archiving_twice_makes_two_segments_that_chain(fast_dir: Path) -> None:  # noqa: F811
    config = played(fast_dir, checkpoints=2)
    first = archive_through(config.journal_path, checkpoint_rows(config.journal_path)[0] - 1)
    second = archive(config.journal_path)
    assert second.first == first.last + 1
    assert segment_paths(config.journal_path) == [first.segment, second.segment]
    with Journal(second.segment, read_only=True) as segment, Journal(first.segment) as earlier:
        assert segment.first_row() == (second.first, earlier.last_hash)
    with Journal(config.journal_path, read_only=True) as journal:
        assert journal.verify() == journal.last_seq
    # Nothing left to archive until the next checkpoint.
    with pytest.raises(JournalError, match="nothing to archive"):
        archive(config.journal_path)


def three_segments(folder: Path) -> tuple[TableConfig, list[Path]]:
    config = played(folder, checkpoints=3)
    for seq in checkpoint_rows(config.journal_path)[:2]:
        archive_through(config.journal_path, seq - 1)
    archive(config.journal_path)
    return config, segment_paths(config.journal_path)


def test_a_changed_row_in_a_segment_fails_verify_naming_it(
    fast_dir: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    config, segments = three_segments(fast_dir)
    middle = segments[1]
    db = sqlite3.connect(middle)
    seq = db.execute("SELECT seq FROM events ORDER BY seq LIMIT 1 OFFSET 3").fetchone()[0]
    db.execute("UPDATE events SET body = replace(body, '\"at\":', '\"at\": ') WHERE seq=?", (seq,))
    db.commit()
    db.close()
    assert main(["journal", "verify", str(config.journal_path)]) == 1
    error = capsys.readouterr().err
    assert f"segment {middle}: row {seq} was altered" in error
    assert main(["journal", "verify", str(middle)]) == 1
    assert f"row {seq} was altered" in capsys.readouterr().err
    assert main(["journal", "verify", str(segments[0])]) == 0
    with pytest.raises(SystemExit):
        main(["journal", "verify", str(segments[0]), "--expect-head", f"1:{'0' * 64}"])
    assert "give the live journal" in capsys.readouterr().err


def test_a_missing_middle_segment_fails_verify(
    fast_dir: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    config, segments = three_segments(fast_dir)
    with Journal(config.journal_path, read_only=True) as journal:
        live = replay(journal, config).snapshot()
    with Journal(segments[1], read_only=True) as middle:
        first, last = middle.first_row()[0], middle.last_seq  # type: ignore[index]
    segments[1].unlink()
    assert main(["journal", "verify", str(config.journal_path)]) == 1
    error = capsys.readouterr().err
    assert f"rows {first}..{last} are missing" in error
    assert segments[2].name in error
    # The last one gone too: the journal still names what it archived.
    segments[2].unlink()
    assert main(["journal", "verify", str(config.journal_path)]) == 1
    assert "are missing" in capsys.readouterr().err
    # A table starts without its segments: it replays from its last checkpoint.
    segments[0].unlink()
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    try:
        assert table.machine.snapshot() == live
    finally:
        table.close()


def test_archive_refuses_while_the_table_holds_the_journal(fast_dir: Path) -> None:  # noqa: F811
    config = played(fast_dir, checkpoints=1)
    before = rows_of(config.journal_path)
    lock = JournalLock.acquire(config.journal_path)
    try:
        with pytest.raises(JournalError, match="held by another livetable process"):
            archive(config.journal_path)
    finally:
        lock.release()
    assert rows_of(config.journal_path) == before
    assert not segments_dir(config.journal_path).exists()


def test_before_days_keeps_recent_rows(fast_dir: Path) -> None:  # noqa: F811
    config = played(fast_dir, checkpoints=1)
    with Journal(config.journal_path, read_only=True) as journal:
        checkpoint = journal.last_checkpoint()
        assert checkpoint is not None
        half = checkpoint.seq // 2
        at = json.loads(next(journal.entries(after=half - 1)).body)["at"]
    # A day after row `half`'s time: the rows before it are older than a day.
    done = archive(config.journal_path, before_days=1, now=at + 86_400 + 0.5)
    assert done.first == 1
    assert done.last < checkpoint.seq - 1
    with Journal(config.journal_path, read_only=True) as journal:
        assert journal.verify() == journal.last_seq
        assert config_of(journal).table_id == "t1"
    with pytest.raises(JournalError, match="older than 1 days"):
        archive(config.journal_path, before_days=1, now=START_TIME)


def test_signed_heads_and_a_bundle_of_an_archived_round_still_check(
    fast_dir: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = played(fast_dir, checkpoints=1)
    key = fast_dir / "t1.key"
    generate_key_pair(key)
    pub = str(fast_dir / "t1.key.pub")
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    try:
        HeadSigner(load_signing_key(key), table.journal, "t1").sign()
    finally:
        table.close()
    before = fast_dir / "before.zip"
    export = ["journal", "export", str(config.journal_path), "--round", "1", "--public-key", pub]
    assert main([*export, "--bundle", str(before)]) == 0
    done = archive(config.journal_path)
    capsys.readouterr()
    assert main(["journal", "verify", str(config.journal_path), "--public-key", pub]) == 0
    assert "signed" in capsys.readouterr().out
    after = fast_dir / "after.zip"
    assert main([*export, "--bundle", str(after)]) == 0
    assert main(["journal", "verify", "--bundle", str(after), "--public-key", pub]) == 0
    capsys.readouterr()
    # The archived round's bundle is the one the whole journal gave.
    with zipfile.ZipFile(before) as old, zipfile.ZipFile(after) as new:
        manifest = json.loads(new.read("manifest.json"))
        assert manifest == json.loads(old.read("manifest.json"))
    assert manifest["rows"][1] <= done.last


def test_an_archive_cut_off_before_its_delete_loses_nothing_and_is_redone(
    fast_dir: Path,  # noqa: F811
) -> None:
    from controller.service.segments import _write_segment

    config = played(fast_dir, checkpoints=2)
    before = rows_of(config.journal_path)
    cut = checkpoint_rows(config.journal_path)[-1] - 1
    # What a power cut leaves after the segment was written, before the delete.
    with Journal(config.journal_path) as journal:
        leftover = _write_segment(journal, 1, cut)
    assert rows_of(config.journal_path) == before
    with Journal(config.journal_path, read_only=True) as journal:
        assert journal.verify() == len(before)
    done = archive(config.journal_path)
    assert (done.first, done.last) == (1, cut)
    assert segment_paths(config.journal_path) == [done.segment]
    assert done.segment.name == leftover.name
    assert rows_of(config.journal_path) == before
    with Journal(config.journal_path, read_only=True) as journal:
        assert journal.verify() == len(before)


def test_report_reads_the_archived_rounds_and_names_those_it_cannot(
    fast_dir: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``livetable report`` over a window from archived rounds into live ones gives what the
    whole journal gave; with a segment gone it names the rounds it cannot read, never
    reporting fewer in silence, and still reports a window after them."""
    config = played(fast_dir, checkpoints=2)
    path = config.journal_path
    whole = fast_dir / "whole" / "t1.journal"
    whole.parent.mkdir()
    shutil.copyfile(path, whole)
    assert main(["journal", "rounds", str(whole), "--json"]) == 0
    rounds = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    last_checkpoint = checkpoint_rows(path)[-1]
    first = archive_through(path, checkpoint_rows(path)[0] - 1)
    done = archive(path)
    archived = [item for item in rounds if item["rows"][1] <= done.last]
    live = [item for item in rounds if item["rows"][0] > done.last]
    start, end = archived[len(archived) // 4]["opened_at"], live[len(live) // 2]["opened_at"]
    window = ["--from", utc(start), "--to", utc(end)]
    inside = [item for item in rounds if start <= item["opened_at"] < end]
    assert any(item in archived for item in inside) and any(item in live for item in inside)

    def report(journal: Path, *args: str) -> str:
        assert main(["report", str(journal), "--format", "csv", *args]) == 0
        return capsys.readouterr().out

    found = report(path, *window)
    assert found == report(whole, *window)
    settled = sum(item["outcome"] == "settled" for item in inside)
    assert rows_of_csv(found)["t1"]["rounds settled"] == str(settled)

    # The first segment moved away: its rounds, and those up to the checkpoint a report can
    # begin at, are named; nothing is reported.
    moved = first.segment.rename(fast_dir / first.segment.name)
    with Journal(path, read_only=True) as journal:
        checkpoint_at = next(journal.entries(after=last_checkpoint - 1)).fields["at"]
    unread = sum(item["rows"][0] < last_checkpoint for item in rounds)
    for args in (window, []):
        assert main(["report", str(path), "--format", "csv", *args]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        (line,) = captured.err.splitlines()
        assert line.startswith(f"livetable: error: {path}: rows 1..{first.last} are missing")
        assert f"rounds 1..{unread} (opened up to {time_text(checkpoint_at)} UTC)" in line
        assert "--from" in line
    # A window after that checkpoint is read whole from the rows that are there.
    later = ["--from", utc(checkpoint_at + 1)]
    found = report(path, *later)
    assert found == report(whole, *later)
    assert int(rows_of_csv(found)["t1"]["rounds settled"]) > 0
    # The segment back: the whole report again.
    moved.rename(first.segment)
    assert report(path, *window) == report(whole, *window)


def utc(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat()


def rows_of_csv(text: str) -> dict[str, dict[str, str]]:
    return {row["table"]: row for row in csv.DictReader(io.StringIO(text))}
