"""The supervisors' console beside the demo (``livetable demo --console``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from controller.kernel.errors import ConfigurationError
from controller.tools.demo_broker import TOPIC_PREFIX, BrokerAddress

# How long the console the demo starts has to answer on its port.
CONSOLE_START_S = 30.0


class ConsoleProcess:
    """``livetable console`` as a child process on a free loopback port, against the demo's
    broker: its ``console.toml`` and its log in the work folder."""

    def __init__(self, work: Path, broker: BrokerAddress) -> None:
        from simulators.broker import free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.config = work / "console.toml"
        self.log_path = work / "console.log"
        # The daemons' protocol: the embedded broker speaks 3.1.1 only.
        self.config.write_text(
            "# Written by livetable demo --console.\n"
            f'[console]\nlisten = "127.0.0.1:{self.port}"\n\n'
            f'[mqtt]\nhost = "{broker.host}"\nport = {broker.port}\n'
            f'protocol = "{broker.mqtt_protocol}"\ntopic_prefix = "{TOPIC_PREFIX}"\n'
            + (
                f'\n[mqtt.tls]\nca_file = "{broker.daemon_ca_file()}"\n'
                if broker.tls
                else ""
            ),
            encoding="utf-8",
        )
        self.process: Any = None

    def start(self) -> str:
        """Start it and wait until it answers; its address."""
        import subprocess
        import urllib.error
        import urllib.request

        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    *[sys.executable, "-m", "controller.tools.cli"],
                    *["console", "--config", str(self.config)],
                    *["--listen", f"127.0.0.1:{self.port}"],
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + CONSOLE_START_S
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return self.url
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        said = self.log_path.read_text(errors="replace").strip().splitlines()[-1:]
        raise ConfigurationError(
            "the console did not start"
            + (f": {said[0]}" if said else f" in {CONSOLE_START_S:g} s")
            + f" (its log: {self.log_path})"
        )

    def stop(self) -> None:
        import subprocess

        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
