"""The daemon and systemd: ``livetable run`` as a subprocess under a notify socket that the
test binds as systemd does (``Type=notify``, ``WatchdogSec=``). READY=1 comes once the table
takes events, WATCHDOG=1 keeps coming from the event loop while the table plays, and SIGTERM
says STOPPING=1 before the process ends cleanly."""

from __future__ import annotations

import signal
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daemon import SimulatedTable
from tests.support.wait import wait_until

# A short interval (systemd's WatchdogSec= is 10 s in the unit), so the test sees many pings.
WATCHDOG_USEC = 400_000
ROUNDS = 3


class NotifySocket:
    """An abstract-namespace datagram socket, as systemd's $NOTIFY_SOCKET, read by a thread."""

    def __init__(self) -> None:
        self.name = f"@livetable-test-{uuid.uuid4().hex}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(b"\0" + self.name[1:].encode())
        self.sock.settimeout(0.2)
        self.messages: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._done.is_set():
            try:
                datagram = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            fields = dict(line.split("=", 1) for line in datagram.decode().splitlines() if line)
            with self._lock:
                self.messages.append(fields)

    def seen(self, key: str) -> list[dict[str, str]]:
        with self._lock:
            return [message for message in self.messages if key in message]

    def close(self) -> None:
        self._done.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def notify_socket() -> Iterator[NotifySocket]:
    receiver = NotifySocket()
    yield receiver
    receiver.close()


@pytest.mark.slow
def test_ready_then_watchdog_pings_while_playing_then_stopping(
    tmp_path: Path, mqtt_broker: tuple[str, int], notify_socket: NotifySocket
) -> None:
    table = SimulatedTable(tmp_path, *mqtt_broker, "baccarat", ROUNDS)
    table.daemon.env = {"NOTIFY_SOCKET": notify_socket.name, "WATCHDOG_USEC": str(WATCHDOG_USEC)}
    try:
        table.daemon.start()
        wait_until(lambda: notify_socket.seen("READY"), 30, "READY=1")
        (ready,) = notify_socket.seen("READY")
        assert ready["READY"] == "1" and "table t1 running" in ready.get("STATUS", ""), ready
        # Ready means the table takes events: it is online on the broker too.
        wait_until(lambda: table.viewer.availability == "online", 10, "availability online")
        pings_before_play = len(notify_socket.seen("WATCHDOG"))
        table.bots.start()
        wait_until(lambda: table.bots.done or not table.daemon.alive(), 120, f"{ROUNDS} rounds")
        assert table.daemon.alive(), table.daemon.log()[-3000:]
        # The loop kept feeding the watchdog while it dealt (each ping is sent by the loop
        # itself, between two events, so a wedged loop stops them and systemd restarts it).
        wait_until(
            lambda: len(notify_socket.seen("WATCHDOG")) >= pings_before_play + 3,
            10,
            "watchdog pings while the table plays",
        )
        assert all(message["WATCHDOG"] == "1" for message in notify_socket.seen("WATCHDOG"))
        assert table.daemon.kill(signal.SIGTERM) == 0
        wait_until(lambda: notify_socket.seen("STOPPING"), 5, "STOPPING=1")
        assert len(notify_socket.seen("READY")) == 1
    finally:
        table.close()


@pytest.mark.slow
def test_no_watchdog_pings_for_another_process(
    tmp_path: Path, mqtt_broker: tuple[str, int], notify_socket: NotifySocket
) -> None:
    """$WATCHDOG_PID naming another process (a wrapper's) switches the pings off, as
    sd_watchdog_enabled(3) says; READY=1 and STOPPING=1 still come."""
    table = SimulatedTable(tmp_path, *mqtt_broker, "baccarat", 1)
    table.daemon.env = {
        "NOTIFY_SOCKET": notify_socket.name,
        "WATCHDOG_USEC": str(WATCHDOG_USEC),
        "WATCHDOG_PID": "1",
    }
    try:
        table.daemon.start()
        wait_until(lambda: notify_socket.seen("READY"), 30, "READY=1")
        # Its loop has run for a while: the retained state reached a subscriber.
        wait_until(lambda: table.viewer.state is not None, 10, "the retained state")
        assert table.daemon.kill(signal.SIGTERM) == 0
        # STOPPING=1 is the last thing the daemon says: every ping it sent came before it.
        wait_until(lambda: notify_socket.seen("STOPPING"), 5, "STOPPING=1")
        assert notify_socket.seen("WATCHDOG") == []
    finally:
        table.close()
