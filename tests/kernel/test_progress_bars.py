"""Progress bars: drawn on a terminal (a real pseudo-terminal here), never into a pipe or a
file, so that a command's output read by a tool stays exactly as it was."""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from controller.kernel.progress import progress, tracked

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
REPO_ROOT = Path(__file__).resolve().parents[2]


def _read_all(fd: int, process: subprocess.Popen[bytes], timeout_s: float) -> bytes:
    """Everything written to the pty's master side until the process ends."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the slave side closed: nothing more will come
                break
            if not chunk:
                break
            chunks.append(chunk)
        elif process.poll() is not None:
            break
    return b"".join(chunks)


def test_a_bar_is_drawn_on_a_terminal_and_ends_at_its_total() -> None:
    master, slave = os.openpty()
    try:
        with open(slave, "w", encoding="utf-8", closefd=False) as terminal:
            assert terminal.isatty()
            with progress(5, "counting", stream=terminal) as advance:
                for _ in range(5):
                    advance(1)
                    time.sleep(0.11)  # past the redraw interval: every step is drawn
        drawn = os.read(master, 65536).decode(errors="replace")
    finally:
        os.close(master)
        os.close(slave)
    assert "counting" in drawn
    assert "5/5" in drawn


def test_nothing_is_written_where_no_one_looks() -> None:
    stream = io.StringIO()
    with progress(3, "counting", stream=stream) as advance:
        advance(1)
        advance(2)
    assert stream.getvalue() == ""
    assert list(tracked(iter("abc"), 3, "letters")) == ["a", "b", "c"]


def test_a_bench_draws_its_bar_on_stderr_only_when_stderr_is_a_terminal() -> None:
    command = [*LIVETABLE, "bench", "table", "--events", "300", "--appends", "30", "--json"]
    master, slave = os.openpty()
    try:
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=slave, close_fds=True
        )
        os.close(slave)
        on_terminal = _read_all(master, process, 120).decode(errors="replace")
        out, _ = process.communicate(timeout=120)
    finally:
        os.close(master)
    assert process.returncode == 0, on_terminal[-2000:]
    assert "events and appends" in on_terminal
    piped = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert piped.stderr == ""
    # stdout is the same JSON line either way (the figures differ, the shape does not).
    assert out.decode().count("\n") == piped.stdout.count("\n") == 1
