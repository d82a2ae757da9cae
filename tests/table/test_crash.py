"""Crash test with real processes: a journaled table killed with SIGKILL at 200 random
points, restarted each time. After every kill the journal verifies and holds every event
that was acknowledged; after every restart the table's state equals a replay of the
journal, computed independently in this process.

Each run is a child forked by the runner's zygote (``--zygote``): a real process with its
own SQLite connection, killed for real; the zygote only spares 200 interpreter start-ups.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.service.journal import Journal
from controller.table.config import TableConfig
from controller.table.machine import TableMachine
from controller.tools.crash_runner import snapshot_digest

KILLS = 200
GAME = "blackjack-classic"
SEED = 29
REPO_ROOT = Path(__file__).resolve().parents[2]
# A line from the runner is a few milliseconds' work; this only turns a hang into a failure.
LINE_DEADLINE_S = 60.0


class Shadow:
    """A machine in this process fed the journal's rows as they appear."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.machine = TableMachine(TableConfig(table_id="runner", game=GAME, journal_path=path))
        self.seq = 0

    def advance_to(self, seq: int) -> str:
        with Journal(self.path, read_only=True) as journal:
            for entry in journal.entries(after=self.seq):
                if entry.seq > seq:
                    break
                self.machine.handle(entry.event())
                self.seq = entry.seq
        assert self.seq == seq, f"the journal holds only {self.seq} rows, the runner saw {seq}"
        return snapshot_digest(self.machine)


class Zygote:
    """The runner in ``--zygote`` mode, talked to line by line with a deadline per line."""

    def __init__(self, path: Path, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self.buffer = b""
        self.seen: list[str] = []
        with open(stderr_path, "a") as stderr:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "controller.tools.crash_runner",
                    "--zygote",
                    "--journal",
                    str(path),
                    "--game",
                    GAME,
                    "--seed",
                    str(SEED),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=REPO_ROOT,
            )

    def send(self, command: str) -> None:
        self.seen.append(f"> {command}")
        self.process.stdin.write(command.encode() + b"\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]

    def read(self) -> list[str]:
        fd = self.process.stdout.fileno()  # type: ignore[union-attr]
        deadline = time.monotonic() + LINE_DEADLINE_S
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(remaining, 0))
            if not ready:
                raise AssertionError(
                    f"no line from the runner in {LINE_DEADLINE_S} s; last lines:\n"
                    + "\n".join(self.seen[-20:])
                    + f"\npartial: {self.buffer!r}"
                )
            chunk = os.read(fd, 65536)
            assert chunk, "the runner died on its own:\n" + self.stderr_path.read_text()[-3000:]
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        self.seen.append(line.decode())
        return line.decode().split()

    def close(self) -> None:
        try:
            self.process.stdin.close()  # type: ignore[union-attr]
            self.process.wait(timeout=10)
        finally:
            self.process.kill()
            self.process.wait()
            self.process.stdout.close()  # type: ignore[union-attr]


@pytest.mark.slow
def test_sigkill_at_200_random_points_loses_no_acknowledged_event(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    path = tmp_path / "crash.journal"
    shadow = Shadow(path)
    zygote = Zygote(path, tmp_path / "runner.stderr")
    acknowledged: dict[int, str] = {}
    restarts_compared = killed_during_start = 0
    pid = ""
    try:
        for _ in range(KILLS):
            zygote.send("fork")
            word, pid = zygote.read()
            assert word == "pid"
            if rng.random() < 0.1:
                # Anywhere in the start: opening the journal, the replay, the first append.
                time.sleep(rng.uniform(0.0, 0.05))
                killed_during_start += 1
            else:
                word, seq, digest = zygote.read()
                assert word == "replayed"
                assert shadow.advance_to(int(seq)) == digest, "restart state != replay"
                restarts_compared += 1
                for _ in range(rng.randint(0, 8)):
                    word, seq, row_hash = zygote.read()
                    assert word == "ack"
                    acknowledged[int(seq)] = row_hash
                time.sleep(rng.uniform(0.0, 0.01))  # land anywhere in the next event
            os.kill(int(pid), signal.SIGKILL)
            zygote.send("reap")
            while (line := zygote.read())[0] != "exit":
                # Lines the child printed before it died: acknowledged as much as the others.
                if line[0] == "ack":
                    acknowledged[int(line[1])] = line[2]
            assert line == ["exit", pid, str(-signal.SIGKILL)]
            pid = ""

            with Journal(path, read_only=True) as journal:
                rows = journal.verify()
                hashes = {entry.seq: entry.hash for entry in journal.entries()}
            assert rows >= max(acknowledged, default=0)
            lost = {seq for seq, digest in acknowledged.items() if hashes.get(seq) != digest}
            assert not lost, f"acknowledged events lost or changed: {sorted(lost)}"

        # A last start: its replay equals ours, and the table went through real rounds.
        zygote.send("fork")
        word, pid = zygote.read()
        word, seq, digest = zygote.read()
        assert shadow.advance_to(int(seq)) == digest
    finally:
        if pid:  # never leave a table running on its own
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
            zygote.send("reap")
        zygote.close()
    assert restarts_compared >= 150 and killed_during_start >= 5
    assert shadow.machine.state.rounds_started >= 10
    assert len(acknowledged) >= 300
    # Restarts in mid-deal: the dealer drew cards while the table was down, which the
    # supervisor entered by hand (or confirmed that none was drawn) before the round went on.
    with Journal(path, read_only=True) as journal:
        resolutions = [
            entry.event().resolution  # type: ignore[attr-defined]
            for entry in journal.entries()
            if entry.kind == "SupervisorCommanded"
        ]
    assert resolutions.count("enter_card") >= 5 and resolutions.count("no_cards_drawn") >= 5
