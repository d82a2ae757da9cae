"""Archiving a journal's old rows into segments, so that the live file stays small.

``archive`` moves rows 1 (or the first not yet archived) up to a row before the journal's
last checkpoint into a new segment file in ``<journal>.segments/``, named
``NNNNNN-FIRST-LAST.sqlite``: a journal of the same schema holding those rows with their
numbers and hashes unchanged, and the live journal's meta (its epoch, event encoding and
binding) so that it reads on its own. The live journal keeps the rows from the cut on; its
first row's ``prev_hash`` is the last archived row's hash, so the chain runs from the first
segment through the last into the live file (:meth:`Journal.verify` checks it all).

Never a row lost: the segment is written beside under a temporary name, flushed to the disk,
renamed, flushed again (its folder too), opened and verified row for row against the live
journal; only then does one transaction delete the rows from the live journal and record
the last one archived. A failure before that transaction leaves the live journal as it was
(a stray temporary file, or a segment the next archive replaces). The live journal's last
checkpoint is never archived: a start replays from it.

Archiving takes the journal's :class:`JournalLock`, so it refuses while a table runs on the
journal (naming the daemon's pid): stop the table, archive, start it.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from controller.kernel.errors import JournalError
from controller.service.journal import (
    GENESIS_HASH,
    SEGMENT_META_KEY,
    SEGMENT_SUFFIX,
    Journal,
    create_tables,
    segment_paths,
    segments_dir,
)
from controller.service.journal_files import JournalLock, JournalWriteError, is_write_failure

# The rows copied in one INSERT batch: a year's journal is millions of rows.
_BATCH: Final = 10_000
# The live journal's meta a segment carries, so that it opens and reads on its own.
_COPIED_META: Final = ("schema_version", "event_encoding", "epoch", "table_config")


@dataclass(frozen=True, slots=True)
class Archived:
    """What :func:`archive` did: the segment written and the rows it holds."""

    segment: Path
    first: int
    last: int

    def line(self) -> str:
        return f"rows {self.first}..{self.last} archived into {self.segment}"


def archive(
    journal_path: Path, before_days: float | None = None, now: float | None = None
) -> Archived:
    """Move the journal's rows before its last checkpoint (only those older than
    ``before_days`` days, by their events' time, when given) into a new segment; JournalError
    when nothing can be, or the table holds the journal."""
    journal_path = Path(journal_path)
    if not journal_path.is_file():
        raise JournalError(f"no journal at {journal_path}")
    lock = JournalLock.acquire(journal_path)
    try:
        with Journal(journal_path) as journal:
            # Only a sound chain is archived (and this checks the segments already there).
            journal.verify()
            cut = _cut(journal, before_days, time.time() if now is None else now)
            first = journal.archived_through + 1
            if cut < first:
                raise JournalError(
                    f"nothing to archive in {journal_path}: no row before its last checkpoint"
                    + ("" if before_days is None else f" is older than {before_days:g} days")
                    + " that is not archived already"
                )
            _remove_leftovers(journal)
            segment = _write_segment(journal, first, cut)
            _check_segment(journal, segment, first, cut)
            journal.drop_archived(cut)
    finally:
        lock.release()
    return Archived(segment, first, cut)


def _cut(journal: Journal, before_days: float | None, now: float) -> int:
    """The last row to archive: the row before the last checkpoint, or the last row before
    it whose event is older than ``before_days`` days (0: none)."""
    checkpoint = journal.last_checkpoint()
    if checkpoint is None:
        raise JournalError(
            f"{journal.path} holds no checkpoint (a table journals one at each shoe's end): "
            "a start would need every row, so none can be archived"
        )
    if before_days is None:
        return checkpoint.seq - 1
    return journal.last_row_before(checkpoint.seq, now - before_days * 86_400)


def _remove_leftovers(journal: Journal) -> None:
    """Remove the segments of an archive interrupted before its delete (a crash, a power
    cut): those whose rows the journal has not recorded as archived, and so still holds."""
    for path in segment_paths(journal.path):
        with Journal(path, read_only=True) as segment:
            first = segment.first_row()
        if first is None or first[0] > journal.archived_through:
            path.unlink()


def _write_segment(journal: Journal, first: int, last: int) -> Path:
    """The rows ``first``..``last`` in a new segment file, flushed to the disk."""
    folder = segments_dir(journal.path)
    folder.mkdir(mode=0o750, exist_ok=True)
    number = len(segment_paths(journal.path)) + 1
    path = folder / f"{number:06d}-{first:09d}-{last:09d}{SEGMENT_SUFFIX}"
    if path.exists():
        raise JournalError(f"{path} exists already: it is not this journal's next segment")
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        db = sqlite3.connect(partial, isolation_level=None)
        try:
            # No write-ahead log: a segment is one self-contained file, opened immutable.
            db.execute("PRAGMA journal_mode=DELETE")
            db.execute("PRAGMA synchronous=FULL")
            create_tables(db)
            db.execute("BEGIN")
            for key in _COPIED_META:
                value = journal.meta(key)
                if value is not None:
                    db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))
            db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?)", (SEGMENT_META_KEY, journal.epoch)
            )
            batch: list[tuple[int, str, str, str, str]] = []
            for entry in journal.entries(after=first - 1):
                if entry.seq > last:
                    break
                batch.append((entry.seq, entry.kind, entry.body, entry.prev_hash, entry.hash))
                if len(batch) >= _BATCH:
                    _insert(db, batch)
            _insert(db, batch)
            db.execute("COMMIT")
        finally:
            db.close()
        # As readable as the journal, no more: the rows hold the hole cards.
        os.chmod(partial, stat.S_IMODE(journal.path.stat().st_mode))
        _fsync(partial)
        os.replace(partial, path)
        _fsync(folder)
    except sqlite3.Error as error:
        partial.unlink(missing_ok=True)
        if is_write_failure(error):
            raise JournalWriteError("write the segment", partial, error) from error
        raise JournalError(f"cannot write the segment {partial}: {error}") from error
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise JournalWriteError("write the segment", partial, error) from error
    return path


def _insert(db: sqlite3.Connection, batch: list[tuple[int, str, str, str, str]]) -> None:
    db.executemany(
        "INSERT INTO events (seq, kind, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?)", batch
    )
    batch.clear()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_segment(journal: Journal, path: Path, first: int, last: int) -> None:
    """The segment as written holds exactly rows ``first``..``last``, chained from the row
    before them and ending in the live journal's hash of row ``last``; else it is removed
    and JournalError says why (the live journal is untouched)."""
    try:
        with Journal(path, read_only=True, immutable=True) as segment:
            rows = segment.verify()
            start = segment.first_row()
            expected_prev = GENESIS_HASH if first == 1 else journal.hash_at(first - 1)
            problem = None
            if rows != last - first + 1 or start is None or start[0] != first:
                problem = f"holds {rows} rows, not rows {first}..{last}"
            elif start[1] != expected_prev:
                problem = f"does not chain to row {first - 1}"
            elif segment.head != (last, journal.hash_at(last)):
                problem = f"does not end in the journal's row {last}"
    except JournalError as error:
        problem = str(error)
    if problem is not None:
        path.unlink(missing_ok=True)
        raise JournalError(f"the segment {path} as written {problem}: nothing was archived")
