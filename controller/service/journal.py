"""The table's journal: every input event, appended before it takes effect.

One SQLite file in WAL mode with ``synchronous=FULL``, so a committed row survives a crash
of the process or of the machine. One row per event; each row carries the SHA-256 of its own
content and of the previous row's hash, so an edited, removed or reordered row breaks the
chain and :meth:`Journal.verify` says where. Replaying the rows through the same state
machine rebuilds the exact state (see :mod:`controller.service.journaled_table`).

Row hash: ``sha256(f"{seq}\\n{kind}\\n{body}\\n{prev_hash}")`` where ``body`` is the event's
fields as canonical JSON (sorted keys, no spaces) and the first row's ``prev_hash`` is 64
zeros. From event encoding 4 on, the body of every row that can hold a card also holds a
``salt``, 128 random bits drawn when the row is written: the daemon publishes every row's
hash, which without it would give away a hole or burn card to anyone trying the 52 faces
(see :data:`controller.table.events.SALTED_KINDS`).

Every journal has an **epoch**, an id given when it is created and stored in its ``meta``
table: the daemon publishes it with its state, so that a consumer who stored a ``seq`` or a
``round.id`` sees that a new journal started both series again at 1. A journal written
before epochs existed gets one at its first writable open, derived from its first rows and
the table it was bound to (:func:`derived_epoch`), so that read-only tools give the same one
before it is stored, and it never changes afterwards.

A daemon holds its journal with :class:`JournalLock` (an ``flock`` on the journal file
itself and on ``<journal>.lock`` beside it, which the kernel releases when the holder dies,
however it dies): a second daemon on the same journal, by any path to it, is refused at
once, naming the holder's pid. Read-only tools take no lock.

A write that fails (a full disk, an I/O error) raises :class:`JournalWriteError`, whose one
line names the file, SQLite's words and the free space left where the file lives.

A chain cannot show that its last rows were cut off: the rows that remain still chain. The
**head** (the last row's number and hash) is the anchor for that: the daemon publishes it in
its state as ``journal: {seq, hash}``, a platform stores it away from the table PC, and
:func:`check_head` later says whether the journal still reaches it unchanged.

A chain proves order, not authorship: whoever holds the file can rewrite a row and every
hash after it. A table with a signing key signs its head now and then
(:mod:`controller.service.signing`) and keeps each **signed head** in the table
``signed_heads`` of the same file, beside the chain rather than in it: a signature is about
the chain, so it takes no row of it (no new event kind, no change to the event encoding or
to replay), and builds that do not sign read the file as before.

Old rows may be **archived** (:mod:`controller.service.segments`): moved, unchanged, into
segment files in ``<journal>.segments/`` beside it, up to some row before the last
checkpoint. The live journal then records the last row archived (meta
``archived_through``), and a :class:`Journal` opened on it reads the segments there first,
so every reader (a full replay, an export, a signature over an archived row) sees the one
chain. A segment is a journal of the same schema marked ``segment_of`` (the epoch): it
verifies on its own from its first row's ``prev_hash``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controller.kernel.errors import JournalError
from controller.service.journal_files import (
    JournalWriteError,
    is_write_failure,
    lock_path,
    read_only_uri,
)
from controller.table.events import (
    ENCODINGS,
    EVENT_ENCODING,
    SALT_FIELD,
    SALTED_KINDS,
    decode_event,
    encode_event,
    new_salt,
)

SCHEMA_VERSION: Final = 1
GENESIS_HASH: Final = "0" * 64
EVENT_ENCODING_META_KEY: Final = "event_encoding"
EPOCH_META_KEY: Final = "epoch"
# Where the table's binding is stored (controller.service.journaled_table.CONFIG_META_KEY): part of
# what an old journal's derived epoch is made of.
_CONFIG_META_KEY: Final = "table_config"
# A journal written with an older event encoding may take new rows in the current one when
# the current one reads every old row alike (it only adds kinds, or a field whose default
# is what an old row meant: encoding 3's ``ControllerStarted.gaps_visible``, which machine
# revisions before 4 do not read): (old, new) pairs.
# Encoding 4 only adds a salt to the rows that can hold a card, which replay never reads.
# Encoding 7 only adds the checkpoint, which no older row is.
_ENCODING_UPGRADES: Final = frozenset(
    {
        (1, 2),
        (1, 3),
        (2, 3),
        (1, 4),
        (2, 4),
        (3, 4),
        (1, 5),
        (2, 5),
        (3, 5),
        (4, 5),
        (1, 6),
        (2, 6),
        (3, 6),
        (4, 6),
        (5, 6),
    }
    | {(old, 7) for old in range(1, 7)}
)
CHECKPOINT_KIND: Final = "Checkpoint"
# The seq of the last checkpoint row, kept beside the chain so that a start finds it without
# a scan of the whole table; a pointer only (the row itself is in the chain, and a pointer
# that leads to no checkpoint is ignored: the start then replays the whole journal).
CHECKPOINT_META_KEY: Final = "checkpoint_seq"
# The last row moved into a segment (rows 1 to it are in ``<journal>.segments/``).
ARCHIVED_META_KEY: Final = "archived_through"
# In a segment: the epoch of the journal it was archived from.
SEGMENT_META_KEY: Final = "segment_of"
SEGMENT_SUFFIX: Final = ".sqlite"


def segments_dir(journal_path: Path) -> Path:
    """Where a journal's archived segments are: ``t1.journal`` → ``t1.journal.segments``."""
    path = Path(journal_path)
    return path.with_name(path.name + ".segments")


