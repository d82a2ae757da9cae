"""Every MQTT connection livetable makes: problems named at once, Nagle off, packets sized.

:func:`watch_connection` is put on every paho client the project ships (the daemon's link,
the API client of ``controller/api_client.py`` that the demo, ``livetable ctl`` and the
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

paho's own reconnect delay decides when the next attempt is; this only decides what is said.
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
from collections.abc import Callable
from typing import Any, Final

# How long the broker has to answer the CONNECT once the socket is open before it is said...
CONNACK_TIMEOUT_S: Final = 3.0
# ... and before the connection is dropped and tried again: a broker that is only slow (a
# large persistent store, a slow authentication) still gets its chance.
CONNACK_GIVE_UP_S: Final = 10.0
# The first repeat of the same problem, doubled each time up to the longest.
FIRST_REPEAT_S: Final = 5.0
LONGEST_REPEAT_S: Final = 300.0

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


class ConnectionWatch:
    """What one paho client's connection problems are, said at a slowing pace."""

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
    ) -> None:
        self.client = client
        self.where = f"the MQTT broker at {host}:{port}"
        self.protocol = protocol
        self.username = username
        self.client_id = client_id
        self.log = log
        self.name = f"{name}: " if name else ""
        self.connack_timeout_s = connack_timeout_s
        self._lock = threading.Lock()
        self._problem: str | None = None
        self._since = 0.0
        self._attempts = 0
        self._next_at = 0.0
        self._interval = FIRST_REPEAT_S
        self._timer: threading.Timer | None = None
        self._accepted = False

    # -- what is said ---------------------------------------------------------------------

    def problem(self, kind: str, text: str) -> None:
        """One attempt failed for ``kind``: say so now if it is new, else when due."""
        now = time.monotonic()
        with self._lock:
            if kind != self._problem:
                self._problem, self._since, self._attempts = kind, now, 1
                self._interval = FIRST_REPEAT_S
                self._next_at = now + self._interval
                line = f"{self.name}{self.where} {text}"
            else:
                self._attempts += 1
                if now < self._next_at:
                    return
                self._interval = min(self._interval * 2, LONGEST_REPEAT_S)
                self._next_at = now + self._interval
                line = (
                    f"{self.name}{self.where} {text} (still: {self._attempts} attempts in "
                    f"{now - self._since:.0f} s)"
                )
        self.log.error("%s", line)

    def _recovered(self) -> None:
        with self._lock:
            problem, attempts = self._problem, self._attempts
            self._problem = None
        if problem is not None:
            self.log.warning(
                "%sconnected to %s after %d failed attempt(s)", self.name, self.where, attempts
            )

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
) -> ConnectionWatch:
    """Put a :class:`ConnectionWatch` on ``client`` (after its ``on_connect`` and
    ``on_disconnect`` are set, which it wraps; before it connects)."""
    watch = ConnectionWatch(
        client,
        host,
        port,
        protocol=protocol,
        username=username,
        client_id=client_id,
        log=log,
        name=name,
    )
    client.on_socket_open = watch._socket_open
    client.on_connect_fail = watch._connect_fail
    client.on_connect = watch.wrap_connect(client.on_connect)
    client.on_disconnect = watch.wrap_disconnect(client.on_disconnect)
    return watch
