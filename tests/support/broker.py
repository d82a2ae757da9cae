"""A real mosquitto broker on a free loopback port, for tests.

Started with a temporary config, waited on until it accepts TCP connections, stopped at the
end; ``BrokerProcess.stop`` reports whether it had died on its own, so a fixture can fail the
test that killed it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
MOSQUITTO_PASSWD = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"

# Long enough for a cold start on the slow 2-core CI machine.
START_TIMEOUT_S = 10.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class BrokerProcess:
    host: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    users: dict[str, tuple[str, str]] = field(default_factory=dict)

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")
        return ""

    def restart(self) -> None:
        """Start the broker again on the same port with the same configuration (a stopped
        broker with ``persistence true`` comes back with its sessions and retained
        messages)."""
        if self.alive():
            raise RuntimeError("the broker is still running")
        self.process = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.log_path.parent / "mosquitto.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if not _wait_until_listening(self):
            raise RuntimeError(f"mosquitto did not restart; log:\n{self.log()}")

    def stop(self) -> int | None:
        """Stop the broker; return its exit code if it had already died, else None."""
        died_with = self.process.poll()
        if died_with is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return died_with


def _wait_until_listening(broker: BrokerProcess) -> bool:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if not broker.alive():
            return False
        with (
            contextlib.suppress(OSError),
            socket.create_connection((broker.host, broker.port), timeout=0.5),
        ):
            return True
        time.sleep(0.02)
    return False


def start_broker(
    workdir: Path,
    *,
    extra_config: str = "allow_anonymous true\n",
    users: dict[str, tuple[str, str]] | None = None,
    persistence: bool = False,
) -> BrokerProcess:
    """Start mosquitto in ``workdir``; retry on a new port if another process took ours."""
    workdir.mkdir(parents=True, exist_ok=True)
    last_log = ""
    for _attempt in range(5):
        port = free_port()
        config = workdir / "mosquitto.conf"
        log_path = workdir / "mosquitto.log"
        config.write_text(
            f"listener {port} 127.0.0.1\n"
            + (
                f"persistence true\npersistence_location {workdir}/\nautosave_interval 1\n"
                if persistence
                else "persistence false\n"
            )
            + f"log_dest file {log_path}\n"
            "log_type error\nlog_type warning\nlog_type notice\n"
            # As root, mosquitto would switch to the 'mosquitto' user, which cannot read the
            # test's private temporary files; a test broker stays the user that started it.
             + ("user root\n" if os.geteuid() == 0 else "") + extra_config
        )
        process = subprocess.Popen(
            [MOSQUITTO, "-c", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        broker = BrokerProcess("127.0.0.1", port, process, log_path, dict(users or {}))
        if _wait_until_listening(broker):
            return broker
        last_log = broker.log()
        broker.stop()
    raise RuntimeError(f"mosquitto did not start; last log:\n{last_log}")


def write_password_file(path: Path, users: dict[str, tuple[str, str]]) -> None:
    path.touch(mode=0o600)
    for username, password in users.values():
        subprocess.run(
            [MOSQUITTO_PASSWD, "-b", str(path), username, password],
            check=True,
            capture_output=True,
        )