def segment_paths(journal_path: Path) -> list[Path]:
    """The segment files beside a journal, in order (their names begin with their number)."""
    folder = segments_dir(journal_path)
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if path.name.endswith(SEGMENT_SUFFIX))


_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS signed_heads (
    id INTEGER PRIMARY KEY,
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL,
    time TEXT NOT NULL,
    key TEXT NOT NULL,
    signature TEXT NOT NULL
);
"""


def create_tables(db: sqlite3.Connection) -> None:
    """The journal's tables in ``db``, each created where it is missing: one schema for a
    live journal and for a segment archived from it (:mod:`controller.service.segments`),
    so that :class:`Journal` reads both."""
    db.executescript(_SCHEMA)


def row_hash(seq: int, kind: str, body: str, prev_hash: str) -> str:
    return hashlib.sha256(f"{seq}\n{kind}\n{body}\n{prev_hash}".encode()).hexdigest()


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# An old journal's epoch is derived from its first rows, up to this one (whose hash, by the
# chain, covers every row before it): rows that never change once written.
EPOCH_ROWS: Final = 16


def derived_epoch(config: str | None, prefix_hash: str) -> str:
    """The epoch of a journal written before epochs existed: a function of what it holds
    (its binding, and its first :data:`EPOCH_ROWS` rows through the hash of the last of
    them, which covers their times), so every reader derives the same one."""
    seed = f"livetable journal epoch\n{config or ''}\n{prefix_hash}"
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


def new_epoch() -> str:
    """The epoch of a new journal: 128 random bits, as 32 hex digits."""
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One row: the event's sequence number, kind and fields, and the chain's hashes."""

    seq: int
    kind: str
    body: str
    prev_hash: str
    hash: str
    encoding: int = EVENT_ENCODING
    """The event encoding the row was written with (the journal's, see :class:`Journal`)."""

    @property
    def fields(self) -> dict[str, Any]:
        """The row's body as stored: the event's fields, and its salt where it has one."""
        return json.loads(self.body)

    @property
    def salt(self) -> str | None:
        """The row's salt (see :data:`controller.table.events.SALTED_KINDS`), or None."""
        salt = self.fields.get(SALT_FIELD) if self.kind in SALTED_KINDS[self.encoding] else None
        return salt if isinstance(salt, str) else None

    def event(self) -> object:
        return decode_event(self.kind, self.fields, self.encoding)


