"""What the demo prints: its own API client to every table, feeding the live view or printing
one line (or one JSON object) per message."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any, TextIO

from controller.tools.demo_broker import TOPIC_PREFIX, BrokerAddress


class Watcher:
    """The demo's own API client, one account's connection to every table (the API client's
    :class:`~controller.client.api_client.StudioClient`): feeds the view, prints lines or JSON.
    Connected before any table starts; a table it sees first has its events caught up from
    the start, so it sees every event, in ``seq`` order, once."""

    def __init__(
        self,
        broker: BrokerAddress,
        watch: Any,
        printer: Callable[[str], None] | None,
        as_json: bool,
    ) -> None:
        from controller.client.api_client import StudioClient

        self.watch = watch
        self.printer = printer
        self.as_json = as_json
        self.studio = StudioClient(
            broker.host,
            broker.port,
            watcher_account(broker),
            prefix=TOPIC_PREFIX,
            protocol=broker.paho_protocol,
            client_id=f"livetable-demo-view-{os.getpid()}",
            on_update=self._on_update,
            **broker.client_tls,
        )

    def wait_connected(self, timeout: float) -> bool:
        return self.studio.wait_connected(timeout)

    def _on_update(self, update: Any) -> None:
        line = self.watch.update(update)
        if self.printer is None or update.kind == "epoch":
            return
        if self.as_json:
            channel = "events" if update.kind == "event" else update.kind
            topic = f"{TOPIC_PREFIX}/{update.table_id}/{channel}"
            self.printer(json.dumps({"topic": topic, "payload": update.body}, sort_keys=True))
        elif line is not None:
            event = update.body
            self.printer(f"{update.table_id} #{event['seq']:<4} {event['type']:<18} {line}")
        elif update.kind == "availability":
            self.printer(f"{update.table_id} is {update.body}")

    def close(self) -> None:
        self.studio.close()


def watcher_account(broker: BrokerAddress) -> Any:
    """The account the demo's view speaks as: a viewer, under the broker's login."""
    from controller.client.api_client import Account

    if broker.login is None:
        return Account("viewer")
    return Account("viewer", broker.login[0], broker.login[1])


class Printer:
    """One write per line under a lock: the subscriber prints from its own thread."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self.lock:
            self.out.write(text + "\n")
            self.out.flush()
