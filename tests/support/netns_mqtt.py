"""MQTT clients inside another network namespace, driven by a test over a pipe.

A broker started in a network namespace of its own (``unshare --net``) is out of reach of
the test's process: its ``127.0.0.1`` is another loopback. :class:`NamespaceClients` starts
this module as a child process inside the broker's namespace (``nsenter --net``) and sends it
one JSON request a line on its standard input; the child holds the real paho clients and
answers each request with one JSON line. Run as ``python -m tests.support.netns_mqtt``.

Requests (``op`` and its fields; every client has a ``name`` of the test's choosing):

- ``connect``: ``port``, ``account``, ``password``, ``client_id``, ``protocol`` ("3.1.1" or
  "5"), ``clean`` (a clean session, or a persistent one), ``cafile`` (TLS with that CA, or
  null) -> ``ok``, ``session_present``, ``reason``
- ``subscribe``: ``topic`` (QoS 1) -> ``granted``
- ``publish``: ``topic``, ``payload`` (QoS 1, acknowledged) -> ``{}``
- ``messages``: ``until`` (a payload), ``timeout``, ``quiet`` -> ``messages``: what the
  client received, up to ``until`` and ``quiet`` seconds more
- ``disconnects`` -> ``reasons``: each time the broker closed the client's connection
- ``close`` -> ``{}``
"""

from __future__ import annotations

import json
import queue
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
NSENTER = "nsenter"
# A loaded 2-core machine may take seconds for a TLS handshake or an acknowledgement.
TIMEOUT_S = 20.0
HOST = "127.0.0.1"


class _Client:
    def __init__(self, request: dict[str, Any]) -> None:
        protocol = mqtt.MQTTv5 if request["protocol"] == "5" else mqtt.MQTTv311
        clean = bool(request["clean"])
        kwargs = {} if protocol == mqtt.MQTTv5 else {"clean_session": clean}
        self.mqtt = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=request["client_id"],
            protocol=protocol,
            **kwargs,
        )
        self.mqtt.username_pw_set(request["account"], request["password"])
        if request["cafile"] is not None:
            self.mqtt.tls_set(ca_certs=request["cafile"], tls_version=ssl.PROTOCOL_TLS_CLIENT)
        self.received: queue.Queue[tuple[str, str]] = queue.Queue()
        self.granted: queue.Queue[bool] = queue.Queue()
        self.disconnects: list[str] = []
        self._connected: queue.Queue[tuple[bool, bool, str]] = queue.Queue()
        self.mqtt.on_connect = lambda _c, _u, flags, reason, _p: self._connected.put(
            (not reason.is_failure, bool(flags.session_present), str(reason))
        )
        self.mqtt.on_disconnect = lambda _c, _u, _f, reason, _p: self.disconnects.append(
            str(reason)
        )
        self.mqtt.on_message = lambda _c, _u, m: self.received.put((m.topic, m.payload.decode()))
        self.mqtt.on_subscribe = lambda _c, _u, _m, codes, _p: self.granted.put(
            all(not code.is_failure for code in codes)
        )
        connect_kwargs: dict[str, Any] = {}
        if protocol == mqtt.MQTTv5:
            connect_kwargs["clean_start"] = clean
            if not clean:
                properties = Properties(PacketTypes.CONNECT)
                properties.SessionExpiryInterval = 3600
                connect_kwargs["properties"] = properties
        self.mqtt.connect(HOST, int(request["port"]), **connect_kwargs)
        self.mqtt.loop_start()

    def connack(self) -> dict[str, Any]:
        try:
            ok, session_present, reason = self._connected.get(timeout=TIMEOUT_S)
        except queue.Empty:
            ok, session_present, reason = False, False, "no CONNACK"
        return {"ok": ok, "session_present": session_present, "reason": reason}

    def messages(self, until: str, timeout: float, quiet: float) -> list[tuple[str, str]]:
        got: list[tuple[str, str]] = []
        deadline = time.monotonic() + timeout
        while not any(payload == until for _topic, payload in got):
            try:
                got.append(self.received.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                return got
        while True:
            try:
                got.append(self.received.get(timeout=quiet))
            except queue.Empty:
                return got

    def close(self) -> None:
        self.mqtt.disconnect()
        self.mqtt.loop_stop()


def _handle(clients: dict[str, _Client], request: dict[str, Any]) -> dict[str, Any]:
    op, name = request["op"], request["name"]
    if op == "connect":
        client = _Client(request)
        answer = client.connack()
        if answer["ok"]:
            clients[name] = client
        else:
            client.close()
        return answer
    client = clients[name]
    if op == "subscribe":
        client.mqtt.subscribe(request["topic"], qos=1)
        return {"granted": client.granted.get(timeout=TIMEOUT_S)}
    if op == "publish":
        info = client.mqtt.publish(request["topic"], request["payload"].encode(), qos=1)
        info.wait_for_publish(timeout=TIMEOUT_S)
        return {"acknowledged": info.is_published()}
    if op == "messages":
        got = client.messages(request["until"], float(request["timeout"]), request["quiet"])
        return {"messages": got}
    if op == "disconnects":
        return {"reasons": list(client.disconnects)}
    if op == "close":
        clients.pop(name).close()
        return {}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    clients: dict[str, _Client] = {}
    try:
        for line in sys.stdin:
            try:
                answer = _handle(clients, json.loads(line))
            except Exception as error:
                # Any failure is the test's to read; the child goes on with the next request.
                answer = {"error": f"{type(error).__name__}: {error}"}
            print(json.dumps(answer), flush=True)
    finally:
        for client in clients.values():
            client.close()


class NamespaceClients:
    """The test's end: :meth:`call` sends one request to the child in the network namespace
    of process ``pid`` and returns its answer (an ``error`` answer raises)."""

    def __init__(self, pid: int) -> None:
        self.process = subprocess.Popen(
            [NSENTER, f"--net=/proc/{pid}/ns/net", sys.executable, "-m", __name__],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def call(self, op: str, name: str, **fields: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, "name": name, **fields}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the clients' process ended (exit {self.process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"{op} {name}: {answer['error']}")
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


if __name__ == "__main__":
    main()