def check_head(journal: Journal, seq: int, digest: str) -> None:
    """JournalError unless ``journal`` reaches row ``seq`` and that row's hash is ``digest``.

    Call it after :meth:`Journal.verify`: the chain then vouches for every row up to the
    head, and an anchor that matches vouches that none of them was rewritten since.
    """
    last_seq = journal.last_seq
    if last_seq < seq:
        raise JournalError(
            f"{journal.path} ends at row {last_seq}, before the expected head row {seq}: "
            f"{seq - last_seq} row(s) are missing (the journal was truncated or replaced)"
        )
    found = journal.hash_at(seq)
    if found != digest.lower():
        raise JournalError(
            f"{journal.path} row {seq} has hash {found}, not the expected {digest.lower()}: "
            "the history up to the expected head was rewritten"
        )


class Journal:
    """An append-only, hash-chained event log in one SQLite file.

    ``append`` returns only once the row is committed to disk. Opening a journal checks its
    schema version; :meth:`verify` checks every hash. Not thread-safe: one table process
    owns its journal.
    """

    def __init__(
        self,
        path: Path,
        read_only: bool = False,
        immutable: bool | None = None,
        *,
        durable: bool = True,
    ) -> None:
        """Open (or, unless ``read_only``, create) the journal at ``path``.

        ``read_only`` opens it as evidence: nothing is written beside it, see
        :func:`read_only_uri`. ``immutable`` (read-only only): True to say that nothing can
        change the file (a copy on read-only media), None to decide from what lies beside it.
        ``durable=False`` (benchmarks writing a year of rows, never a table) commits without
        waiting for the disk: a crash may lose the last rows.
        """
        self.path = Path(path)
        self.read_only = read_only
        try:
            if read_only:
                if not self.path.is_file():
                    raise JournalError(f"no journal at {self.path}")
                self._db = sqlite3.connect(
                    read_only_uri(self.path, immutable), uri=True, isolation_level=None
                )
            else:
                self._db = sqlite3.connect(self.path, isolation_level=None)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'OFF'}")
                create_tables(self._db)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None and not read_only:
                self._db.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            elif row is None or int(row[0]) != SCHEMA_VERSION:
                found = "no" if row is None else row[0]
                raise JournalError(
                    f"{self.path} has journal schema version {found}; this livetable reads "
                    f"version {SCHEMA_VERSION}"
                )
            last = self._db.execute(
                "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            self.event_encoding = self._open_encoding(last is None)
            self.epoch: str = self._open_epoch()
        except sqlite3.Error as error:
            if is_write_failure(error):
                raise JournalWriteError("open the journal", self.path, error) from error
            raise JournalError(f"cannot open the journal {self.path}: {error}") from error
        self._last_seq, self._last_hash = (0, GENESIS_HASH) if last is None else last
        self.last_entry: JournalEntry | None = None
        """The row :meth:`append` wrote last in this process (None before the first)."""
        archived = self.meta(ARCHIVED_META_KEY)
        self.archived_through = int(archived) if archived and archived.isdigit() else 0
        """The last row moved into a segment (0: none was)."""
        self.segment_of = self.meta(SEGMENT_META_KEY)
        """In a segment: the epoch of the journal it was archived from (else None)."""
        self._segments: list[Journal] | None = None

    def _open_epoch(self) -> str:
        """The journal's epoch: stored, else derived from its first row (an old journal) or
        new (an empty one); a writable journal stores it on this first open."""
        stored = self._db.execute(
            "SELECT value FROM meta WHERE key=?", (EPOCH_META_KEY,)
        ).fetchone()
        if stored is not None:
            return str(stored[0])
        first = self._db.execute(
            "SELECT hash FROM events WHERE seq <= ? ORDER BY seq DESC LIMIT 1", (EPOCH_ROWS,)
        ).fetchone()
        if first is None:
            epoch = new_epoch()
        else:
            config = self._db.execute(
                "SELECT value FROM meta WHERE key=?", (_CONFIG_META_KEY,)
            ).fetchone()
            epoch = derived_epoch(None if config is None else str(config[0]), str(first[0]))
        if not self.read_only:
            self._db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (EPOCH_META_KEY, epoch))
        return epoch

    def _open_encoding(self, empty: bool) -> int:
        """The event encoding of the journal's rows; a writable journal is upgraded to the
        current one where that reads its old rows alike, and refused where it does not."""
        row = self._db.execute(
            "SELECT value FROM meta WHERE key=?", (EVENT_ENCODING_META_KEY,)
        ).fetchone()
        # Journals written before the encoding was recorded used encoding 1.
        found = int(row[0]) if row is not None else (EVENT_ENCODING if empty else 1)
        if found not in ENCODINGS:
            raise JournalError(
                f"{self.path} was written with event encoding {found}; this livetable reads "
                f"1 to {EVENT_ENCODING}"
            )
        if self.read_only or (found == EVENT_ENCODING and row is not None):
            return found
        if found != EVENT_ENCODING and (found, EVENT_ENCODING) not in _ENCODING_UPGRADES:
            raise JournalError(
                f"{self.path} was written with event encoding {found}, which this livetable "
                f"reads but cannot extend (it writes {EVENT_ENCODING}): start a new journal"
            )
        self._db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            (EVENT_ENCODING_META_KEY, str(EVENT_ENCODING)),
        )
        return EVENT_ENCODING

    def meta(self, key: str) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        try:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
        except sqlite3.Error as error:
            raise JournalWriteError("write to the journal", self.path, error) from error

    @property
    def head(self) -> tuple[int, str]:
        """The last row's number and hash (0 and the genesis hash when empty): the anchor the
        daemon publishes as its state's ``journal: {seq, hash}``."""
        return self._last_seq, self._last_hash

    def add_signed_head(self, seq: int, digest: str, time: str, key: str, signature: str) -> None:
        """Keep one signed head (see :mod:`controller.service.signing`), committed at once."""
        if self.read_only:
            raise JournalError(f"{self.path} is open read-only")
        try:
            self._db.execute(
                "INSERT INTO signed_heads (seq, hash, time, key, signature) VALUES (?, ?, ?, ?, ?)",
                (seq, digest, time, key, signature),
            )
        except sqlite3.Error as error:
            if is_write_failure(error):
                raise JournalWriteError("write to the journal", self.path, error) from error
            raise JournalError(f"cannot write to the journal {self.path}: {error}") from error

    def signed_heads(self) -> list[tuple[int, str, str, str, str]]:
        """Every signed head kept, as stored (seq, hash, time, key, signature), in the order
        they were signed; none in a journal written before heads were signed."""
        try:
            known = self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='signed_heads'"
            ).fetchone()
            if known is None:
                return []
            rows = self._db.execute(
                "SELECT id, seq, hash, time, key, signature FROM signed_heads ORDER BY id"
            ).fetchall()
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error
        heads = []
        for number, seq, digest, time, key, signature in rows:
            # The file is evidence that anyone may have edited: a malformed row is named.
            if not isinstance(seq, int) or not all(
                isinstance(text, str) for text in (digest, time, key, signature)
            ):
                raise JournalError(f"{self.path}: signed head {number} is malformed")
            heads.append((seq, digest, time, key, signature))
        return heads

    def hash_at(self, seq: int) -> str | None:
        """Row ``seq``'s stored hash (in a segment when archived), or None when the journal
        has no such row."""
        if 0 < seq <= self.archived_through:
            for segment in self._archived(seq - 1):
                return segment.hash_at(seq)
            return None
        try:
            row = self._db.execute("SELECT hash FROM events WHERE seq=?", (seq,)).fetchone()
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error
        return None if row is None else str(row[0])

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def last_hash(self) -> str:
        return self._last_hash

    def append(self, event: object) -> JournalEntry:
        """Commit ``event`` as the next row and return it; JournalError if that fails."""
        if self.read_only:
            raise JournalError(f"{self.path} is open read-only")
        kind, fields = encode_event(event)
        if kind in SALTED_KINDS[self.event_encoding]:
            # Inside the hashed body: the published head must not open to a guessed card.
            fields[SALT_FIELD] = new_salt()
        body = canonical_json(fields)
        seq = self._last_seq + 1
        digest = row_hash(seq, kind, body, self._last_hash)
        try:
            if kind == CHECKPOINT_KIND:
                self._db.execute("BEGIN")
            self._db.execute(
                "INSERT INTO events (seq, kind, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?)",
                (seq, kind, body, self._last_hash, digest),
            )
            if kind == CHECKPOINT_KIND:
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    (CHECKPOINT_META_KEY, str(seq)),
                )
                self._db.execute("COMMIT")
        except sqlite3.IntegrityError as error:
            self._rollback()
            # Row seq was written by someone else since this journal was opened: no disk
            # is at fault, and freeing space would not help.
            raise JournalError(
                f"cannot append row {seq} to the journal {self.path}: another process wrote "
                f"that row ({error}); one daemon per journal: stop the other one (the lock "
                f"{lock_path(self.path)} names its pid), then start this table again"
            ) from error
        except sqlite3.Error as error:
            self._rollback()
            if is_write_failure(error):
                raise JournalWriteError("append to the journal", self.path, error) from error
            raise JournalError(f"cannot append to the journal {self.path}: {error}") from error
        entry = JournalEntry(seq, kind, body, self._last_hash, digest, self.event_encoding)
        self._last_seq, self._last_hash = seq, digest
        self.last_entry = entry
        return entry

    def _rollback(self) -> None:
        # SQLite may have rolled back already (a full disk does): a ROLLBACK then fails
        # too, and must not hide the error that matters.
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    def last_checkpoint(self) -> JournalEntry | None:
        """The journal's last checkpoint row, as stored (None: it has none, or the pointer
        to it leads to no checkpoint row)."""
        pointer = self.meta(CHECKPOINT_META_KEY)
        if pointer is None or not pointer.isdigit():
            return None
        try:
            row = self._db.execute(
                "SELECT seq, kind, body, prev_hash, hash FROM events WHERE seq=?", (int(pointer),)
            ).fetchone()
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error
        if row is None or row[1] != CHECKPOINT_KIND:
            return None
        return JournalEntry(*row, encoding=self.event_encoding)

    def entries(self, after: int = 0) -> Iterator[JournalEntry]:
        """Every row after row ``after``, in order, as stored (:meth:`verify` checks them):
        the archived ones from their segments first."""
        for segment in self._archived(after):
            for entry in segment.entries(after):
                if entry.seq > self.archived_through:
                    break
                yield entry
                after = entry.seq
        try:
            cursor = self._db.execute(
                "SELECT seq, kind, body, prev_hash, hash FROM events WHERE seq > ? ORDER BY seq",
                (after,),
            )
            for row in cursor:
                yield JournalEntry(*row, encoding=self.event_encoding)
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error

    def newest_first(self, kinds: Collection[str]) -> Iterator[JournalEntry]:
        """The rows of these kinds, newest first, as stored: a look back from the end (a
        restarted table's shoe driver resumes from the last shoe sequence number)."""
        wanted = sorted(kinds)
        if not wanted:
            return
        marks = ", ".join("?" * len(wanted))
        try:
            cursor = self._db.execute(
                "SELECT seq, kind, body, prev_hash, hash FROM events "
                f"WHERE kind IN ({marks}) ORDER BY seq DESC",
                wanted,
            )
            for row in cursor:
                yield JournalEntry(*row, encoding=self.event_encoding)
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error
        for segment in reversed(list(self._archived(0))):
            yield from segment.newest_first(kinds)

    def entries_of(
        self, kinds: Collection[str], after: int, through: int, limit: int
    ) -> list[JournalEntry]:
        """Up to ``limit`` rows of these kinds after row ``after`` and up to row ``through``,
        in order, as stored: found by SQLite, so that a reader looking for a few kinds
        (the daemon's audit of commands) never walks the card rows in Python."""
        wanted = sorted(kinds)
        if not wanted or limit <= 0 or through <= after:
            return []
        found: list[JournalEntry] = []
        for segment in self._archived(after):
            found += segment.entries_of(
                kinds, after, min(through, self.archived_through), limit - len(found)
            )
            after = max(after, segment.last_seq)
        if len(found) >= limit or through <= after:
            return found
        limit -= len(found)
        marks = ", ".join("?" * len(wanted))
        try:
            rows = self._db.execute(
                "SELECT seq, kind, body, prev_hash, hash FROM events "
                f"WHERE seq > ? AND seq <= ? AND kind IN ({marks}) ORDER BY seq LIMIT ?",
                (after, through, *wanted, limit),
            ).fetchall()
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error
        return found + [JournalEntry(*row, encoding=self.event_encoding) for row in rows]

    def entries_with(self, kind: str, key: str, value: int) -> list[JournalEntry]:
        """The rows of ``kind`` whose body's ``key`` is ``value``, in order, as stored:
        found by SQLite (a round's pictures among a long journal's)."""
        if not key.isidentifier():
            raise ValueError(f"not a field name: {key!r}")
        found: list[JournalEntry] = []
        for segment in self._archived(0):
            found += segment.entries_with(kind, key, value)
        try:
            rows = self._db.execute(
                "SELECT seq, kind, body, prev_hash, hash FROM events "
                "WHERE kind = ? AND json_extract(body, ?) = ? ORDER BY seq",
                (kind, f"$.{key}", value),
            ).fetchall()
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error
        return found + [JournalEntry(*row, encoding=self.event_encoding) for row in rows]

    def verified_entries(self, start: int = 1) -> Iterator[JournalEntry]:
        """Every row from row ``start`` on, in order, each checked against the chain before
        it is yielded (row ``start`` against the hash stored in the row before it; a
        segment's first row against its own ``prev_hash``, which the next one vouches for)."""
        expected_seq, prev_hash = start, GENESIS_HASH
        first = self.first_row() if self.segment_of is not None else None
        if first is not None and start <= first[0]:
            expected_seq, prev_hash = first
        elif start > 1:
            found = self.hash_at(start - 1)
            if found is None and start == self.archived_through + 1:
                # The row before was archived and its segment is not here (moved away): a
                # start from the checkpoint takes the live file's first row on its own
                # prev_hash, which verify checks against the segment.
                own = self.first_row()
                found = own[1] if own is not None and own[0] == start else None
            prev_hash = found or ""
        for entry in self.entries(after=start - 1):
            if entry.seq != expected_seq:
                raise JournalError(f"row {expected_seq} is missing (found row {entry.seq})")
            if entry.prev_hash != prev_hash:
                raise JournalError(f"row {entry.seq} does not chain to row {entry.seq - 1}")
            if row_hash(entry.seq, entry.kind, entry.body, entry.prev_hash) != entry.hash:
                raise JournalError(f"row {entry.seq} was altered: its hash does not match")
            try:
                entry.event()
            except (JournalError, ValueError) as error:
                raise JournalError(f"row {entry.seq} holds no valid event: {error}") from error
            yield entry
            expected_seq, prev_hash = entry.seq + 1, entry.hash

    def verify(self) -> int:
        """Check the whole chain, across the segments archived from it; return the number
        of rows or raise JournalError (naming the segment where one is missing or altered)."""
        if not self.archived_through:
            return sum(1 for _ in self.verified_entries())
        rows = self._check_segments(verify=True)
        return rows + sum(1 for _ in self.verified_entries(self.archived_through + 1))

    def check_segments(self) -> None:
        """JournalError, in :meth:`verify`'s words, unless the segments beside this journal
        hold rows 1 to :attr:`archived_through`, each archived from it and chained to the one
        before: what a reader of the whole history needs first (their rows are checked as
        :meth:`verified_entries` reads them, not here)."""
        self._check_segments(verify=False)

    def first_row(self) -> tuple[int, str] | None:
        """The first row's number and ``prev_hash`` in this file (None when it has none)."""
        try:
            row = self._db.execute(
                "SELECT seq, prev_hash FROM events ORDER BY seq LIMIT 1"
            ).fetchone()
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error
        return None if row is None else (int(row[0]), str(row[1]))

    def segments(self) -> list[Journal]:
        """The segments archived from this journal that lie beside it, opened read-only, in
        order (none when nothing was archived; :meth:`verify` says which are missing)."""
        if self._segments is None:
            found: list[Journal] = []
            if self.archived_through:
                try:
                    found.extend(Journal(path, read_only=True) for path in segment_paths(self.path))
                except JournalError:
                    for segment in found:
                        segment.close()
                    raise
            self._segments = found
        return self._segments

    def _check_segments(self, verify: bool) -> int:
        """Each segment (verified on its own when ``verify``) linked to the one before it,
        rows 1 to :attr:`archived_through` all there; the number of rows, or JournalError."""
        folder = segments_dir(self.path)
        expected, prev_hash, rows = 1, GENESIS_HASH, 0
        for segment in self.segments():
            name = segment.path
            first = segment.first_row()
            if first is None or segment.segment_of is None:
                raise JournalError(f"segment {name} holds no rows of a segment")
            if segment.segment_of != self.epoch:
                raise JournalError(
                    f"segment {name} was archived from another journal (epoch "
                    f"{segment.segment_of}, not {self.epoch})"
                )
            seq, first_prev = first
            if seq > expected:
                raise JournalError(
                    f"rows {expected}..{seq - 1} are missing: the segment that held them is "
                    f"not in {folder} (the next one there is {name.name})"
                )
            if seq < expected:
                raise JournalError(
                    f"segment {name} begins at row {seq}, which the segment before it holds"
                )
            if first_prev != prev_hash:
                raise JournalError(
                    f"segment {name} does not chain to the rows before it: its row {seq}'s "
                    f"prev_hash is not the hash of row {seq - 1} (one of the two was changed)"
                )
            if verify:
                try:
                    rows += segment.verify()
                except JournalError as error:
                    raise JournalError(f"segment {name}: {error}") from error
            else:
                rows += segment.last_seq - seq + 1
            expected, prev_hash = segment.last_seq + 1, segment.last_hash
        if expected <= self.archived_through:
            raise JournalError(
                f"rows {expected}..{self.archived_through} are missing: {self.path} archived "
                f"them into {folder}, which does not hold them (a segment is missing)"
            )
        if expected != self.archived_through + 1:
            raise JournalError(
                f"the segments in {folder} reach row {expected - 1}, past row "
                f"{self.archived_through}, the last that {self.path} archived"
            )
        return rows

    def last_row_before(self, seq: int, at: float) -> int:
        """The last row before row ``seq`` in this file whose event's time is before
        ``at`` (0: none): where an archive of rows older than some days ends."""
        try:
            row = self._db.execute(
                "SELECT MAX(seq) FROM events WHERE seq < ? AND json_extract(body, '$.at') < ?",
                (seq, at),
            ).fetchone()
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal {self.path}: {error}") from error
        return int(row[0] or 0)

    def drop_archived(self, last: int) -> None:
        """Delete rows up to ``last`` (copied into a segment and verified there) and record
        them archived, in one transaction; then give the space back to the disk where there
        is room to (VACUUM needs room for a copy of the file: without it the file keeps its
        size, and SQLite reuses the free pages)."""
        if self.read_only:
            raise JournalError(f"{self.path} is open read-only")
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM events WHERE seq <= ?", (last,))
            self._db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (ARCHIVED_META_KEY, str(last)),
            )
            self._db.execute("COMMIT")
        except sqlite3.Error as error:
            self._rollback()
            if is_write_failure(error):
                raise JournalWriteError("archive rows of the journal", self.path, error) from error
            raise JournalError(
                f"cannot archive rows of the journal {self.path}: {error}"
            ) from error
        self.archived_through = last
        for segment in self._segments or ():
            segment.close()
        self._segments = None
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("VACUUM")

    def _archived(self, after: int) -> Iterator[Journal]:
        """The segments that hold rows after row ``after``."""
        if after < self.archived_through:
            for segment in self.segments():
                if segment.last_seq > after:
                    yield segment

    def close(self) -> None:
        for segment in self._segments or ():
            segment.close()
        self._segments = None
        # Closing folds the write-ahead log back into the file; on a full disk SQLite
        # leaves the log for the next open instead (nothing is lost), which is no error.
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
