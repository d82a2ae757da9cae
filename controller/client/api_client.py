"""The one Python client of the MQTT API (``docs/mqtt-api.md``, ``docs/asyncapi.yaml``).

It knows the API and nothing of the daemon's internals: it imports no part of the table,
the drivers, the vision or the simulators (an import-linter contract in ``pyproject.toml``
keeps it so), so whoever speaks to a table (the demo's people, ``livetable ctl``, a console,
the tests) speaks to it the way a platform or a script would.

- :func:`start_client`: a paho connection, watched (one error line per connection problem,
  ``TCP_NODELAY``: :func:`controller.mqtt.connection.watch_connection`).
- :class:`ApiClient`: one account's connection to one table: its retained availability and
  state, every event it saw, requests sent with a transaction and their answers awaited.
  With MQTT 5 a request the broker's ACL refuses is known at once (its PUBACK says so).
- :class:`EventSeries` and :meth:`ApiClient.catch_up`: events applied by ``seq`` with gap
  detection, and the ``events`` catch-up paged while ``more`` is true; another ``epoch`` is
  another journal, whose series starts again at 1.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt

from controller.mqtt.connection import Subscriptions, watch_connection

logger = logging.getLogger(__name__)

RESPONSE_TIMEOUT_S = 10.0
# Answers kept for their requests' waits; one that came after its wait gave up is dropped
# with the oldest beyond this many.
MAX_UNCLAIMED_ANSWERS = 1000
# A StudioClient's catch-up waits no longer for a page: one table that does not answer must
# not hold up the others' (the worker is one thread).
CATCH_UP_TIMEOUT_S = 5.0
# ... and asks again this long after a page that went unanswered.
CATCH_UP_RETRY_S = 2.0
# A page answered rate_limited (the account paged faster than the table reads for it) is
# asked again after this long, at most this many times in a row.
PAGE_RETRY_S = 0.25
PAGE_RETRIES = 40


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


def brokers(host: str, port: int, hosts: Sequence[tuple[str, int]] | None) -> list[tuple[str, int]]:
    """``host:port`` first, then the other ``hosts`` in their order."""
    return [(host, port)] + [each for each in hosts or () if each != (host, port)]


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
    hosts: Sequence[tuple[str, int]] | None = None,
    tls: bool = False,
) -> mqtt.Client:
    """A paho client (callback API 2) with these callbacks, connecting to ``host:port`` in
    the background (keepalive 30 s), its network thread started. Its connection is watched
    (:func:`controller.mqtt.connection.watch_connection`): every connection problem is one
    error line at once and again at a slowing pace, and its socket sets ``TCP_NODELAY``.

    ``clean``: MQTT 3.1.1's clean session (off: the broker keeps the session's QoS 1
    messages while it is away; MQTT 5 has no such flag here). ``login``: (username,
    password). ``tls_ca``: TLS, with this CA file; ``tls``: TLS, trusting the system's CAs
    when no ``tls_ca`` is given (an ``mqtts://`` broker). ``reconnect_delay_s``: (first, longest)
    wait before reconnecting, instead of paho's (1, 120). ``hosts``: a cluster's nodes; the
    client starts at ``host:port`` and moves on to the next node, round-robin, whenever a
    connection fails or drops (same client id: a persistent session follows it).
    """
    options: dict[str, Any] = {} if protocol == mqtt.MQTTv5 else {"clean_session": clean}
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol, **options
    )
    if login is not None:
        client.username_pw_set(*login)
    if tls or tls_ca is not None:
        # ca_certs None: the system's default CAs.
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
        hosts=brokers(host, port, hosts),
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


class _RequestBook:
    """Requests sent under transactions and their answers, for one connection: the table's
    answers by transaction, and (MQTT 5) the broker's PUBACK of each request, so that a
    request the ACL refuses is known at once instead of timing out."""

    def __init__(self, lock: threading.Condition, timeout_s: float) -> None:
        self._lock = lock
        self.timeout_s = timeout_s
        self._responses: dict[str, dict[str, Any]] = {}
        # MQTT 5: the broker's PUBACK of each request, by the transaction it carried.
        self._mids: dict[int, str] = {}
        self._broker_refusals: dict[str, str] = {}
        self._acks: dict[int, str] = {}
        self.closed = False

    def close(self) -> None:
        """Wake every wait: the connection is closing, no answer will come."""
        with self._lock:
            self.closed = True
            self._lock.notify_all()

    def publish(
        self, client: mqtt.Client, topic: str, payload: str | bytes, transaction: str
    ) -> None:
        """Publish a request; ``transaction`` "" for one that is not answered."""
        # Not under the lock: paho calls on_publish holding its own lock, which publish takes.
        info = client.publish(topic, payload, qos=1)
        with self._lock:
            early = self._acks.pop(info.mid, None)
            if early is None:
                self._mids[info.mid] = transaction
            elif early and transaction:
                self._broker_refusals[transaction] = early
                self._lock.notify_all()

    def on_publish(self, _c: Any, _u: Any, mid: int, reason: Any, _p: Any) -> None:
        refusal = str(reason) if getattr(reason, "is_failure", False) else ""
        with self._lock:
            transaction = self._mids.pop(mid, None)
            if transaction is None:
                # The PUBACK came before publish() noted its mid: publish() takes it from
                # here. (Or a publish made on the client directly: bounded, oldest dropped.)
                self._acks[mid] = refusal
                if len(self._acks) > 1000:
                    self._acks.pop(next(iter(self._acks)))
            elif refusal and transaction:
                self._broker_refusals[transaction] = refusal
            self._lock.notify_all()

    def answered(self, body: dict[str, Any]) -> None:
        """Called holding the lock: the table's answer to one transaction."""
        self._responses[str(body.get("transaction"))] = body
        # An answer nobody waits for any more (it came after its wait timed out) is let go
        # with the oldest: bounded.
        if len(self._responses) > MAX_UNCLAIMED_ANSWERS:
            self._responses.pop(next(iter(self._responses)))
        self._lock.notify_all()

    def passed(self, transaction: str, timeout: float) -> bool:
        """MQTT 5: wait for the broker's PUBACK of the request under ``transaction``: True
        if the broker took it, False if it refused it (its ACL) or said nothing in
        ``timeout``. The table's answer, if one comes, is left for :meth:`wait`."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                if self._broker_refusals.pop(transaction, None) is not None:
                    return False
                if transaction not in self._mids.values():
                    return True  # acknowledged without a refusal
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.1))

    def wait(self, transaction: str, timeout: float | None) -> dict[str, Any]:
        timeout = self.timeout_s if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self._lock:
            while transaction not in self._responses:
                if transaction in self._broker_refusals:
                    raise BrokerRefused(self._broker_refusals.pop(transaction))
                if self.closed:
                    raise TimeoutError(f"no response to {transaction}: the client closed")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no response to {transaction}")
                self._lock.wait(left)
            return self._responses.pop(transaction)


def _page_events(
    request: Callable[..., dict[str, Any]],
    what: str,
    series: EventSeries,
    limit: int | None,
    timeout: float | None,
) -> EventSeries:
    """Page ``events`` after ``series.last_seq`` until ``more`` is false (see
    :meth:`ApiClient.catch_up`); ``request(command, timeout, **args)`` asks one table."""
    more = True
    retries = 0
    while more:
        args: dict[str, Any] = {"since": series.last_seq}
        if limit is not None:
            args["limit"] = limit
        answer = request("events", timeout, **args)
        limited = (answer.get("error") or {}).get("code") == "rate_limited"
        if limited and retries < PAGE_RETRIES:
            # A long catch-up pages past the table's budget of pages: it goes on at the
            # table's pace rather than fail.
            retries += 1
            time.sleep(PAGE_RETRY_S)
            continue
        retries = 0
        if not answer.get("ok"):
            raise RuntimeError(f"{what}events since {series.last_seq}: {answer.get('message')}")
        data = answer["data"]
        if series.epoch_is(data.get("epoch")) and args["since"] != 0:
            continue  # another journal: its series from the start
        for event in data["events"]:
            if series.add(event) == "gap":
                raise RuntimeError(
                    f"{what}events answer skips from {series.last_seq} to {event['seq']}"
                )
        more = bool(data.get("more")) and bool(data["events"])
    return series


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
        hosts: Sequence[tuple[str, int]] | None = None,
        tls: bool = False,
    ) -> None:
        """``hosts``: a cluster's nodes to move on to when the connection fails or drops
        (``host:port`` is the first tried)."""
        self.table_id = table_id
        self.account = account
        self.base = f"{prefix}/{table_id}"
        self.response_topic = f"{self.base}/response/{account.name}"
        self.on_event = on_event
        self.on_state = on_state
        self._lock = threading.Condition()
        self._book = _RequestBook(self._lock, RESPONSE_TIMEOUT_S)
        self.state: dict[str, Any] | None = None
        self.events: list[dict[str, Any]] = []
        self.availability: str | None = None
        self.connected = threading.Event()
        self.subscribed = threading.Event()
        self.refused: Any = None
        if login is None and account.username is not None:
            login = (account.username, account.password)
        self._subscriptions = Subscriptions(
            None,
            [
                (f"{self.base}/state", 1),
                (f"{self.base}/events", 1),
                (f"{self.base}/availability", 1),
                (self.response_topic, 1),
            ],
            log=logger,
            name=self.account.name,
            on_done=self._subscribed,
        )
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
            tls=tls,
            on_subscribe=self._on_subscribe,
            on_publish=self._book.on_publish,
            hosts=hosts,
        )

    @property
    def response_timeout_s(self) -> float:
        return self._book.timeout_s

    @response_timeout_s.setter
    def response_timeout_s(self, seconds: float) -> None:
        self._book.timeout_s = seconds

    def _on_connect(self, client: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if reason.is_failure:
            with self._lock:
                self.refused = reason
                self._lock.notify_all()
            return
        # The first connection's subscriptions, or another node's (the session may be new
        # there); a refused one is asked again for a while (a cluster that lost a node).
        self._subscriptions.subscribe(client)
        self.connected.set()

    def _on_subscribe(self, _c: Any, _u: Any, mid: int, reasons: Any, _p: Any) -> None:
        self._subscriptions.on_suback(mid, reasons)
        # Retained messages follow the SUBACK: from here a missing state is missing.
        self.subscribed.set()

    def _subscribed(self, refused: list[str]) -> None:
        for topic in refused:
            logger.warning("the broker refused %s the subscription to %s", self.account.name, topic)

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
                self._book.answered(body)

    def wait_connected(self, timeout: float = 10.0) -> bool:
        return self.connected.wait(timeout)

    def send(self, command: str, transaction: str | None = None, **args: Any) -> str:
        """Publish ``command`` with ``args`` under a transaction (a new UUID unless given)
        and return the transaction, whose answer :meth:`response` waits for."""
        transaction = transaction or uuid.uuid4().hex
        topic = f"{self.base}/request/{self.account.role}/{self.account.name}/{command}"
        payload = json.dumps({"transaction": transaction, **args})
        self._book.publish(self.client, topic, payload, transaction)
        return transaction

    def send_raw(self, command: str, payload: bytes, role: str | None = None) -> None:
        role = role or self.account.role
        topic = f"{self.base}/request/{role}/{self.account.name}/{command}"
        # Noted like a request's (with no transaction to answer), so that no PUBACK of it
        # is left over for a later request that paho gives the same packet id.
        self._book.publish(self.client, topic, payload, "")

    def response(self, transaction: str, timeout: float | None = None) -> dict[str, Any]:
        """The table's answer to ``transaction``; TimeoutError if none comes in ``timeout``,
        :class:`BrokerRefused` if the broker said it would not pass the request on."""
        return self._book.wait(transaction, timeout)

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
        return _page_events(self.request, "", series, limit, timeout)

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
        self._book.close()
        self._subscriptions.close()
        self.client.disconnect()
        self.client.loop_stop()


@dataclass
class TableFeed:
    """What one account knows of one table: the latest of its retained topics and its
    events in ``seq`` order (the last ``keep`` of them), without a repeat or a gap."""

    table_id: str
    availability: str | None = None
    """``online``, ``offline``, or None before the table's availability was seen."""
    state: dict[str, Any] | None = None
    dealer: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    last_seq: int = 0
    epoch: str | None = None
    last_message_at: float | None = None
    """``time.time()`` when the last message of this table came (any of its topics)."""
    complete_since: int = 0
    """Every event after this ``seq`` is in :attr:`events` (older ones were not fetched,
    or were let go beyond ``keep``)."""
    ready: bool = False
    """The first catch-up is done: events arriving now are applied at once."""


@dataclass(frozen=True)
class TableUpdate:
    """Something a table said: ``kind`` is ``availability`` (``body`` is its text),
    ``state``, ``event``, ``dealer`` or ``epoch`` (the table's events start again under
    another journal: ``body`` is the new epoch)."""

    table_id: str
    kind: str
    body: Any


# The table id under which the role probe publishes: no daemon reads it, and every ACL
# pattern of a role (``<prefix>/+/request/<role>/<account>/#``) covers it.
PROBE_TABLE = "_probe"


class StudioClient:
    """One account's MQTT connection to every table it may read: each table's availability,
    state, dealer line and events (:class:`TableFeed`), and requests to any of them.

    A table's events are applied in ``seq`` order: on first sight of a table its last
    ``backfill`` events are fetched (``events`` from its state's ``seq`` less ``backfill``),
    and an event that shows a gap, or a state ahead of the events seen (after a reconnect of
    this client), has the missing ones fetched; both on a worker thread, because an answer
    comes through the same network thread that would be waiting for it. Events that arrive
    meanwhile are held and applied after. ``on_update`` is called with every
    :class:`TableUpdate` as it is applied, from the network or the worker thread;
    ``on_link`` with (True, "") when the connection is up and (False, why) when it drops.
    """

    def __init__(
        self,
        host: str,
        port: int,
        account: Account,
        *,
        prefix: str = "livetable",
        protocol: int = mqtt.MQTTv311,
        tls_ca: str | None = None,
        client_id: str | None = None,
        on_update: Callable[[TableUpdate], None] | None = None,
        on_link: Callable[[bool, str], None] | None = None,
        backfill: int = 1500,
        keep: int = 5000,
        reconnect_delay_s: tuple[int, int] | None = (1, 5),
        login: tuple[str, str | None] | None = None,
        hosts: Sequence[tuple[str, int]] | None = None,
        tls: bool = False,
    ) -> None:
        self.account = account
        self.prefix = prefix
        self.protocol = protocol
        self.on_update = on_update
        self.on_link = on_link
        self.backfill = backfill
        self.keep = keep
        self._lock = threading.Condition()
        self._book = _RequestBook(self._lock, RESPONSE_TIMEOUT_S)
        self._feeds: dict[str, TableFeed] = {}
        self._held: dict[str, dict[int, dict[str, Any]]] = {}
        self._wanted: list[str] = []
        self._closing = False
        self.connected = threading.Event()
        self.subscribed = threading.Event()
        self.refused: Any = None
        self.refused_subscriptions: list[str] = []
        """The topics of this client's subscriptions that the broker refused (its ACL)."""
        self.link_up = False
        self.link_why = "connecting"
        self._worker = threading.Thread(
            target=self._catch_up_loop, name=f"catch-up-{account.name}", daemon=True
        )
        self._worker.start()
        if login is None and account.username is not None:
            login = (account.username, account.password)
        self._subscriptions = Subscriptions(
            None,
            [(topic, 1) for topic in self._topics()],
            log=logger,
            name=account.name,
            on_done=self._subscribed,
        )
        # With ``login``: one broker account for several names (the demo's broker).
        self.client = start_client(
            host,
            port,
            client_id or f"{account.name}-{uuid.uuid4().hex[:8]}",
            on_connect=self._on_connect,
            on_message=self._on_message,
            on_disconnect=self._on_disconnect,
            on_subscribe=self._on_subscribe,
            on_publish=self._book.on_publish,
            protocol=protocol,
            login=login,
            tls_ca=tls_ca,
            tls=tls,
            reconnect_delay_s=reconnect_delay_s,
            hosts=hosts,
        )

    # -- the connection ---------------------------------------------------------------------

    def _on_connect(self, client: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if reason.is_failure:
            with self._lock:
                self.refused = reason
                self._lock.notify_all()
            self._link(False, f"the broker refused the connection: {reason}")
            return
        self._subscriptions.subscribe(client)
        self.connected.set()
        self._link(True, "")

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if not self._closing:
            self._link(False, f"the broker connection dropped: {reason}")

    def _on_subscribe(self, _c: Any, _u: Any, mid: int, reasons: Any, _p: Any) -> None:
        self._subscriptions.on_suback(mid, reasons)
        with self._lock:
            # What is refused so far; those the broker refuses for good are logged when the
            # retries are over (see _subscribed).
            self.refused_subscriptions = self._subscriptions.refused_now()
        # Retained messages follow the SUBACK: from here a table that shows none is not there.
        self.subscribed.set()

    def _subscribed(self, refused: list[str]) -> None:
        """Every subscription granted, or refused for good (after the retries)."""
        with self._lock:
            self.refused_subscriptions = [t for t in self._topics() if t in refused]
            self._lock.notify_all()
        for topic in refused:
            # A platform may not read the dealer's line (the shipped ACL): expected. Anything
            # else is an account without the rights its role needs.
            log = logger.info if topic.endswith("/dealer") else logger.warning
            log("the broker refused %s the subscription to %s", self.account.name, topic)

    def _topics(self) -> list[str]:
        base = f"{self.prefix}/+"
        return [
            f"{base}/availability",
            f"{base}/state",
            f"{base}/events",
            f"{base}/dealer",
            f"{base}/response/{self.account.name}",
        ]

    def _link(self, up: bool, why: str) -> None:
        with self._lock:
            if (self.link_up, self.link_why) == (up, why):
                return
            self.link_up, self.link_why = up, why
            self._lock.notify_all()
        if self.on_link is not None:
            self.on_link(up, why)

    def wait_connected(self, timeout: float = 10.0) -> bool:
        """True once connected and subscribed; False on a refusal or after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self.subscribed.is_set() and self.refused is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.1))
        return self.refused is None

    # -- what the tables say ----------------------------------------------------------------

    def _table_of(self, topic: str) -> tuple[str, str] | None:
        parts = topic.split("/")
        if len(parts) < 3 or parts[0] != self.prefix:
            return None
        return parts[1], parts[2]

    def _on_message(self, _client: Any, _u: Any, message: Any) -> None:
        where = self._table_of(message.topic)
        if where is None:
            return
        table_id, channel = where
        if channel == "response":
            try:
                body = json.loads(message.payload)
            except ValueError:
                logger.warning("not JSON on %s", message.topic)
                return
            with self._lock:
                self._book.answered(body)
            return
        if channel == "availability":
            self._availability(table_id, message.payload.decode(errors="replace"))
            return
        try:
            body = json.loads(message.payload)
        except ValueError:
            logger.warning("not JSON on %s", message.topic)
            return
        if not isinstance(body, dict):
            return
        if channel == "state":
            self._state(table_id, body)
        elif channel == "events":
            self._event(table_id, body)
        elif channel == "dealer":
            with self._lock:
                feed = self._feed(table_id)
                feed.dealer = body
            self._tell(TableUpdate(table_id, "dealer", body))

    def _feed(self, table_id: str) -> TableFeed:
        """Called holding the lock: the table's feed, made (and its first catch-up asked
        for) on first sight."""
        feed = self._feeds.get(table_id)
        if feed is None:
            feed = self._feeds[table_id] = TableFeed(table_id)
            self._want(table_id)
        feed.last_message_at = time.time()
        return feed

    def _want(self, table_id: str) -> None:
        if table_id not in self._wanted:
            self._wanted.append(table_id)
            self._lock.notify_all()

    def _tell(self, update: TableUpdate) -> None:
        if self.on_update is not None:
            try:
                self.on_update(update)
            except Exception:  # a consumer's bug must not stop the feed
                logger.exception("on_update failed for %s %s", update.table_id, update.kind)

    def _availability(self, table_id: str, text: str) -> None:
        with self._lock:
            feed = self._feed(table_id)
            came_back = text == "online" and feed.availability != "online"
            feed.availability = text
            if came_back and (not feed.ready or self._held.get(table_id)):
                self._want(table_id)  # a catch-up that timed out while it was away
        self._tell(TableUpdate(table_id, "availability", text))

    def _state(self, table_id: str, body: dict[str, Any]) -> None:
        renewed = False
        with self._lock:
            feed = self._feed(table_id)
            last = feed.state
            epoch = body.get("epoch")
            if last is not None and epoch == last.get("epoch") and body["seq"] < last["seq"]:
                return  # an older state than the one held (states go by latest value)
            feed.state = body
            self._lock.notify_all()  # the worker may be waiting for a first state
            if feed.ready and epoch is not None and epoch != feed.epoch:
                # Another journal: its events start again at 1.
                self._restart(feed, epoch)
                renewed = True
            elif feed.ready and int(body.get("seq", 0)) > feed.last_seq:
                self._want(table_id)  # events this client missed (while it was away)
        if renewed:
            self._tell(TableUpdate(table_id, "epoch", body.get("epoch")))
        self._tell(TableUpdate(table_id, "state", body))

    def _restart(self, feed: TableFeed, epoch: str | None) -> None:
        feed.epoch, feed.events, feed.last_seq, feed.complete_since = epoch, [], 0, 0
        feed.ready = False
        self._held.pop(feed.table_id, None)
        self._want(feed.table_id)

    def _event(self, table_id: str, body: dict[str, Any]) -> None:
        applied: list[dict[str, Any]] = []
        with self._lock:
            feed = self._feed(table_id)
            seq = body.get("seq")
            if not isinstance(seq, int):
                return
            if not feed.ready or table_id in self._wanted or self._held.get(table_id):
                # A catch-up is to come or under way: applied after it.
                self._held.setdefault(table_id, {})[seq] = body
                self._want(table_id)
                return
            if seq <= feed.last_seq:
                return  # a repeat (QoS 1)
            if seq > feed.last_seq + 1:
                self._held.setdefault(table_id, {})[seq] = body
                self._want(table_id)
                return
            self._apply(feed, body)
            applied.append(body)
        for event in applied:
            self._tell(TableUpdate(table_id, "event", event))

    def _apply(self, feed: TableFeed, event: dict[str, Any]) -> None:
        """Called holding the lock: ``event`` is the next of ``feed``'s series."""
        feed.events.append(event)
        feed.last_seq = int(event["seq"])
        if len(feed.events) > self.keep:
            dropped = len(feed.events) - self.keep
            feed.complete_since = int(feed.events[dropped - 1]["seq"])
            del feed.events[:dropped]

    # -- catching up (the worker thread) ----------------------------------------------------

    def _catch_up_loop(self) -> None:
        while True:
            with self._lock:
                while not self._wanted and not self._closing:
                    self._lock.wait()
                if self._closing:
                    return
                table_id = self._wanted.pop(0)
            try:
                self._catch_up_table(table_id)
            except (TimeoutError, BrokerRefused, RuntimeError) as error:
                # The table did not answer or refused; what is held stays held. Asked again
                # when it comes back online, and after a while if it still says online.
                logger.info("catching up %s: %s", table_id, error)
                self._retry_later(table_id)
            except Exception:
                logger.exception("catching up %s failed", table_id)

    def _retry_later(self, table_id: str) -> None:
        def again() -> None:
            with self._lock:
                feed = self._feeds.get(table_id)
                if not self._closing and feed is not None and feed.availability == "online":
                    self._want(table_id)

        timer = threading.Timer(CATCH_UP_RETRY_S, again)
        timer.daemon = True
        timer.start()

    def _catch_up_table(self, table_id: str) -> None:
        with self._lock:
            feed = self._feeds[table_id]
            was_ready, epoch = feed.ready, feed.epoch
            if was_ready:
                series = EventSeries(epoch=feed.epoch, last_seq=feed.last_seq)
            elif feed.state is not None:
                # First sight: the last ``backfill`` events only (a long journal holds more
                # than anyone watching needs).
                since = max(0, int(feed.state.get("seq", 0)) - self.backfill)
                series = EventSeries(epoch=feed.state.get("epoch"), last_seq=since)
            else:
                # Its retained state follows its availability: wait for it, rather than
                # fetch a whole journal from 0.
                self._lock.wait_for(lambda: feed.state is not None or self._closing, 2.0)
                if feed.state is not None or self._closing:
                    self._want(table_id)
                    return
                if feed.availability != "online":
                    return  # no state and no daemon: asked again when it comes online
                series = EventSeries()
            if feed.availability == "offline":
                return  # nobody to answer: asked again when it is back online
        since = series.last_seq
        self._page(table_id, series)
        applied: list[dict[str, Any]] = []
        renewed = False
        with self._lock:
            feed = self._feeds[table_id]
            if feed.ready != was_ready or feed.epoch != epoch:
                return  # restarted meanwhile (another journal): that catch-up is queued
            first = int(series.events[0]["seq"]) - 1 if series.events else series.last_seq
            if not was_ready or series.epoch != feed.epoch:
                # The series begins here (first sight, or the table's journal was replaced
                # before its state said so).
                renewed = was_ready
                feed.epoch, feed.events, feed.last_seq = series.epoch, [], first
                feed.complete_since = first if first == since else 0
            for event in series.events:
                if int(event["seq"]) == feed.last_seq + 1:
                    self._apply(feed, event)
                    applied.append(event)
            feed.ready = True
            held = self._held.pop(table_id, {})
            for seq in sorted(held):
                if seq <= feed.last_seq:
                    continue  # a repeat, or in the page already
                if seq > feed.last_seq + 1:
                    # Still a gap (published while the page was read): once more.
                    self._held[table_id] = {s: e for s, e in held.items() if s > feed.last_seq}
                    self._want(table_id)
                    break
                self._apply(feed, held[seq])
                applied.append(held[seq])
            self._lock.notify_all()
        if renewed:
            self._tell(TableUpdate(table_id, "epoch", series.epoch))
        for event in applied:
            self._tell(TableUpdate(table_id, "event", event))

    def _page(self, table_id: str, series: EventSeries) -> EventSeries:
        def ask(command: str, timeout: float | None, **args: Any) -> dict[str, Any]:
            return self.request(table_id, command, timeout, **args)

        return _page_events(ask, f"{table_id}: ", series, None, CATCH_UP_TIMEOUT_S)

    # -- reading ----------------------------------------------------------------------------

    def feeds(self) -> dict[str, TableFeed]:
        """A copy of every table's feed, by table id."""
        with self._lock:
            return {table_id: _copy(feed) for table_id, feed in self._feeds.items()}

    def feed(self, table_id: str) -> TableFeed | None:
        with self._lock:
            feed = self._feeds.get(table_id)
            return None if feed is None else _copy(feed)

    def wait_for(
        self, predicate: Callable[[StudioClient], bool], timeout: float, what: str = "it"
    ) -> None:
        """Wait until ``predicate(self)`` holds (it may call :meth:`feed`)."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"timed out waiting for {what}")
            with self._lock:
                self._lock.wait(min(left, 0.1))

    # -- requests ---------------------------------------------------------------------------

    @property
    def response_timeout_s(self) -> float:
        return self._book.timeout_s

    @response_timeout_s.setter
    def response_timeout_s(self, seconds: float) -> None:
        self._book.timeout_s = seconds

    def send(
        self,
        table_id: str,
        command: str,
        transaction: str | None = None,
        *,
        role: str | None = None,
        **args: Any,
    ) -> str:
        """Publish ``command`` to ``table_id`` under a transaction (a new UUID unless given)
        and return the transaction, whose answer :meth:`response` waits for."""
        transaction = transaction or uuid.uuid4().hex
        role = role or self.account.role
        topic = f"{self.prefix}/{table_id}/request/{role}/{self.account.name}/{command}"
        payload = json.dumps({"transaction": transaction, **args})
        self._book.publish(self.client, topic, payload, transaction)
        return transaction

    def response(self, transaction: str, timeout: float | None = None) -> dict[str, Any]:
        """The table's answer to ``transaction`` (as :meth:`ApiClient.response`)."""
        return self._book.wait(transaction, timeout)

    def request(
        self,
        table_id: str,
        command: str,
        timeout: float | None = None,
        transaction: str | None = None,
        **args: Any,
    ) -> dict[str, Any]:
        """Send ``command`` to ``table_id`` and wait for its answer (as
        :meth:`ApiClient.request`: the same transaction again gets the stored answer)."""
        return self.response(self.send(table_id, command, transaction, **args), timeout)

    def catch_up(
        self,
        table_id: str,
        series: EventSeries | None = None,
        *,
        limit: int | None = None,
        timeout: float | None = None,
    ) -> EventSeries:
        """Page ``table_id``'s events after ``series.last_seq`` (as
        :meth:`ApiClient.catch_up`), apart from its feed: for a round's history or a shoe's
        cards older than the feed holds."""

        def ask(command: str, wait: float | None, **args: Any) -> dict[str, Any]:
            return self.request(table_id, command, wait, **args)

        return _page_events(
            ask, f"{table_id}: ", series if series is not None else EventSeries(), limit, timeout
        )

    def probe_role(self, timeout: float = 3.0) -> str | None:
        """The role the broker lets this account send requests under: ``supervisor``,
        ``viewer`` or None. MQTT 5: from the broker's PUBACK of a ``status`` request to
        :data:`PROBE_TABLE` (read by no daemon); MQTT 3.1.1, whose broker drops what its ACL
        refuses without a word: from an online table's answer to ``status``."""
        for role in ("supervisor", "viewer"):
            if self.protocol == mqtt.MQTTv5:
                transaction = self.send(PROBE_TABLE, "status", role=role)
                if self._book.passed(transaction, timeout):
                    return role
                continue
            online = [t for t, f in self.feeds().items() if f.availability == "online"]
            if not online:
                return None
            try:
                self.response(self.send(online[0], "status", role=role), timeout)
            except (TimeoutError, BrokerRefused):
                continue
            return role
        return None

    def close(self) -> None:
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        self._book.close()  # a catch-up waiting for a page stops waiting
        self._subscriptions.close()
        self.client.disconnect()
        self.client.loop_stop()
        self._worker.join(timeout=5)


def _copy(feed: TableFeed) -> TableFeed:
    """A copy a reader may keep: its own list of events, the messages shared (never changed
    once received)."""
    return dataclasses.replace(feed, events=list(feed.events))
