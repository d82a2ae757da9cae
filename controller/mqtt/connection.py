"""Every MQTT connection livetable makes: problems named at once, Nagle off, packets sized.

:func:`watch_connection` is put on every paho client the project ships (the daemon's link,
the API client of ``controller/client/api_client.py`` that the demo, ``livetable ctl`` and the
tests use, the demo's watcher, the latency bench's connections). It:

- sets ``TCP_NODELAY`` on the socket as soon as it is open: without it a small answer sent
  right after a small acknowledgement waits for the broker's delayed ACK (some 40 ms);
- names every connection problem in one line at error level, the first at once and the same
  one again at a slowing pace (5 s, 10 s, 20 s, ... at most every 5 minutes) while it lasts:
  a broker that cannot be reached (refused, unknown host, timed out, TLS), one that refuses
  the credentials, the client id or the protocol version, and one that takes the connection
  but never answers the CONNECT (a broker that speaks only MQTT 3.1.1 does that to an MQTT 5
  client) within :data:`CONNACK_TIMEOUT_S`; after :data:`CONNACK_GIVE_UP_S` that connection
  is dropped and tried again (paho itself would wait a whole keepalive).

paho's own reconnect delay decides when the next attempt is. With several brokers (the nodes
of a cluster, ``hosts``), every failed or dropped connection aims the next attempt at the next
node, round-robin, with the same client id and session: the cluster keeps a persistent
session, its subscriptions and the messages queued for it, whichever node takes it up. A
problem is said per node (``the MQTT broker at n2:1883 cannot be reached``). The watch counts
the brokers it failed to reach (refused, unknown host, no route, timed out, TLS) since the
last connection and reports the count after each such failure (``on_unreached``): once it is
every broker, a client waiting to connect can say so at once instead of waiting out a
deadline; a broker that takes the TCP connection but never answers is not counted.

:class:`Subscriptions` subscribes on every connect and asks again for what the broker refused
for a while after (a NATS cluster refuses new subscriptions for some seconds after a node died,
until its streams have leaders again); what it still refuses after :data:`SUBSCRIBE_RETRY_S`
is reported as the broker's will (its ACL) and still asked for, slowly, while the connection
lasts.
:func:`publish_packet_bytes` is the size of a PUBLISH packet on the wire, which a broker's
``max_packet_size`` (MQTT 5: CONNACK's Maximum Packet Size) bounds.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

# How long the broker has to answer the CONNECT once the socket is open before it is said...
CONNACK_TIMEOUT_S: Final = 3.0
# ... and before the connection is dropped and tried again: a broker that is only slow (a
# large persistent store, a slow authentication) still gets its chance.
CONNACK_GIVE_UP_S: Final = 10.0
# The first repeat of the same problem, doubled each time up to the longest.
FIRST_REPEAT_S: Final = 5.0
LONGEST_REPEAT_S: Final = 300.0
# A refused SUBSCRIBE is sent again after this, doubled each time up to the longest...
FIRST_SUBSCRIBE_RETRY_S: Final = 0.5
LONGEST_SUBSCRIBE_RETRY_S: Final = 4.0
# ... for this long after the connection came up: a NATS node refuses for as long as the
# cluster's streams and its meta leader are being elected again (measured 4.6 to 8 s, plus its
# own 5 s timeout on the SUBSCRIBE); a refusal that outlasts that is reported as the
# account's rights...
SUBSCRIBE_RETRY_S: Final = 30.0
# ... and still asked for at this pace while the connection lasts: a loaded cluster was seen
# refusing for over a minute, and a client that gave up then stayed deaf for good (a table's
# platform never opened another round). One SUBSCRIBE a topic every 30 s costs nothing.
SLOW_SUBSCRIBE_RETRY_S: Final = 30.0

# MQTT 5 reason codes of a refused CONNACK (paho maps MQTT 3.1.1's return codes onto them).
_UNSUPPORTED_PROTOCOL: Final = 0x84
_BAD_CLIENT_ID: Final = 0x85
_BAD_CREDENTIALS: Final = 0x86
_NOT_AUTHORIZED: Final = 0x87


def _varint_bytes(value: int) -> int:
    size = 1
    while value >= 128:
        value //= 128
        size += 1
    return size


def publish_packet_bytes(
    topic: str, payload: bytes, properties: Any = None, v5: bool = True
) -> int:
    """The bytes of a QoS 1 PUBLISH of ``payload`` on ``topic`` (with paho ``properties``),
    fixed header included: what a broker's maximum packet size is compared with."""
    remaining = 2 + len(topic.encode()) + 2 + len(payload)
    if v5:
        remaining += len(properties.pack()) if properties is not None else 1
    return 1 + _varint_bytes(remaining) + remaining


