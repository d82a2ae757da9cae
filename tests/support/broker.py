"""A real mosquitto broker on a free loopback port, for tests: the one in simulators/broker.py
(which ``livetable bench latency`` uses too), and the password file a locked-down broker reads.

``BrokerProcess.stop`` reports whether the broker had died on its own, so a fixture can fail
the test that killed it; ``BrokerProcess.restart`` brings it back on the same port.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from simulators.broker import BrokerProcess, free_port, start_broker

__all__ = ["BrokerProcess", "free_port", "start_broker", "write_password_file"]

MOSQUITTO_PASSWD = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"


def write_password_file(path: Path, users: dict[str, tuple[str, str]]) -> None:
    path.touch(mode=0o600)
    for username, password in users.values():
        subprocess.run(
            [MOSQUITTO_PASSWD, "-b", str(path), username, password],
            check=True,
            capture_output=True,
        )
