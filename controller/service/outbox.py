"""The events a table published, numbered and kept, so that nothing is lost on the way out.

The journal holds what the table *took*; the outbox holds what it *said*: every message of
``.../events`` under its ``seq``, and the answer to every request, by the request's key.
Both follow from the journal alone (replaying it through the machine gives the same effects
in the same order, so the same numbers), which is what makes the outbox safe:

- a crash between the journal's commit and the outbox's is repaired at the next start by
  replaying the rows the outbox has not seen (:attr:`Outbox.last_journal_seq`);
- a lost or deleted outbox is rebuilt whole the same way;
- a broker that was away gets every event from ``delivered_seq + 1`` on, from this file, not
  from the MQTT client's memory, which dies with the process. How far the broker
  acknowledged is noted in memory as the acknowledgements come (:meth:`Outbox.note_delivered`)
  and written with the next commit, or by the publisher at rest, never in a write of its own
  while cards come: a crash sends the events acknowledged since the last written mark again,
  which consumers drop by ``seq``.

It keeps every event message of the journal's life, so that an ``events`` request from any
``seq`` is answered whole; it grows as the journal does. The answers to requests are kept
too (a repeated request is answered again, and ``audit`` shows each command's answer).

It lives beside the journal (``t1.journal`` → ``t1.outbox``) in its own SQLite file: the
journal stays the regulator's evidence, and this is delivery bookkeeping. It records the
journal's epoch (:meth:`Outbox.bind_epoch`): an outbox found beside another journal is
rebuilt from that journal. A write that fails (a full disk) raises
:class:`~controller.service.journal_files.JournalWriteError`, as the journal's do: the daemon stops.
One writer of messages (the table's thread); the publisher writes the delivery mark at rest;
readers on other threads (the publisher, catch-up requests) share its lock.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Final

from controller.kernel.errors import JournalError
from controller.service.journal_files import JournalWriteError, is_write_failure

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY,
    journal_seq INTEGER NOT NULL,
    body BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, journal_seq INTEGER NOT NULL,
    body BLOB NOT NULL);
"""
OUTBOX_FORMAT: Final = 1

logger = logging.getLogger(__name__)


def outbox_path(journal_path: Path) -> Path:
    return Path(journal_path).with_suffix(".outbox")


def open_outbox(path: Path) -> Outbox:
    """The outbox at ``path``; one that cannot be read (damaged by a power cut) is moved
    aside and started afresh, to be rebuilt from the journal."""
    try:
        outbox = Outbox(path)
        outbox.check()
        return outbox
    except JournalWriteError:
        raise  # a full disk is no damage: moving the file aside would not make room
    except JournalError as error:
        aside = path.with_name(path.name + ".damaged")
        logger.warning(
            "the outbox %s cannot be used (%s): rebuilding it from the journal", path, error
        )
        for suffix in ("", "-wal", "-shm"):
            damaged = Path(str(path) + suffix)
            if damaged.exists():
                damaged.replace(Path(str(aside) + suffix))
        return Outbox(path)


