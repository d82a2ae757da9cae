"""The journal's file on disk: one process holds it, readers leave no trace beside it, and a
write it cannot make stops the table with one line for the operator.

Apart from :mod:`controller.service.journal` (the rows and their chain) because none of it
knows a row: the lock follows the file, the read-only URI follows SQLite's WAL files, and a
failed write is named with the room left on the disk.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import sqlite3
from pathlib import Path

from controller.kernel.errors import JournalError


class JournalWriteError(JournalError):
    """The journal (or the outbox beside it) could not be written: the table must stop, as
    it may take no input it cannot record. The message is one line for the operator."""

    def __init__(self, action: str, path: Path, error: BaseException) -> None:
        self.path = Path(path)
        super().__init__(
            f"cannot {action} {self.path}: {error} ({free_space(self.path)}); the "
            "table takes no input it cannot record: free space (or fix the disk), then start it"
        )


def free_space(path: Path) -> str:
    """How much room is left on the filesystem of ``path``, for an error message."""
    folder = Path(path).resolve().parent
    try:
        usage = shutil.disk_usage(folder)
    except OSError as error:
        return f"free space on {folder} unknown: {error.strerror or error}"
    return f"{_size(usage.free)} free of {_size(usage.total)} on {folder}"


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def lock_path(journal_path: Path) -> Path:
    """The lock file beside a journal, named after the file the path leads to (a symlink
    followed): ``t1.journal`` → ``t1.journal.lock``."""
    path = Path(os.path.realpath(journal_path))
    return path.with_name(path.name + ".lock")


class JournalLock:
    """One process holds a journal: an exclusive ``flock`` on the journal file itself, and on
    the lock file beside it that names the holder.

    The lock follows the file, not the name it was given: the journal's own inode is
    locked, so a second daemon reaching it through a symlink, a hard link or another mount
    is refused like one given the same path (the lock file beside the file the path leads
    to holds the holder's pid for the message). The kernel releases both when the holder's
    files are closed, or when the holder dies however it dies (a SIGKILL, a power cut's
    reboot), so a lock is never stale; the lock file stays behind holding the last holder's
    pid. Locks are per open file: a second :meth:`acquire` of the same journal is refused
    in the same process too. ``flock`` locks are apart from the POSIX locks SQLite takes on
    the same file.
    """

    def __init__(self, path: Path, fd: int, journal_fd: int | None = None) -> None:
        self.path = path
        self._fd: int | None = fd
        self._journal_fd = journal_fd

    @classmethod
    def acquire(cls, journal_path: Path) -> JournalLock:
        """Hold ``journal_path``'s lock, or JournalError naming the process that holds it."""
        path = lock_path(journal_path)
        fd = _open_for_lock(path, f"the lock {path} of the journal {journal_path}")
        if not _flock(fd, journal_path, path):
            holder = _holder(fd)
            os.close(fd)
            raise JournalError(
                f"the journal {journal_path} is held by another livetable process ({holder}, "
                f"lock {path}): one daemon per journal; stop that one first"
            )
        # The journal file itself (created empty when new, which SQLite reads as an empty
        # database): the one thing every path to it shares.
        real = Path(os.path.realpath(journal_path))
        try:
            journal_fd = _open_for_lock(real, f"the journal {journal_path}")
        except JournalError:
            os.close(fd)
            raise
        if not _flock(journal_fd, journal_path, real):
            os.close(journal_fd)
            os.close(fd)
            raise JournalError(
                f"the journal {journal_path} ({real}) is held by another livetable process "
                "that reached it by another path (a hard link or another mount): one daemon "
                "per journal; stop that one first"
            )
        # Who holds it, for the next one refused. Best effort: a full disk may refuse even
        # these few bytes, and the lock holds without them.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(path, fd, journal_fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Let the journal go (closing the files releases the locks); again is a no-op."""
        fd, self._fd = self._fd, None
        journal_fd, self._journal_fd = self._journal_fd, None
        if journal_fd is not None:
            os.close(journal_fd)
        if fd is not None:
            os.close(fd)


def _open_for_lock(path: Path, what: str) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o640)
    except OSError as error:
        raise JournalError(f"cannot open {what}: {error.strerror or error}") from error


def _flock(fd: int, journal_path: Path, path: Path) -> bool:
    """Take ``fd``'s exclusive lock: False when another holds it, JournalError on failure."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        os.close(fd)
        raise JournalError(
            f"cannot lock the journal {journal_path} ({path}): {error.strerror or error}"
        ) from error
    return True


def _holder(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        return f"pid {int(os.pread(fd, 32, 0).split()[0])}"
    return "pid unknown"


def wal_in_use(path: Path) -> bool:
    """Whether rows may wait in ``path``'s write-ahead log: its ``-wal`` file is there and
    not empty (a table has the journal open, or died before the log was folded back)."""
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except FileNotFoundError:
        return False


def read_only_uri(path: Path, immutable: bool | None = None) -> str:
    """The SQLite URI that reads the journal at ``path`` without writing anything beside it.

    SQLite's ``mode=ro`` alone still creates ``-wal`` and ``-shm`` files next to a WAL
    database, which must not appear beside evidence (nor can they on read-only media). So a
    journal whose write-ahead log is empty or absent, which no table is writing (a writer
    always has a log), is opened ``immutable=1`` as well: SQLite then takes no lock and
    creates no file. A journal with rows in its log (a running table, or a copy taken after
    a crash) is opened ``mode=ro`` alone, which reads the log where ``immutable`` would skip
    those rows; in a directory that cannot be written that needs the ``-shm`` file beside it.
    ``immutable=True`` insists on ``immutable=1`` and refuses a journal whose log holds rows.
    """
    base = f"{path.resolve().as_uri()}?mode=ro"
    in_use = wal_in_use(path)
    if immutable is None:
        immutable = not in_use
    if immutable and in_use:
        raise JournalError(
            f"{path} has rows in its write-ahead log ({path.name}-wal) that an immutable "
            "open cannot see: verify it without --immutable, or copy the journal with its "
            "-wal and -shm files to a writable directory"
        )
    if immutable:
        return f"{base}&immutable=1"
    shm = path.with_name(path.name + "-shm")
    if not shm.exists() and not os.access(path.resolve().parent, os.W_OK):
        raise JournalError(
            f"{path} has rows in its write-ahead log but no {shm.name} beside it, and its "
            "directory cannot be written: copy the journal with its -wal file to a writable "
            "directory"
        )
    return base


def is_write_failure(error: sqlite3.Error) -> bool:
    """Whether SQLite failed for want of room or of a working disk (not a damaged file)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)
