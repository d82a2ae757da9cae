"""Crash test with real processes: a journaled table killed with SIGKILL at 200 random
points, restarted each time. After every kill the journal verifies and holds every event
that was acknowledged; after every restart the table's state equals a replay of the
journal, computed independently in this process.

Each run is a child forked by the runner's zygote (``--zygote``): a real process with its
own SQLite connection, killed for real; the zygote only spares 200 interpreter start-ups.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.table.journal import Journal
from controller.table.machine import TableMachine
from controller.table.runner import snapshot_digest
from controller.table_config import TableConfig

KILLS = 200
GAME = "blackjack-classic"
SEED = 29
REPO_ROOT = Path(__file__).resolve().parents[2]


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
    def __init__(self, path: Path, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        with open(stderr_path, "a") as stderr:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "controller.table.runner",
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
                text=True,
                cwd=REPO_ROOT,
            )

    def send(self, command: str) -> None:
        self.process.stdin.write(command + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]

    def read(self) -> list[str]:
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        assert line, f"the runner died on its own:\n{self.stderr_path.read_text()[-3000:]}"
        return line.split()

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
            os.kill(int(pid), signal.SIGKILL)
            zygote.send("reap")
        zygote.close()
    assert restarts_compared >= 150 and killed_during_start >= 5
    assert shadow.machine.state.rounds_started >= 10
    assert len(acknowledged) >= 300
