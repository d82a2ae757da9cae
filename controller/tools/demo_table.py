"""One table of the demo: its shoe on a pty, its daemon (in this process or its own), and the
people around it over MQTT."""

from __future__ import annotations

import argparse
import dataclasses
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from controller.kernel.errors import ConfigurationError
from controller.tools.demo_broker import TOPIC_PREFIX, BrokerAddress

# Rates of trouble, so that pauses happen and the supervisor has something to do.
DEFAULT_MISREAD_RATE = 0.05
DEFAULT_CAMERA_MISREAD_RATE = 0.1  # with a camera: it reads most of them
# How long the demo waits for the last messages and for its daemons to stop.
SETTLE_S = 5.0
# How long a demo table, told to stop, waits for the round in play ([table] stop_timeout_s).
DEMO_STOP_TIMEOUT_S = 1.0


def write_table_config(
    folder: Path, table_id: str, args: argparse.Namespace, broker: BrokerAddress
) -> Path:
    """The table's TOML file in its folder, as a studio writes one for ``livetable run``."""
    from simulators.table_config import write_table_config as write

    username, password = broker.login if broker.login is not None else (None, None)
    return write(
        folder / f"{table_id}.toml",
        table_id=table_id,
        game=args.game,
        shoe_port=folder / "shoe",
        protocol=args.protocol,
        broker_host=broker.host,
        broker_port=broker.port,
        broker_hosts=broker.hosts or None,
        mqtt_protocol=broker.mqtt_protocol,
        betting_s=args.betting_s,
        decision_s=args.decision_s,
        dealer_idle_s=args.dealer_idle_s,
        # The demo stops its bots before its tables: a round in play would never finish.
        stop_timeout_s=DEMO_STOP_TIMEOUT_S,
        client_id=f"livetable-{table_id}-{os.getpid()}",
        topic_prefix=TOPIC_PREFIX,
        username=username,
        password=password,
        tls_ca_file=broker.daemon_ca_file(),
    )


class InProcessDaemon:
    """``livetable run``'s :class:`~controller.service.daemon.TableDaemon`, on a thread of this
    process (so that a simulated camera can stand in for the capture). The daemon is made
    on that thread: its journal (SQLite) belongs to the thread that opened it."""

    def __init__(self, config_path: Path, camera: Any = None, reader: Any = None) -> None:
        from controller.service.config import load_config

        config = load_config(config_path)
        if reader is not None:
            config = dataclasses.replace(config, vision=reader)
        self.config = config
        self.camera = camera
        self._stop = threading.Event()
        self._made = threading.Event()
        self.status: int | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"table-{config.table.table_id}", daemon=True
        )

    def _run(self) -> None:
        from controller.service.daemon import TableDaemon

        try:
            daemon = TableDaemon(self.config, camera_source=self.camera)
        except BaseException as error:
            self.error = error
            self.status = 1
            return
        finally:
            self._made.set()
        try:
            self.status = daemon.run(self._stop)
        except BaseException as error:  # reported by the demo, which then stops
            self.error = error
            self.status = 1

    def start(self) -> None:
        self._thread.start()
        self._made.wait()
        if self.error is not None:
            raise self.error

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(SETTLE_S * 2)

    def why(self) -> str:
        return repr(self.error) if self.error is not None else f"exit {self.status}"


class DemoTable:
    """One table: its shoe on a pty, its daemon, and the people around it over MQTT."""

    def __init__(
        self,
        index: int,
        table_id: str,
        args: argparse.Namespace,
        work: Path,
        broker: BrokerAddress,
        in_process: bool,
        deck: Path | None,
        stood_aside: Callable[[str, str], None] | None = None,
    ) -> None:
        from controller.client.api_client import Account, ApiClient
        from simulators.daemon_process import DaemonProcess
        from simulators.dealer import DealerSimulator
        from simulators.mqtt_bots import TableBots
        from simulators.shoe.simulator import FaultPlan, ShoeSimulator

        self.table_id = table_id
        self.folder = work / table_id
        self.folder.mkdir(parents=True)
        seed = args.seed + index
        self.shoe = ShoeSimulator(
            args.protocol,
            self.folder / "shoe",
            seed=seed,
            cut_card_depth=args.cut_card_depth,
            faults=FaultPlan(
                garbage_rate=args.line_noise,
                corrupt_rate=args.line_noise,
                duplicate_rate=args.line_noise,
            ),
            # What left the shoe, misread cards' faces included: the truth to check against.
            truth_path=self.folder / "shoe-truth.jsonl",
        )
        self.config_path = write_table_config(self.folder, table_id, args, broker)
        self.camera: Any = None
        reader = None
        if deck is not None:
            from drivers.camera_reader import ReaderConfig
            from simulators.camera import SimulatedCamera

            self.camera = SimulatedCamera(args.game, args.design, seed=seed, clock=time.time)
            reader = ReaderConfig(deck=deck, deadline_s=args.camera_deadline_s)
        self.daemon: InProcessDaemon | DaemonProcess = (
            InProcessDaemon(self.config_path, self.camera, reader)
            if in_process
            else DaemonProcess(self.config_path, self.folder / "daemon.log")
        )
        misread_rate = args.misread_rate
        if misread_rate is None:
            misread_rate = DEFAULT_CAMERA_MISREAD_RATE if deck is not None else DEFAULT_MISREAD_RATE
        self.dealer = DealerSimulator(
            self.shoe, pace_s=args.pace_s, felt=self.camera, misread_rate=misread_rate
        )
        self.clients: list[Any] = []

        def client(role: str, name: str) -> Any:
            made = ApiClient(
                broker.host,
                broker.port,
                table_id,
                Account(role, name),
                login=broker.login,
                protocol=broker.paho_protocol,
                hosts=broker.hosts or None,
                **broker.client_tls,
            )
            self.clients.append(made)
            return made

        self.bots = TableBots(
            client("platform", "platform"),
            client("supervisor", "demo-supervisor"),
            rounds=args.rounds,
            seed=seed,
            dealer=self.dealer,
            resolve_delay_s=args.resolve_delay_s,
            mistake_rate=args.mistake_rate,
            resolves_pauses=args.supervisor != "manual",
            on_stood_aside=None if stood_aside is None else partial(stood_aside, table_id),
        )

    def start(self) -> None:
        self.shoe.start()
        self.daemon.start()
        for made in self.clients:
            if not made.wait_connected():
                raise ConfigurationError(f"the broker refused the demo's clients: {made.refused}")
        self.bots.start()

    def stop(self) -> None:
        self.bots.stop()
        self.daemon.stop()
        for made in self.clients:
            made.close()
        self.shoe.stop()
