"""``livetable run`` as a child process: for the demo's tables (one process each with
``--tables N``) and the tests' daemons.

:class:`DaemonProcess` starts the daemon on a configuration file, its standard error (the
log) appended to a file, and stops it as systemd does (SIGTERM, SIGKILL after a while), or
kills it with any signal; it may be started again (``starts`` counts the starts). Installed
code (``livetable demo``) cannot import the test suite's helpers, so the class lives here and
the tests use this one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
# How long a daemon has to stop after SIGTERM (or any signal sent) before it is killed.
STOP_TIMEOUT_S = 10.0


@dataclass
class DaemonProcess:
    """``livetable run --config CONFIG`` as a child process, logging to ``log_path``.

    ``cwd``: the child's working folder (default: this process's); ``env``: variables added to
    this process's environment; ``verbose``: how many ``-v`` it is given.
    """

    config: Path
    log_path: Path
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    verbose: int = 0
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    # Where this start's lines begin in the log file (bytes): a line the last process wrote
    # twice (a shoe that flapped under load) must not pass for one of this start's.
    start_offset: int = 0

    def start(self) -> None:
        self.starts += 1
        with open(self.log_path, "ab") as log:  # the child has its own copy
            self.start_offset = log.tell()
            self.process = subprocess.Popen(
                [*LIVETABLE, *["-v"] * self.verbose, "run", "--config", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=self.cwd,
                env={**os.environ, **self.env},
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self, signum: int = signal.SIGKILL) -> int:
        """Send ``signum`` and wait for the exit: its status (``-signum`` if that killed it)."""
        assert self.process is not None, "the daemon was never started"
        self.process.send_signal(signum)
        return self.process.wait(STOP_TIMEOUT_S)

    def stop(self) -> int | None:
        """Stop it as systemd does (SIGTERM, then SIGKILL); its exit status, None if it was
        never started."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def log(self) -> str:
        """Everything it logged so far (all its starts), "" if nothing."""
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")
        return ""

    def log_of_this_start(self) -> str:
        """What the process of the last :meth:`start` logged so far, "" if nothing."""
        with contextlib.suppress(OSError), open(self.log_path, "rb") as log:
            log.seek(self.start_offset)
            return log.read().decode(errors="replace")
        return ""

    def why(self) -> str:
        """Why a stopped daemon stopped, for a person: its exit status and last log lines."""
        code = None if self.process is None else self.process.poll()
        tail = self.log().strip().splitlines()[-3:]
        return f"exit {code}: " + " / ".join(tail) if tail else f"exit {code}"
