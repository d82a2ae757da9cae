"""A journal's identity and its one writer.

Every journal has an **epoch**: an id given when it is created and stored in it, so that a
consumer who stored a ``seq`` or a ``round.id`` sees when a table started a new journal
(both series restart at 1). A journal written before epochs existed gets one on its first
open, derived from what it already holds, so that read-only tools and the daemon agree and
it never changes afterwards.

A daemon holds its journal with locks (``flock``, which the kernel releases when the holder
dies) on the journal file itself and beside it (``<journal>.lock``): a second holder is
refused at once, naming the first, by whatever path it reaches the file.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from controller.kernel.cards import parse_card
from controller.kernel.errors import JournalError
from controller.service.journal import Journal
from controller.service.journal_files import JournalLock, lock_path
from controller.table.events import CardDrawn, ControllerStarted
from tests.support.wait import wait_until

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "journals"
OLD_JOURNALS = sorted(FIXTURES.glob("*.journal")) + sorted((FIXTURES / "v2").glob("*.journal"))
EPOCH = re.compile(r"^[0-9a-f]{32}$")


def test_a_new_journal_gets_an_epoch_of_its_own_which_it_keeps(tmp_path: Path) -> None:
    with Journal(tmp_path / "a.journal") as first, Journal(tmp_path / "b.journal") as second:
        assert EPOCH.match(first.epoch), first.epoch
        assert first.epoch != second.epoch
        epoch = first.epoch
        first.append(ControllerStarted(1.0))
    with Journal(tmp_path / "a.journal") as again:
        assert again.epoch == epoch
    with Journal(tmp_path / "a.journal", read_only=True) as evidence:
        assert evidence.epoch == epoch


def test_a_journal_started_again_in_the_same_place_gets_another_epoch(tmp_path: Path) -> None:
    path = tmp_path / "t1.journal"
    with Journal(path) as journal:
        journal.append(ControllerStarted(1.0))
        old = journal.epoch
    path.unlink()
    with Journal(path) as journal:
        journal.append(ControllerStarted(1.0))  # the same first row as before
        assert journal.epoch != old


@pytest.mark.parametrize("fixture", OLD_JOURNALS, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_an_old_journal_gets_an_epoch_on_first_open_that_never_changes(
    tmp_path: Path, fixture: Path
) -> None:
    # Read as evidence, nothing is written: the epoch is what its rows give.
    with Journal(fixture, read_only=True) as evidence:
        assert evidence.meta("epoch") is None
        derived = evidence.epoch
    assert EPOCH.match(derived), derived
    copy = tmp_path / fixture.name
    shutil.copy(fixture, copy)
    with Journal(copy) as journal:
        assert journal.epoch == derived
        assert journal.meta("epoch") == derived  # stored on the first writable open
        journal.append(ControllerStarted(9e9))  # new rows do not change it
    with Journal(copy) as journal:
        assert journal.epoch == derived
    with Journal(copy, read_only=True) as evidence:
        assert evidence.epoch == derived


def test_old_journals_have_epochs_of_their_own() -> None:
    epochs = set()
    for fixture in OLD_JOURNALS:
        with Journal(fixture, read_only=True) as journal:
            epochs.add(journal.epoch)
    assert len(epochs) == len(OLD_JOURNALS)


def test_a_second_holder_of_a_journal_is_refused_naming_the_first(tmp_path: Path) -> None:
    path = tmp_path / "t1.journal"
    lock = JournalLock.acquire(path)
    try:
        assert lock_path(path).read_text().split() == [str(os.getpid())]
        with pytest.raises(JournalError) as refused:
            JournalLock.acquire(path)
        message = str(refused.value)
        assert str(path) in message and f"pid {os.getpid()}" in message, message
    finally:
        lock.release()
    JournalLock.acquire(path).release()  # released: free again


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from controller.service.journal_files import JournalLock
    lock = JournalLock.acquire(Path(sys.argv[1]))
    print("held", flush=True)
    time.sleep(60)
    """
)


def test_a_journal_held_by_a_process_that_died_is_free_again(tmp_path: Path) -> None:
    path = tmp_path / "t1.journal"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(JournalError, match=f"pid {holder.pid}"):
            JournalLock.acquire(path)
        # Read-only tools do not need the lock.
        Journal(path).close()  # creates it (a holder does not write here)
        with Journal(path, read_only=True) as evidence:
            assert evidence.verify() == 0
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    # The kernel released the dead holder's lock; its pid is still written in the file.
    wait_until(lambda: _free(path), 5, "the lock released")


def _free(path: Path) -> bool:
    try:
        JournalLock.acquire(path).release()
    except JournalError:
        return False
    return True


@pytest.mark.parametrize("link", ["symlink", "hardlink", "dotted"])
def test_a_journal_reached_by_another_path_is_held_all_the_same(tmp_path: Path, link: str) -> None:
    path = tmp_path / "t1.journal"
    Journal(path).close()
    if link == "symlink":
        other = tmp_path / "alias.journal"
        other.symlink_to(path)
    elif link == "hardlink":
        other = tmp_path / "hard.journal"
        os.link(path, other)
    else:
        (tmp_path / "sub").mkdir()
        other = tmp_path / "sub" / ".." / "t1.journal"
    lock = JournalLock.acquire(path)
    try:
        with pytest.raises(JournalError, match="held by another livetable process") as refused:
            JournalLock.acquire(other)
        if link != "hardlink":  # a hard link has another name beside it: no pid to read
            assert f"pid {os.getpid()}" in str(refused.value)
    finally:
        lock.release()
    JournalLock.acquire(other).release()  # the first let go: the other path is free too


def test_rows_written_by_another_process_are_named_as_such_not_as_a_full_disk(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t1.journal"
    with Journal(path) as first, Journal(path) as second:
        first.append(ControllerStarted(1.0))
        with pytest.raises(JournalError) as refused:
            second.append(CardDrawn(parse_card("AS"), 1, 2.0))
    message = str(refused.value)
    assert "another process wrote that row" in message and "one daemon per journal" in message
    assert "free space" not in message, message
