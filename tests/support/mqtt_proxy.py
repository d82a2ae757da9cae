"""A TCP relay between one MQTT client and a real broker that cuts the link on cue.

:class:`CuttingProxy` listens on a free loopback port and relays every connection to the
broker byte for byte, reading the broker's side packet by packet (MQTT's fixed header and
remaining length, the same in 3.1.1 and 5). When a PUBLISH whose topic and payload match
``cut_on`` goes to the client, the broker's side is closed and it is delivered, so that
nothing the client answers (its PUBACK) can reach the broker: to the broker, that
delivery failed, and a persistent session gets it again at the next connection. It does so
``cuts`` times, then relays as any link would. ``deliveries`` counts the matching PUBLISHes
passed to the client, cut or not.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable

from tests.support.broker import free_port

_PUBLISH = 3
# How long the client's side stays open after the packet a cut follows.
CUT_AFTER_S = 0.3


def _read_exact(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def read_packet(sock: socket.socket) -> bytes:
    """One whole MQTT packet from ``sock``, its fixed header included."""
    first = _read_exact(sock, 1)
    header = first
    remaining, multiplier = 0, 1
    while True:
        byte = _read_exact(sock, 1)
        header += byte
        remaining += (byte[0] & 0x7F) * multiplier
        if not byte[0] & 0x80:
            break
        multiplier *= 128
    return header + _read_exact(sock, remaining)


def publish_topic_and_body(packet: bytes) -> tuple[str, bytes] | None:
    """The topic and the rest of a PUBLISH packet (its payload, with the packet id and any
    properties before it), or None for another packet."""
    if packet[0] >> 4 != _PUBLISH:
        return None
    offset = 1
    while packet[offset] & 0x80:
        offset += 1
    offset += 1
    length = int.from_bytes(packet[offset : offset + 2], "big")
    topic = packet[offset + 2 : offset + 2 + length].decode("utf-8", "replace")
    return topic, packet[offset + 2 + length :]


class CuttingProxy:
    def __init__(
        self, broker_host: str, broker_port: int, cut_on: Callable[[str, bytes], bool], cuts: int
    ) -> None:
        self.broker = (broker_host, broker_port)
        self.cut_on = cut_on
        self.cuts_left = cuts
        self.deliveries = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.port = free_port()
        self._listener.bind(("127.0.0.1", self.port))
        self._listener.listen(8)
        self._listener.settimeout(0.2)
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, name="proxy-accept")
        self._accepting.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.broker, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            client.settimeout(None)
            with self._lock:
                self.connections += 1
                self._sockets += [client, upstream]
            for target, name in ((self._up, "proxy-up"), (self._down, "proxy-down")):
                thread = threading.Thread(target=target, args=(client, upstream), name=name)
                self._threads.append(thread)
                thread.start()

    @staticmethod
    def _close(*sockets: socket.socket) -> None:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def _up(self, client: socket.socket, upstream: socket.socket) -> None:
        """Client to broker: as it comes. Once the broker's side is cut, what the client
        sends is read and dropped until the other direction closes the client's side."""
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                with contextlib.suppress(OSError):
                    upstream.sendall(data)
        except OSError:
            pass
        self._close(upstream)

    def _down(self, client: socket.socket, upstream: socket.socket) -> None:
        """Broker to client, packet by packet: a matching PUBLISH may cut the link."""
        try:
            while True:
                packet = read_packet(upstream)
                found = publish_topic_and_body(packet)
                cut = False
                if found is not None and self.cut_on(*found):
                    with self._lock:
                        self.deliveries += 1
                        if self.cuts_left > 0:
                            self.cuts_left -= 1
                            cut = True
                if cut:
                    # The broker's side first: nothing the client answers reaches it. The
                    # client's side a moment later, so that the client reads the packet
                    # (closing a socket with its answer unread would reset the connection,
                    # and a reset may discard what the client had not read yet).
                    self._close(upstream)
                    client.sendall(packet)
                    time.sleep(CUT_AFTER_S)
                    break
                client.sendall(packet)
        except (OSError, ConnectionError):
            pass
        self._close(client, upstream)

    def close(self) -> None:
        self._stop.set()
        self._close(self._listener)
        self._accepting.join(5)
        with self._lock:
            sockets = list(self._sockets)
        self._close(*sockets)
        for thread in self._threads:
            thread.join(5)
