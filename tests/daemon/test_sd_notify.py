"""sd_notify over a real AF_UNIX datagram socket that the test binds, as systemd does."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.service import sd_notify

TIMEOUT_S = 5.0


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # A socket path is limited to 107 bytes; pytest's tmp_path can be longer.
    path = Path(tempfile.mkdtemp(prefix="sdn-"))
    try:
        yield path
    finally:
        shutil.rmtree(path)


def _receiver(address: str | bytes) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(TIMEOUT_S)
    return sock


def test_notify_writes_one_datagram_to_a_path_socket(short_dir: Path) -> None:
    path = str(short_dir / "notify")
    with _receiver(path) as receiver:
        environ = {"NOTIFY_SOCKET": path}
        assert sd_notify.ready(environ=environ)
        assert receiver.recv(4096) == b"READY=1"
        assert sd_notify.ready("replayed 120 events", environ=environ)
        assert receiver.recv(4096) == b"READY=1\nSTATUS=replayed 120 events"
        assert sd_notify.watchdog_ping(environ=environ)
        assert receiver.recv(4096) == b"WATCHDOG=1"
        assert sd_notify.stopping(environ=environ)
        assert receiver.recv(4096) == b"STOPPING=1"
        assert sd_notify.status("paused: CARD_OUT_OF_TURN", environ=environ)
        assert receiver.recv(4096) == b"STATUS=paused: CARD_OUT_OF_TURN"


def test_notify_reaches_an_abstract_namespace_socket() -> None:
    name = f"livetable-test-{uuid.uuid4().hex}"
    with _receiver(b"\0" + name.encode()) as receiver:
        assert sd_notify.notify("READY=1", {"NOTIFY_SOCKET": "@" + name})
        assert receiver.recv(4096) == b"READY=1"


def test_notify_reads_the_process_environment(
    short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(short_dir / "notify")
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    with _receiver(path) as receiver:
        assert sd_notify.watchdog_ping()
        assert receiver.recv(4096) == b"WATCHDOG=1"


def test_notify_without_a_socket_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert not sd_notify.ready()
    assert not sd_notify.notify("READY=1", {})
    assert not sd_notify.notify("READY=1", {"NOTIFY_SOCKET": ""})


def test_a_socket_nobody_listens_on_is_logged_not_raised(
    short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert not sd_notify.notify("READY=1", {"NOTIFY_SOCKET": str(short_dir / "gone")})
    assert not sd_notify.notify("READY=1", {"NOTIFY_SOCKET": "vsock:2:1234"})
    assert len(caplog.records) == 2


def test_watchdog_interval_follows_sd_watchdog_enabled() -> None:
    own = str(os.getpid())
    assert sd_notify.watchdog_interval_s({}) is None
    assert sd_notify.watchdog_interval_s({"WATCHDOG_USEC": "10000000"}) == 10.0
    assert sd_notify.watchdog_interval_s({"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": own}) == 10.0
    # Meant for another process (a parent that exec'd us without unsetting it).
    assert sd_notify.watchdog_interval_s({"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "1"}) is None
    assert sd_notify.watchdog_interval_s({"WATCHDOG_USEC": "0"}) is None
    assert sd_notify.watchdog_interval_s({"WATCHDOG_USEC": "soon"}) is None
    assert sd_notify.watchdog_interval_s({"WATCHDOG_USEC": "5", "WATCHDOG_PID": "me"}) is None
