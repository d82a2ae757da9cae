"""``livetable shoe monitor`` run in this process for a test, on a thread, its output captured
by pytest's ``capsys``: started, waited on until it has the port open, joined at the end."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.tools.cli import main
from tests.support.wait import wait_until

# Generous: the machine is shared.
ONLINE_TIMEOUT_S = 20.0
JOIN_TIMEOUT_S = 30.0


@dataclass
class MonitorRun:
    printed: str = ""
    """Its standard output up to its ShoeOnline line (taken from ``capsys``)."""
    status: int | None = None
    """Its exit status, once it has ended."""


@contextmanager
def shoe_monitor(
    capsys: pytest.CaptureFixture[str], port: Path, protocol: str, *options: str
) -> Iterator[MonitorRun]:
    """``livetable shoe monitor --port PORT --protocol PROTOCOL OPTIONS``, online: the body
    runs once the monitor printed its ShoeOnline line (it has the port open, so what the shoe
    sends from then on is seen), and the monitor is joined after it (give it ``--count`` or
    ``--duration-s`` to end). The output after ``printed`` is left to ``capsys``."""
    arguments = ["shoe", "monitor", "--port", str(port), "--protocol", protocol, *options]
    run = MonitorRun()

    def monitor() -> None:
        run.status = main(arguments)

    thread = threading.Thread(target=monitor, name="shoe-monitor")
    thread.start()
    try:

        def online() -> bool:
            run.printed += capsys.readouterr().out
            return "ShoeOnline" in run.printed

        wait_until(online, ONLINE_TIMEOUT_S, "the monitor's ShoeOnline line")
        yield run
    finally:
        thread.join(JOIN_TIMEOUT_S)
