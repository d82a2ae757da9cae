"""One account's connection to the MQTT API, as both clients make it: :func:`start_client` (a
paho connection, watched), the :class:`Account` it speaks as, the requests it sends and their
answers (:class:`RequestBook`), and :class:`AccountConnection`, the callbacks both clients
share."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt

from controller.mqtt.connection import Subscriptions, watch_connection

# The API client's one logger, whichever of its modules logs: ``livetable ctl`` and the demo's
# broker check quiet or keep its lines by this name.
logger = logging.getLogger("controller.client.api_client")

RESPONSE_TIMEOUT_S = 10.0
# Answers kept for their requests' waits; one that came after its wait gave up is dropped
# with the oldest beyond this many.
MAX_UNCLAIMED_ANSWERS = 1000


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
    on_unreached: Callable[[int, int], None] | None = None,
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
    ``on_unreached``: called (unreached, brokers) after each attempt that failed to reach its
    broker (:attr:`controller.mqtt.connection.ConnectionWatch.on_unreached`).
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
        on_unreached=on_unreached,
    )
    client.connect_async(host, port, keepalive=30)
    client.loop_start()
    return client


class RequestBook:
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


class AccountConnection:
    """What both clients are: one account's paho connection (:func:`start_client`), its
    subscriptions (asked on every connection, a refused one asked again for a while), and its
    requests and their answers (:class:`RequestBook`). A client sets its own attributes, then
    calls :meth:`_connect` with its topics; it handles the messages (``_on_message``)."""

    def __init__(self, account: Account) -> None:
        self.account = account
        self._lock = threading.Condition()
        self._book = RequestBook(self._lock, RESPONSE_TIMEOUT_S)
        self.connected = threading.Event()
        self.subscribed = threading.Event()
        self.refused: Any = None
        self.unreachable = False
        """Whether every broker this client may use (one, or a cluster's nodes) failed to be
        reached (refused, unknown host, no route, timed out, TLS) since it started or last
        connected: nothing to wait for then. A broker that takes the TCP connection but
        does not answer leaves it False."""
        self.broker: tuple[str, int] | None = None
        """The broker (the node of a cluster) of the last connection; None before one."""
        self.refused_subscriptions: list[str] = []
        """The topics of this client's subscriptions that the broker refused (its ACL)."""
        self._topics: list[str] = []

    def _connect(
        self,
        host: str,
        port: int,
        topics: list[str],
        client_id: str | None,
        login: tuple[str, str | None] | None,
        **options: Any,
    ) -> None:
        """Subscribe ``topics`` on every connection and start the connection; ``options``
        are :func:`start_client`'s."""
        self._topics = topics
        # With ``login``: one broker account for every role and name (the demo's broker).
        if login is None and self.account.username is not None:
            login = (self.account.username, self.account.password)
        self._subscriptions = Subscriptions(
            None,
            [(topic, 1) for topic in topics],
            log=logger,
            name=self.account.name,
            on_done=self._subscribed,
        )
        self.client = start_client(
            host,
            port,
            client_id or f"{self.account.name}-{uuid.uuid4().hex[:8]}",
            on_connect=self._on_connect,
            on_message=self._on_message,
            on_subscribe=self._on_subscribe,
            on_publish=self._book.on_publish,
            login=login,
            on_unreached=self._unreached,
            **options,
        )

    def _on_message(self, _client: Any, _u: Any, message: Any) -> None:
        raise NotImplementedError

    def _link(self, up: bool, why: str) -> None:
        """The connection came up (True, "") or was refused or dropped (False, why): a
        client that tells its user so overrides this."""

    def _unreached(self, unreached: int, brokers: int) -> None:
        with self._lock:
            self.unreachable = unreached >= brokers
            self._lock.notify_all()

    def _on_connect(self, client: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if reason.is_failure:
            with self._lock:
                self.refused = reason
                self._lock.notify_all()
            self._link(False, f"the broker refused the connection: {reason}")
            return
        with self._lock:
            self.unreachable = False
            # paho's host and port: the node the connection watch aimed this attempt at.
            self.broker = (client.host, client.port)
        # The first connection's subscriptions, or another node's (the session may be new
        # there); a refused one is asked again for a while (a cluster that lost a node).
        self._subscriptions.subscribe(client)
        self.connected.set()
        self._link(True, "")

    def _on_subscribe(self, _c: Any, _u: Any, mid: int, reasons: Any, _p: Any) -> None:
        self._subscriptions.on_suback(mid, reasons)
        with self._lock:
            # What is refused so far; those the broker refuses for good are logged when the
            # retries are over (see _subscribed).
            self.refused_subscriptions = self._subscriptions.refused_now()
        # Retained messages follow the SUBACK: from here a missing state is missing.
        self.subscribed.set()

    def _subscribed(self, refused: list[str]) -> None:
        """Every subscription granted, or refused for good (after the retries)."""
        with self._lock:
            self.refused_subscriptions = [t for t in self._topics if t in refused]
            self._lock.notify_all()
        for topic in refused:
            # A platform may not read the dealer's line (the shipped ACL): expected. Anything
            # else is an account without the rights its role needs.
            log = logger.info if topic.endswith("/dealer") else logger.warning
            log("the broker refused %s the subscription to %s", self.account.name, topic)

    @property
    def response_timeout_s(self) -> float:
        return self._book.timeout_s

    @response_timeout_s.setter
    def response_timeout_s(self, seconds: float) -> None:
        self._book.timeout_s = seconds

    def response(self, transaction: str, timeout: float | None = None) -> dict[str, Any]:
        """The table's answer to ``transaction``; TimeoutError if none comes in ``timeout``,
        :class:`BrokerRefused` if the broker said it would not pass the request on."""
        return self._book.wait(transaction, timeout)

    def close(self) -> None:
        self._book.close()  # a wait for an answer stops waiting
        self._subscriptions.close()
        self.client.disconnect()
        self.client.loop_stop()
