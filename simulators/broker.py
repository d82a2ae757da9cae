"""A throw-away mosquitto broker on a free loopback port, for benches and tests.

Started with a temporary configuration in a work folder, waited on until it accepts TCP
connections, stopped at the end; :meth:`BrokerProcess.stop` reports whether it had died on
its own, so a test fixture can fail the test that killed it, and
:meth:`BrokerProcess.restart` brings it back on the same port. Installed code
(``livetable bench latency``) cannot import the test suite's helpers, so the broker lives
here and the tests' broker fixtures use this one.
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

# Long enough for a cold start on a slow 2-core machine.
START_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (another process may take it before we bind it)."""
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

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")
        return ""

    @property
    def config_path(self) -> Path:
        return self.log_path.parent / "mosquitto.conf"

    def restart(self) -> None:
        """Start the broker again on the same port with the same configuration (a stopped
        broker with ``persistence true`` comes back with its sessions and retained
        messages)."""
        if self.alive():
            raise RuntimeError("the broker is still running")
        self.process = _launch(self.config_path)
        if not wait_until_listening(self):
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

    def __enter__(self) -> BrokerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _launch(config: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [MOSQUITTO, "-c", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_until_listening(broker: BrokerProcess, timeout_s: float = START_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout_s
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


def broker_config(port: int, workdir: Path, extra_config: str, persistence: bool) -> str:
    log_path = workdir / "mosquitto.log"
    return (
        f"listener {port} 127.0.0.1\n"
        + (
            f"persistence true\npersistence_location {workdir}/\nautosave_interval 1\n"
            if persistence
            else "persistence false\n"
        )
        + f"log_dest file {log_path}\n"
        "log_type error\nlog_type warning\nlog_type notice\n"
        # As root, mosquitto would switch to the 'mosquitto' user, which cannot read the
        # caller's private temporary files; a throw-away broker stays the user that started it.
        + ("user root\n" if os.geteuid() == 0 else "")
        + extra_config
    )


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
        config.write_text(broker_config(port, workdir, extra_config, persistence))
        process = _launch(config)
        broker = BrokerProcess(
            "127.0.0.1", port, process, workdir / "mosquitto.log", dict(users or {})
        )
        if wait_until_listening(broker):
            return broker
        last_log = broker.log()
        broker.stop()
    raise RuntimeError(f"mosquitto did not start; last log:\n{last_log}")
