"""A long replay asks systemd for more time to start (``EXTEND_TIMEOUT_USEC``), over a real
AF_UNIX datagram socket that the test binds as systemd does; and a shoe's end, taken by the
runtime, journals the checkpoint that the next start begins at."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.service import sd_notify
from controller.service.assembly import DeviceEffects, Effects, assemble
from controller.service.config import LivetableConfig
from controller.service.journal import Journal
from controller.service.journaled_table import PROGRESS_ROWS, JournaledTable
from controller.table.config import TableConfig
from controller.table.effects import CheckpointTaken, EffectBatch
from controller.table.events import ControllerStarted, SupervisorCommanded
from controller.tools.crash_runner import START_TIME, next_event


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # A socket path is limited to 107 bytes; pytest's tmp_path can be longer. In memory
    # where there is one: the rows written here need no flush to a disk.
    shm = Path("/dev/shm")
    path = Path(tempfile.mkdtemp(prefix="rpl-", dir=shm if shm.is_dir() else None))
    try:
        yield path
    finally:
        shutil.rmtree(path)


def write_rows(config: TableConfig, rows: int) -> None:
    """A journal of ``rows`` rows of play, written without checkpoints (as before them)."""
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    try:
        event: object = ControllerStarted(START_TIME)
        while table.journal.last_seq < rows:
            table.handle(event)
            event = next_event(table.machine, 1, table.journal.last_seq + 1)
    finally:
        table.close()


def received(receiver: socket.socket) -> list[bytes]:
    """Every datagram waiting on the socket (the sender wrote them before returning)."""
    messages = []
    receiver.setblocking(False)
    while True:
        try:
            messages.append(receiver.recv(4096))
        except BlockingIOError:
            return messages


def test_a_long_replay_extends_the_start_timeout_and_a_shoe_end_checkpoints(
    short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = LivetableConfig(
        table=TableConfig(table_id="t1", game="baccarat", journal_path=short_dir / "t1.journal")
    )
    write_rows(config.table, 2 * PROGRESS_ROWS + 10)
    path = str(short_dir / "notify")
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    # Every progress call notifies (a table PC's replay is too quick for the usual pause).
    monkeypatch.setattr(sd_notify, "REPLAY_NOTICE_S", 0.0)
    batches: list[EffectBatch] = []

    def handler(devices: DeviceEffects) -> Effects:
        return Effects(devices, batches.append)

    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind(path)
        with assemble(config, handler, shoe=False) as table:
            assert received(receiver) == [
                b"EXTEND_TIMEOUT_USEC=60000000\nWATCHDOG=1\n"
                + f"STATUS=replaying the journal: {rows} rows".encode()
                for rows in (PROGRESS_ROWS, 2 * PROGRESS_ROWS)
            ]
            runtime = table.runtime
            at = START_TIME + 10_000
            table.start(at)
            if table.table.machine.round_in_progress() is not None:
                runtime.handle(SupervisorCommanded("s/0", "cancel", "s", "supervisor", at, "x"))
            runtime.handle(SupervisorCommanded("s/1", "end_shoe", "s", "supervisor", at, "x"))
            row = table.table.journal.last_entry
            assert row is not None and row.kind == "Checkpoint"
            taken = [e for e in batches[-1].effects if isinstance(e, CheckpointTaken)]
            assert taken == [CheckpointTaken(table.table.published)]
            assert batches[-1].journal_seq == row.seq
        # The next start begins at the checkpoint: too few rows after it to notify.
        with assemble(config, handler, shoe=False):
            assert received(receiver) == []
    with Journal(config.table.journal_path, read_only=True) as journal:
        checkpoint = journal.last_checkpoint()
        assert checkpoint is not None and checkpoint.seq == journal.last_seq