# The MQTT versions a client of livetable speaks (the table's [mqtt] protocol, the
# console's [mqtt] protocol).
MQTT_PROTOCOLS: Final = ("3.1.1", "5")
_TOPIC_FORBIDDEN: Final = frozenset("+#/\0")


def topic_level_ok(text: str) -> bool:
    """Whether ``text`` can be one MQTT topic level (a prefix, a table id, an account)."""
    return bool(text) and not (_TOPIC_FORBIDDEN & set(text))


def parse_hosts(value: object, section: str) -> tuple[tuple[str, int], ...]:
    """A configuration's ``hosts`` list (``["host:port", ...]``) as (host, port) pairs;
    ConfigurationError naming ``section`` (``[mqtt]``) otherwise."""
    from controller.kernel.errors import ConfigurationError

    if not isinstance(value, list) or not value:
        raise ConfigurationError(
            f'{section} hosts must be a list of "host:port" (e.g. ["n1:1883"])'
        )
    hosts: list[tuple[str, int]] = []
    for item in value:
        try:
            broker = parse_broker(item)
        except ValueError as error:
            raise ConfigurationError(f"{section} hosts: {error}") from None
        if broker in hosts:
            raise ConfigurationError(f"{section} hosts names {item} twice")
        hosts.append(broker)
    return tuple(hosts)


