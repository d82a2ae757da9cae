"""A real mosquitto broker on a free loopback port, for tests: the one in simulators/broker.py
(which ``livetable bench latency`` uses too), and the password file a locked-down broker reads.

``BrokerProcess.stop`` reports whether the broker had died on its own, so a fixture can fail
the test that killed it; ``BrokerProcess.restart`` brings it back on the same port.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simulators.broker import BrokerProcess, free_port, start_broker

__all__ = ["BrokerProcess", "closed_port", "free_port", "start_broker", "write_password_file"]

MOSQUITTO_PASSWD = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"


def write_password_file(path: Path, users: dict[str, tuple[str, str]]) -> None:
    path.touch(mode=0o600)
    for username, password in users.values():
        subprocess.run(
            [MOSQUITTO_PASSWD, "-b", str(path), username, password],
            check=True,
            capture_output=True,
        )


@contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for as long as the block runs: bound but
    not listening, so that no other test's broker (on the other xdist worker) can take it,
    as it could a port that :func:`free_port` found free a moment before."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as reserved:
        reserved.bind(("127.0.0.1", 0))
        yield reserved.getsockname()[1]