class Outbox:
    """Numbered event messages and request answers, in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # Derived data, rebuilt from the journal (synchronous=FULL there) whenever it
            # falls behind or is lost: no fsync here, so the outbox adds no disk flush, and
            # its checkpoints no stall, to a card's way out. A power cut that damages it
            # costs a rebuild (see open_outbox), never an event.
            self._db.execute("PRAGMA synchronous=OFF")
            self._db.executescript(_SCHEMA)
            found = self._meta("format")
            if found is None:
                self._set_meta("format", str(OUTBOX_FORMAT))
            elif found != str(OUTBOX_FORMAT):
                raise JournalError(f"{self.path} has outbox format {found}, not {OUTBOX_FORMAT}")
            row = self._db.execute("SELECT MAX(seq), MAX(journal_seq) FROM messages").fetchone()
            answered = self._db.execute("SELECT MAX(journal_seq) FROM answers").fetchone()
        except sqlite3.Error as error:
            if is_write_failure(error):
                raise JournalWriteError("open the outbox", self.path, error) from error
            raise JournalError(f"cannot open the outbox {self.path}: {error}") from error
        # The last number given, kept in meta too: the messages before a checkpoint may be
        # missing (never rebuilt by a start that began at the checkpoint).
        self.last_seq: int = max(row[0] or 0, int(self._meta("last_seq") or 0))
        self.last_journal_seq: int = max(
            row[1] or 0, answered[0] or 0, int(self._meta("journal_seq") or 0)
        )
        self._delivered = int(self._meta("delivered_seq") or 0)
        self._delivered_saved = self._delivered
        self._batch: list[tuple[int, int, bytes]] = []
        self._answer_batch: list[tuple[str, int, bytes]] = []

    def check(self) -> None:
        """JournalError unless SQLite finds the file sound."""
        with self._lock:
            try:
                (result,) = self._db.execute("PRAGMA quick_check").fetchone()
            except sqlite3.Error as error:
                raise JournalError(f"{self.path} cannot be checked: {error}") from error
        if result != "ok":
            raise JournalError(f"{self.path} is damaged: {result}")

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def _write_failed(self, error: sqlite3.Error) -> JournalWriteError:
        return JournalWriteError("write the outbox", self.path, error)

    @property
    def journal_epoch(self) -> str | None:
        """The epoch of the journal these messages follow from (None: not recorded yet)."""
        with self._lock:
            return self._meta("journal_epoch")

    def bind_epoch(self, epoch: str) -> None:
        """Record that this outbox follows from the journal of ``epoch``."""
        with self._lock:
            if self._meta("journal_epoch") == epoch:
                return
            try:
                self._set_meta("journal_epoch", epoch)
            except sqlite3.Error as error:
                raise self._write_failed(error) from error

    # -- writing (the table's thread) ---------------------------------------------------

    def next_seq(self) -> int:
        return self.last_seq + len(self._batch) + 1

    def add(self, seq: int, journal_seq: int, body: bytes) -> None:
        """Queue event message ``seq`` (the next number) for the current commit."""
        if seq != self.next_seq():
            raise JournalError(f"outbox: event {seq} out of order (expected {self.next_seq()})")
        self._batch.append((seq, journal_seq, body))

    def carry_on_from(self, seq: int) -> None:
        """Number the next message ``seq + 1`` when this outbox is behind (it lacks the
        messages before a checkpoint that a start began at): written with the next commit."""
        if self._batch:
            raise JournalError("outbox: a checkpoint in the middle of a row's messages")
        self.last_seq = max(self.last_seq, seq)

    def add_answer(self, key: str, journal_seq: int, body: bytes) -> None:
        self._answer_batch.append((key, journal_seq, body))

    def commit(self, journal_seq: int) -> None:
        """Write what one journal row caused, all or nothing."""
        with self._lock:
            try:
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT INTO messages (seq, journal_seq, body) VALUES (?, ?, ?)", self._batch
                )
                self._db.executemany(
                    "INSERT OR IGNORE INTO answers (key, journal_seq, body) VALUES (?, ?, ?)",
                    self._answer_batch,
                )
                self._set_meta("journal_seq", str(journal_seq))
                last = self._batch[-1][0] if self._batch else self.last_seq
                self._set_meta("last_seq", str(last))
                # How far the broker acknowledged goes with the commit: no write of its own.
                delivered = self._delivered
                if delivered != self._delivered_saved:
                    self._set_meta("delivered_seq", str(delivered))
                self._db.execute("COMMIT")
            except sqlite3.Error as error:
                # SQLite may have rolled back already (a full disk does): a ROLLBACK then
                # fails too, and must not hide the error that matters.
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise self._write_failed(error) from error
            self._delivered_saved = delivered
        if self._batch:
            self.last_seq = self._batch[-1][0]
        self.last_journal_seq = max(self.last_journal_seq, journal_seq)
        self._batch.clear()
        self._answer_batch.clear()

    def store_answer(self, key: str, journal_seq: int, body: bytes) -> None:
        """Keep an answer now (one that no journal row's effects carry: a decision's)."""
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR IGNORE INTO answers (key, journal_seq, body) VALUES (?, ?, ?)",
                    (key, journal_seq, body),
                )
            except sqlite3.Error as error:
                raise self._write_failed(error) from error

    def reset(self) -> None:
        """Forget everything (the outbox belongs to another journal): rebuilt by replay."""
        with self._lock:
            try:
                self._db.execute("DELETE FROM messages")
                self._db.execute("DELETE FROM answers")
                self._db.execute("DELETE FROM meta WHERE key != 'format'")
            except sqlite3.Error as error:
                raise self._write_failed(error) from error
        self.last_seq = self.last_journal_seq = self._delivered = self._delivered_saved = 0

    # -- reading (any thread) ---------------------------------------------------------------

    def get(self, seq: int) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT body FROM messages WHERE seq=?", (seq,)).fetchone()
        return None if row is None else bytes(row[0])

    def since(self, seq: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` event messages after ``seq``, in order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, body FROM messages WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit)
            ).fetchall()
        return [(int(number), bytes(body)) for number, body in rows]

    def answer(self, key: str) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT body FROM answers WHERE key=?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    @property
    def delivered_seq(self) -> int:
        """The last event the broker acknowledged, with every one before it."""
        return self._delivered

    def note_delivered(self, seq: int) -> None:
        """The broker acknowledged every event up to ``seq``: kept in memory, written with
        the next :meth:`commit` or :meth:`save_delivered` (any thread, no SQLite write).
        A crash before that sends the events since the last written mark again, which the
        API allows (consumers drop repeats by ``seq``)."""
        self._delivered = seq

    def save_delivered(self, behind: int = 1) -> None:
        """Write the noted mark now if it is at least ``behind`` events past the written one."""
        with self._lock:
            delivered = self._delivered
            if delivered - self._delivered_saved < behind:
                return
            try:
                self._set_meta("delivered_seq", str(delivered))
            except sqlite3.Error as error:
                raise self._write_failed(error) from error
            self._delivered_saved = delivered

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            # On a full disk SQLite keeps the write-ahead log for the next open: no error.
            self._db.close()