def parse_broker(text: str) -> tuple[str, int]:
    """``host:port`` (``[v6 address]:port`` for IPv6) as (host, port); ValueError saying what
    is wrong otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"a broker is host:port, not {text!r}")
    host, colon, port_text = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not colon or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"a broker is host:port with a port 1-65535, not {text!r}")
    return host, int(port_text)


def broker_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def unreachable_text(error: BaseException | None) -> str:
    """What an exception from opening the connection means, for a person."""
    if isinstance(error, ConnectionRefusedError):
        return "connection refused (is the broker running, and is the port right?)"
    if isinstance(error, socket.gaierror):
        return f"unknown host ({error.strerror or error})"
    if isinstance(error, TimeoutError | socket.timeout):
        return "no answer (timed out: a firewall, or the wrong host?)"
    if isinstance(error, ssl.SSLError | ssl.CertificateError):
        return f"the TLS handshake failed ({error})"
    if error is None:
        return "the connection failed"
    return f"{error.strerror or error}" if isinstance(error, OSError) else str(error)


def refusal_text(reason: Any, protocol: str, username: str | None, client_id: str) -> str:
    """What a refused CONNACK means, for a person."""
    value = getattr(reason, "value", None)
    if value == _UNSUPPORTED_PROTOCOL:
        other = "3.1.1" if protocol == "5" else "5"
        return (
            f"refused MQTT {protocol} (unsupported protocol version): set [mqtt] "
            f'protocol = "{other}" if the broker speaks that'
        )
    if value == _BAD_CREDENTIALS:
        return f"refused the user name or password (user {username or '(none)'})"
    if value == _NOT_AUTHORIZED:
        return (
            f"refused the connection as not authorised (user {username or '(none)'}: a wrong "
            "password, or an account the broker does not know)"
        )
    if value == _BAD_CLIENT_ID:
        return f"refused the client id {client_id!r}"
    return f"refused the connection: {reason}"


@dataclass
class _Problem:
    kind: str
    since: float
    attempts: int
    next_at: float
    interval: float


class ConnectionWatch:
    """What one paho client's connection problems are, said at a slowing pace, per broker;
    and, with several brokers, which one the next attempt goes to."""

    def __init__(
        self,
        client: Any,
        host: str,
        port: int,
        *,
        protocol: str,
        username: str | None,
        client_id: str,
        log: logging.Logger,
        name: str = "",
        connack_timeout_s: float = CONNACK_TIMEOUT_S,
        hosts: Sequence[tuple[str, int]] | None = None,
        on_unreached: Callable[[int, int], None] | None = None,
    ) -> None:
        self.client = client
        self.brokers: list[tuple[str, int]] = list(hosts) if hosts else [(host, port)]
        self._at = self.brokers.index((host, port)) if (host, port) in self.brokers else 0
        self.protocol = protocol
        self.username = username
        self.client_id = client_id
        self.log = log
        self.name = f"{name}: " if name else ""
        self.connack_timeout_s = connack_timeout_s
        self._lock = threading.Lock()
        self._problems: dict[tuple[str, int], _Problem] = {}
        self._timer: threading.Timer | None = None
        self._accepted = False
        # The brokers an attempt failed to reach since the last connection.
        self._unreached: set[tuple[str, int]] = set()
        self.on_move: Callable[[str, int], None] | None = None
        """Called (host, port) when the next attempt is aimed at another broker."""
        self.on_unreached = on_unreached
        """Called (unreached, brokers) after each attempt that failed to reach its broker:
        how many of the ``brokers`` failed to be reached since the last connection."""

    @property
    def broker(self) -> tuple[str, int]:
        """The broker the current (or next) attempt goes to."""
        return self.brokers[self._at]

    @property
    def unreached(self) -> int:
        """How many of the brokers failed to be reached since the last connection."""
        with self._lock:
            return len(self._unreached)

    @property
    def where(self) -> str:
        return f"the MQTT broker at {broker_text(*self.broker)}"

    # -- what is said ---------------------------------------------------------------------

    def problem(self, kind: str, text: str) -> None:
        """One attempt failed for ``kind``: say so now if it is new (for this broker), else
        when due."""
        now = time.monotonic()
        broker = self.broker
        where = f"the MQTT broker at {broker_text(*broker)}"
        with self._lock:
            known = self._problems.get(broker)
            if known is None or known.kind != kind:
                self._problems[broker] = _Problem(
                    kind, now, 1, now + FIRST_REPEAT_S, FIRST_REPEAT_S
                )
                line = f"{self.name}{where} {text}"
            else:
                known.attempts += 1
                if now < known.next_at:
                    return
                known.interval = min(known.interval * 2, LONGEST_REPEAT_S)
                known.next_at = now + known.interval
                line = (
                    f"{self.name}{where} {text} (still: {known.attempts} attempts in "
                    f"{now - known.since:.0f} s)"
                )
        self.log.error("%s", line)

    def _recovered(self) -> None:
        with self._lock:
            attempts = sum(problem.attempts for problem in self._problems.values())
            self._problems.clear()
            self._unreached.clear()
        if attempts:
            self.log.warning(
                "%sconnected to %s after %d failed attempt(s)", self.name, self.where, attempts
            )

    def _move_on(self) -> None:
        """Aim the next attempt at the next broker (with one broker: nothing changes)."""
        if len(self.brokers) < 2:
            return
        with self._lock:
            self._at = (self._at + 1) % len(self.brokers)
            host, port = self.brokers[self._at]
        # paho's own host and port setters refuse while its loop is reconnecting, and its
        # reconnect() reads these two (TLS checks the certificate against the new host too).
        self.client._host = host
        self.client._port = port
        if self.on_move is not None:
            self.on_move(host, port)

    # -- paho's callbacks ----------------------------------------------------------------

    def _socket_open(self, _client: Any, _userdata: Any, sock: Any) -> None:
        with contextlib.suppress(OSError, AttributeError, ValueError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._accepted = False
            self._cancel_timer()
            timer = threading.Timer(self.connack_timeout_s, self._no_connack, args=(sock,))
            timer.daemon = True
            timer.name = "mqtt-connack-watch"
            self._timer = timer
        timer.start()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _no_connack(self, sock: Any) -> None:
        with self._lock:
            if self._accepted or self._timer is None:
                return
            timer = threading.Timer(
                max(0.0, CONNACK_GIVE_UP_S - self.connack_timeout_s), self._give_up, args=(sock,)
            )
            timer.daemon = True
            timer.name = "mqtt-connack-watch"
            self._timer = timer
        timer.start()
        self.problem(
            "no-connack",
            f"took the connection but did not answer the MQTT {self.protocol} CONNECT within "
            f"{self.connack_timeout_s:g} s"
            + (
                ' (a broker that speaks only MQTT 3.1.1 does that: set [mqtt] protocol = "3.1.1")'
                if self.protocol == "5"
                else ""
            ),
        )

    def _give_up(self, sock: Any) -> None:
        with self._lock:
            if self._accepted or self._timer is None:
                return
            self._timer = None
        # Closing our end makes paho see the connection lost and try again, as it would for
        # any other drop (its own check waits a whole keepalive).
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def _connect_fail(self, _client: Any, _userdata: Any) -> None:
        # paho calls this inside its ``except OSError`` around the connection attempt and
        # passes no exception: the one being handled is it.
        error = sys.exc_info()[1]
        self.problem(
            f"unreachable:{type(error).__name__}", f"cannot be reached: {unreachable_text(error)}"
        )
        with self._lock:
            self._unreached.add(self.brokers[self._at])
            unreached = len(self._unreached)
        if self.on_unreached is not None:
            self.on_unreached(unreached, len(self.brokers))
        self._move_on()

    def wrap_connect(self, inner: Callable[..., None] | None) -> Callable[..., None]:
        def on_connect(client: Any, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
            with self._lock:
                self._accepted = True
                self._cancel_timer()
            if reason.is_failure:
                self.problem(
                    f"refused:{getattr(reason, 'value', reason)}",
                    refusal_text(reason, self.protocol, self.username, self.client_id),
                )
            else:
                self._recovered()
            if inner is not None:
                inner(client, userdata, flags, reason, props)

        return on_connect

    def wrap_disconnect(self, inner: Callable[..., None] | None) -> Callable[..., None]:
        def on_disconnect(client: Any, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
            with self._lock:
                # A drop before any CONNACK that our own give-up did not cause.
                never_accepted = not self._accepted and self._timer is not None
                self._cancel_timer()
            if never_accepted and getattr(reason, "value", 0) != 0:
                self.problem(
                    "closed-before-connack",
                    f"closed the connection before accepting it ({reason}; a broker that wants "
                    f"TLS, or does not speak MQTT {self.protocol}, does that)",
                )
            if inner is not None:
                inner(client, userdata, flags, reason, props)
            # Dropped, refused or never answered: paho tries again, at the next broker. (A
            # refused CONNACK ends here too, once.)
            self._move_on()

        return on_disconnect

    def close(self) -> None:
        with self._lock:
            self._accepted = True
            self._cancel_timer()


def watch_connection(
    client: Any,
    host: str,
    port: int,
    *,
    protocol: str,
    username: str | None,
    client_id: str,
    log: logging.Logger,
    name: str = "",
    hosts: Sequence[tuple[str, int]] | None = None,
    on_unreached: Callable[[int, int], None] | None = None,
) -> ConnectionWatch:
    """Put a :class:`ConnectionWatch` on ``client`` (after its ``on_connect`` and
    ``on_disconnect`` are set, which it wraps; before it connects to ``host:port``).
    ``hosts``: every broker it may use, ``host:port`` among them (the first attempt's).
    ``on_unreached``: :attr:`ConnectionWatch.on_unreached`."""
    watch = ConnectionWatch(
        client,
        host,
        port,
        protocol=protocol,
        username=username,
        client_id=client_id,
        log=log,
        name=name,
        hosts=hosts,
        on_unreached=on_unreached,
    )
    client.on_socket_open = watch._socket_open
    client.on_connect_fail = watch._connect_fail
    client.on_connect = watch.wrap_connect(client.on_connect)
    client.on_disconnect = watch.wrap_disconnect(client.on_disconnect)
    return watch


class Subscriptions:
    """A client's subscriptions, made on every connect, with a refused one asked again.

    Call :meth:`subscribe` from ``on_connect`` and :meth:`on_suback` from ``on_subscribe``.
    A topic the broker refuses is asked again (0.5 s, 1 s, 2 s, ... at most every 4 s) for
    :data:`SUBSCRIBE_RETRY_S` after the connection came up, on that connection only; what is
    still refused then is reported (most likely the broker's ACL) and asked for again every
    :data:`SLOW_SUBSCRIBE_RETRY_S` while the connection lasts. ``on_done`` is called with the
    topics refused at the end of the window (possibly none) once every topic is granted or
    the window is over, once per connection; ``on_granted_late`` with a topic granted on a
    retry, in the window or after it.
    """

    def __init__(
        self,
        client: Any,
        topics: Sequence[tuple[str, int]],
        *,
        log: logging.Logger,
        name: str = "",
        retry_for_s: float = SUBSCRIBE_RETRY_S,
        slow_retry_s: float = SLOW_SUBSCRIBE_RETRY_S,
        on_done: Callable[[list[str]], None] | None = None,
        on_granted_late: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self.topics = list(topics)
        self.log = log
        self.name = f"{name}: " if name else ""
        self.retry_for_s = retry_for_s
        self.slow_retry_s = slow_retry_s
        self.on_done = on_done
        self.on_granted_late = on_granted_late
        self._lock = threading.Lock()
        self._generation = 0  # one per connection: a retry of an old one is dropped
        self._pending: dict[int, tuple[int, list[tuple[str, int]]]] = {}  # mid -> what
        # A SUBACK can come before subscribe() returned its mid to us: kept for _send.
        self._early: dict[int, Sequence[Any]] = {}
        self._refused: dict[str, int] = {}  # topic -> qos, refused on this connection
        self._waiting = 0  # SUBSCRIBEs of this connection without their SUBACK
        self._started = 0.0
        self._delay = FIRST_SUBSCRIBE_RETRY_S
        self._done = False
        self._timer: threading.Timer | None = None
        self.refused: list[str] = []
        """What the broker still refused at the end of the retry window on the current
        connection, less what it granted since."""

    def refused_now(self) -> list[str]:
        """The topics refused on this connection so far (some may yet be granted on a
        retry), in the order they were given."""
        with self._lock:
            return [topic for topic, _qos in self.topics if topic in self._refused]

    def subscribe(self, client: Any = None) -> None:
        """On a new connection (of ``client``, from its ``on_connect``; by default the one
        given at first): subscribe to every topic (in one SUBSCRIBE)."""
        with self._lock:
            if client is not None:
                self.client = client
            self._generation += 1
            self._cancel()
            self._refused.clear()
            self._pending.clear()  # an old connection's SUBSCRIBEs get no SUBACK now
            self._waiting = 0
            self._started = time.monotonic()
            self._delay = FIRST_SUBSCRIBE_RETRY_S
            self._done = False
            self.refused = []
        self._send(self.topics)

    def _send(self, topics: list[tuple[str, int]]) -> None:
        with self._lock:
            generation = self._generation
            self._waiting += 1
        _rc, mid = self.client.subscribe(topics)
        if mid is None:  # not connected after all: the next connect subscribes again
            with self._lock:
                self._waiting -= 1
            return
        with self._lock:
            self._pending[mid] = (generation, topics)
            early = self._early.pop(mid, None)
        if early is not None:
            self.on_suback(mid, early)

    def on_suback(self, mid: int, reasons: Sequence[Any]) -> tuple[list[str], list[str]]:
        """A SUBACK: (granted, refused) topics of the SUBSCRIBE it answers (none for one
        that is not ours, or that came before its SUBSCRIBE's mid was known)."""
        with self._lock:
            if mid not in self._pending:
                self._early[mid] = reasons
                while len(self._early) > 64:  # not ours after all: keep few
                    self._early.pop(next(iter(self._early)))
                return [], []
            generation, topics = self._pending.pop(mid)
            if generation != self._generation:
                return [], []
            self._waiting -= 1
            retry = bool(self._refused)  # this SUBACK answers a retry
            granted: list[str] = []
            refused: list[str] = []
            for (topic, qos), reason in zip(topics, reasons, strict=False):
                if getattr(reason, "is_failure", False):
                    refused.append(topic)
                    self._refused[topic] = qos
                else:
                    granted.append(topic)
                    self._refused.pop(topic, None)
            late = granted if retry else []
            if self._done:
                self.refused = [t for t in self.refused if t in self._refused]
            done = self._settle_locked()
        for topic in late:
            self.log.info(
                "%sthe broker granted the subscription to %s on a retry", self.name, topic
            )
            if self.on_granted_late is not None:
                self.on_granted_late(topic)
        if done is not None and self.on_done is not None:
            self.on_done(done)
        return granted, refused

    def _settle_locked(self) -> list[str] | None:
        """Schedule a retry of what is refused; at the end of the window (or when nothing is
        refused), say once what is refused then. After the window the retries go on at the
        slow pace, and say nothing more."""
        if self._waiting:
            return None
        report: list[str] | None = None
        in_window = time.monotonic() - self._started < self.retry_for_s
        if not self._done and not (self._refused and in_window):
            self._done = True
            self.refused = sorted(self._refused)
            report = list(self.refused)
        if self._refused:
            delay = self._delay if in_window else self.slow_retry_s
            generation = self._generation
            timer = threading.Timer(delay, self._retry, args=(generation,))
            timer.daemon = True
            timer.name = "mqtt-subscribe-retry"
            self._delay = min(self._delay * 2, LONGEST_SUBSCRIBE_RETRY_S)
            self._timer = timer
            timer.start()
        return report

    def _retry(self, generation: int) -> None:
        with self._lock:
            if generation != self._generation or not self._refused:
                return
            self._timer = None
            topics = list(self._refused.items())
        self.log.debug("%ssubscribing again to %s", self.name, ", ".join(t for t, _q in topics))
        self._send(topics)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        with self._lock:
            self._generation += 1
            self._cancel()
