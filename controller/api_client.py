"""The one Python client of the MQTT API (``docs/mqtt-api.md``, ``docs/asyncapi.yaml``).

It knows the API and nothing of the daemon's internals: it imports no part of the table,
the drivers, the vision or the simulators (an import-linter contract in ``pyproject.toml``
keeps it so), so whoever speaks to a table (the demo's people, ``livetable ctl``, a console,
the tests) speaks to it the way a platform or a script would.

- :func:`start_client`: a paho connection, watched (one error line per connection problem,
  ``TCP_NODELAY``: :func:`controller.mqtt_connection.watch_connection`).
- :class:`ApiClient`: one account's connection to one table: its retained availability and
  state, every event it saw, requests sent with a transaction and their answers awaited.
  With MQTT 5 a request the broker's ACL refuses is known at once (its PUBACK says so).
- :class:`EventSeries` and :meth:`ApiClient.catch_up`: events applied by ``seq`` with gap
  detection, and the ``events`` catch-up paged while ``more`` is true; another ``epoch`` is
  another journal, whose series starts again at 1.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt

from controller.mqtt_connection import watch_connection

logger = logging.getLogger(__name__)

RESPONSE_TIMEOUT_S = 10.0


class BrokerRefused(Exception):
    """The broker refused to pass a request on (MQTT 5: its PUBACK said so, e.g. the ACL
    does not let this account send under this role)."""


@dataclass
class Account:
    role: str
    username: str | None = None
    password: str | None = None

    @property
    def name(self) -> str:
        return self.username or f"anonymous-{self.role}"


def start_client(
    host: str,
    port: int,
    client_id: str,
    *,
    on_connect: Callable[..., None],
    on_message: Callable[..., None],
    on_disconnect: Callable[..., None] | None = None,
    on_subscribe: Callable[..., None] | None = None,
    on_publish: Callable[..., None] | None = None,
    protocol: int = mqtt.MQTTv311,
    clean: bool = True,
    login: tuple[str, str | None] | None = None,
    tls_ca: str | None = None,
    reconnect_delay_s: tuple[int, int] | None = None,
) -> mqtt.Client:
    """A paho client (callback API 2) with these callbacks, connecting to ``host:port`` in
    the background (keepalive 30 s), its network thread started. Its connection is watched
    (:func:`controller.mqtt_connection.watch_connection`): every connection problem is one
    error line at once and again at a slowing pace, and its socket sets ``TCP_NODELAY``.

    ``clean``: MQTT 3.1.1's clean session (off: the broker keeps the session's QoS 1
    messages while it is away; MQTT 5 has no such flag here). ``login``: (username,
    password). ``tls_ca``: TLS, with this CA file. ``reconnect_delay_s``: (first, longest)
    wait before reconnecting, instead of paho's (1, 120).
    """
    options: dict[str, Any] = {} if protocol == mqtt.MQTTv5 else {"clean_session": clean}
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol, **options
    )
    if login is not None:
        client.username_pw_set(*login)
    if tls_ca is not None:
        client.tls_set(ca_certs=tls_ca)
    if reconnect_delay_s is not None:
        client.reconnect_delay_set(*reconnect_delay_s)
    client.on_connect = on_connect
    client.on_message = on_message
    if on_disconnect is not None:
        client.on_disconnect = on_disconnect
    # Set before the network thread starts: a SUBACK or PUBACK that comes before a callback
    # set afterwards would be missed (a client waiting for it would wait in vain).
    if on_subscribe is not None:
        client.on_subscribe = on_subscribe
    if on_publish is not None:
        client.on_publish = on_publish
    watch_connection(
        client,
        host,
        port,
        protocol="5" if protocol == mqtt.MQTTv5 else "3.1.1",
        username=None if login is None else login[0],
        client_id=client_id,
        log=logger,
        name=client_id,
    )
    client.connect_async(host, port, keepalive=30)
    client.loop_start()
    return client


@dataclass
class EventSeries:
    """A table's events applied in ``seq`` order within one ``epoch``.

    :meth:`add` says what an event is to the series: ``new`` (the next one, applied),
    ``repeat`` (QoS 1 delivered it again: dropped) or ``gap`` (events are missing before
    it: catch up with ``events`` from :attr:`last_seq`, then add it again). :meth:`epoch_is`
    starts the series again when a state or ``events`` answer names another journal.
    """

    epoch: str | None = None
    last_seq: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    def epoch_is(self, epoch: str | None) -> bool:
        """Take ``epoch`` as the series'; True if that started a new series (the events
        held belonged to another journal, whose seq and round ids come again)."""
        if epoch is None or epoch == self.epoch:
            return False
        renewed = self.epoch is not None
        self.epoch, self.last_seq, self.events = epoch, 0, []
        return renewed

    def add(self, event: dict[str, Any]) -> str:
        seq = int(event["seq"])
        if seq <= self.last_seq:
            return "repeat"
        if seq > self.last_seq + 1:
            return "gap"
        self.events.append(event)
        self.last_seq = seq
        return "new"


class ApiClient:
    """One account's MQTT connection to one table's API."""

    def __init__(
        self,
        host: str,
        port: int,
        table_id: str,
        account: Account,
        *,
        prefix: str = "livetable",
        protocol: int = mqtt.MQTTv311,
        client_id: str | None = None,
        clean: bool = True,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        on_state: Callable[[dict[str, Any]], None] | None = None,
        tls_ca: str | None = None,
        login: tuple[str, str | None] | None = None,
    ) -> None:
        self.table_id = table_id
        self.account = account
        self.response_timeout_s = RESPONSE_TIMEOUT_S
        self.base = f"{prefix}/{table_id}"
        self.response_topic = f"{self.base}/response/{account.name}"
        self.on_event = on_event
        self.on_state = on_state
        self._lock = threading.Condition()
        self.state: dict[str, Any] | None = None
        self.events: list[dict[str, Any]] = []
        self.availability: str | None = None
        self._responses: dict[str, dict[str, Any]] = {}
        # MQTT 5: the broker's PUBACK of each request, by the transaction it carried.
        self._mids: dict[int, str] = {}
        self._broker_refusals: dict[str, str] = {}
        self._acks: dict[int, str] = {}
        self.connected = threading.Event()
        self.subscribed = threading.Event()
        self.refused: Any = None
        if login is None and account.username is not None:
            login = (account.username, account.password)
        # With ``login``: one broker account for every role (the demo's broker).
        self.client = start_client(
            host,
            port,
            client_id or f"{account.name}-{uuid.uuid4().hex[:8]}",
            on_connect=self._on_connect,
            on_message=self._on_message,
            protocol=protocol,
            clean=clean,
            login=login,
            tls_ca=tls_ca,
            on_subscribe=self._on_subscribe,
            on_publish=self._on_publish,
        )

    def _on_connect(self, client: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if reason.is_failure:
            with self._lock:
                self.refused = reason
                self._lock.notify_all()
            return
        client.subscribe(
            [
                (f"{self.base}/state", 1),
                (f"{self.base}/events", 1),
                (f"{self.base}/availability", 1),
                (self.response_topic, 1),
            ]
        )
        self.connected.set()

    def _on_subscribe(self, _c: Any, _u: Any, _mid: int, _reasons: Any, _p: Any) -> None:
        # Retained messages follow the SUBACK: from here a missing state is missing.
        self.subscribed.set()

    def _on_publish(self, _c: Any, _u: Any, mid: int, reason: Any, _p: Any) -> None:
        refusal = str(reason) if getattr(reason, "is_failure", False) else ""
        with self._lock:
            transaction = self._mids.pop(mid, None)
            if transaction is None:
                # The PUBACK came before send() noted its mid: send() takes it from here.
                # (Or a publish made on ``client`` directly: bounded, oldest dropped.)
                self._acks[mid] = refusal
                if len(self._acks) > 1000:
                    self._acks.pop(next(iter(self._acks)))
            elif refusal and transaction:
                self._broker_refusals[transaction] = refusal
                self._lock.notify_all()

    def _on_message(self, _client: Any, _u: Any, message: Any) -> None:
        topic = message.topic
        if topic.endswith("/availability"):
            with self._lock:
                self.availability = message.payload.decode()
                self._lock.notify_all()
            return
        try:
            body = json.loads(message.payload)
        except ValueError:
            logger.warning("not JSON on %s", topic)
            return
        if topic == f"{self.base}/state":
            with self._lock:
                # By seq within one journal; another epoch is a new journal, whose seq
                # started again at 1.
                if (
                    self.state is None
                    or body.get("epoch") != self.state.get("epoch")
                    or body["seq"] >= self.state["seq"]
                ):
                    self.state = body
                self._lock.notify_all()
            if self.on_state is not None:
                self.on_state(body)
        elif topic == f"{self.base}/events":
            with self._lock:
                self.events.append(body)
                self._lock.notify_all()
            if self.on_event is not None:
                self.on_event(body)
        elif topic.startswith(self.response_topic):
            with self._lock:
                self._responses[str(body.get("transaction"))] = body
                self._lock.notify_all()

    def wait_connected(self, timeout: float = 10.0) -> bool:
        return self.connected.wait(timeout)

    def send(self, command: str, transaction: str | None = None, **args: Any) -> str:
        """Publish ``command`` with ``args`` under a transaction (a new UUID unless given)
        and return the transaction, whose answer :meth:`response` waits for."""
        transaction = transaction or uuid.uuid4().hex
        topic = f"{self.base}/request/{self.account.role}/{self.account.name}/{command}"
        # Not under the lock: paho calls on_publish holding its own lock, which publish takes.
        info = self.client.publish(topic, json.dumps({"transaction": transaction, **args}), qos=1)
        with self._lock:
            early = self._acks.pop(info.mid, None)
            if early is None:
                self._mids[info.mid] = transaction
            elif early:
                self._broker_refusals[transaction] = early
        return transaction

    def send_raw(self, command: str, payload: bytes, role: str | None = None) -> None:
        role = role or self.account.role
        topic = f"{self.base}/request/{role}/{self.account.name}/{command}"
        info = self.client.publish(topic, payload, qos=1)
        # Noted like a request's (with no transaction to answer), so that no PUBACK of it
        # is left over for a later request that paho gives the same packet id.
        with self._lock:
            if self._acks.pop(info.mid, None) is None:
                self._mids[info.mid] = ""

    def response(self, transaction: str, timeout: float | None = None) -> dict[str, Any]:
        """The table's answer to ``transaction``; TimeoutError if none comes in ``timeout``,
        :class:`BrokerRefused` if the broker said it would not pass the request on."""
        timeout = self.response_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self._lock:
            while transaction not in self._responses:
                if transaction in self._broker_refusals:
                    raise BrokerRefused(self._broker_refusals.pop(transaction))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no response to {transaction}")
                self._lock.wait(left)
            return self._responses.pop(transaction)

    def request(
        self,
        command: str,
        timeout: float | None = None,
        transaction: str | None = None,
        **args: Any,
    ) -> dict[str, Any]:
        """Send ``command`` and wait for its answer (see :meth:`send`, :meth:`response`).
        Sending it again with the same ``transaction`` gets the stored answer: the table
        executes a request at most once per account and transaction."""
        return self.response(self.send(command, transaction, **args), timeout)

    def catch_up(
        self,
        series: EventSeries | None = None,
        *,
        limit: int | None = None,
        timeout: float | None = None,
    ) -> EventSeries:
        """Page ``events`` after ``series.last_seq`` (a new series: from 0) until ``more``
        is false, adding each to ``series`` in order; an answer under another ``epoch``
        starts the series again from 0. Returns the series. TimeoutError as for
        :meth:`response`; RuntimeError naming the table's error if it refuses a page."""
        series = series if series is not None else EventSeries()
        more = True
        while more:
            args: dict[str, Any] = {"since": series.last_seq}
            if limit is not None:
                args["limit"] = limit
            answer = self.request("events", timeout, **args)
            if not answer.get("ok"):
                raise RuntimeError(f"events since {series.last_seq}: {answer.get('message')}")
            data = answer["data"]
            if series.epoch_is(data.get("epoch")) and args["since"] != 0:
                continue  # another journal: its series from the start
            for event in data["events"]:
                if series.add(event) == "gap":
                    raise RuntimeError(
                        f"events answer skips from {series.last_seq} to {event['seq']}"
                    )
            more = bool(data.get("more")) and bool(data["events"])
        return series

    def wait_for(
        self, predicate: Callable[[ApiClient], bool], timeout: float, what: str = "it"
    ) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what}")
                self._lock.wait(min(left, 0.5))

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
