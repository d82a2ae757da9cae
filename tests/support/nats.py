"""A real NATS cluster for tests: the one in simulators/nats_cluster.py, with the studio's
authorisation generated from a description of accounts (controller/tools/studio_accounts.py), and
``livetable studio auth-callout`` beside each node deciding every connection with the
passwords it names, given through the environment as production gives them (the units'
EnvironmentFile).
"""

from __future__ import annotations

import secrets
import threading
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from controller.tools.studio_accounts import (
    CALLOUT_PASSWORD_VARIABLE,
    Studio,
    nats_authorization,
    password_variable,
)
from controller.tools.studio_auth_callout import IssuerKey, new_issuer_seed
from simulators.nats_cluster import (
    NatsCluster,
    NatsNode,
    nats_server_binary,
    start_auth_callouts,
    start_cluster,
)
from tests.support.wait import wait_until

__all__ = [
    "MqttPeer",
    "NatsCluster",
    "NatsNode",
    "nats_server_binary",
    "passwords_environment",
    "start_cluster",
    "start_secure_cluster",
]

USERS_FILE = "livetable-users.conf"
ACCOUNTS_FILE = "studio.toml"
KEY_FILE = "auth-callout.nk"
TIMEOUT_S = 15.0


def passwords_environment(passwords: dict[str, str]) -> dict[str, str]:
    """The environment variables that hold each account's password."""
    return {password_variable(name): password for name, password in passwords.items()}


def start_secure_cluster(
    workdir: Path, studio_text: str, studio: Studio, passwords: dict[str, str], size: int = 3
) -> NatsCluster:
    """A cluster whose nodes include the authorisation generated for ``studio`` (described
    by ``studio_text``), with an auth callout per node that knows every account's password
    (``passwords``: name to password) from its environment."""
    workdir.mkdir(parents=True, exist_ok=True)
    accounts = workdir / ACCOUNTS_FILE
    accounts.write_text(studio_text)
    seed = new_issuer_seed()
    key = workdir / KEY_FILE
    key.write_bytes(seed)
    users = workdir / USERS_FILE
    users.write_text(nats_authorization(studio, IssuerKey(seed).public_key))
    environment = {
        **passwords_environment(passwords),
        CALLOUT_PASSWORD_VARIABLE: secrets.token_hex(16),
    }
    cluster = start_cluster(workdir, size, includes=[users], environment=environment)
    try:
        start_auth_callouts(cluster, accounts, key, environment)
    except BaseException:
        cluster.stop()
        raise
    return cluster


class MqttPeer:
    """One MQTT 3.1.1 connection (nats-server speaks no 5) that records what it receives,
    what each SUBSCRIBE was granted and every disconnection."""

    def __init__(
        self,
        port: int,
        *,
        client_id: str,
        login: tuple[str, str] | None = None,
        clean: bool = True,
    ) -> None:
        self._lock = threading.Lock()
        self.client_id = client_id
        self.messages: list[tuple[str, bytes, bool]] = []
        self.granted: dict[int, list[str]] = {}
        self.disconnects: list[str] = []
        self.connack: str | None = None
        self.connected = threading.Event()
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=client_id,
            protocol=mqtt.MQTTv311,
            clean_session=clean,
        )
        if login is not None:
            self.client.username_pw_set(*login)
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe
        self.client.on_disconnect = self._on_disconnect
        # paho reconnects by itself, every second (a node restarting takes a few).
        self.client.reconnect_delay_set(1, 1)
        self.client.connect_async("127.0.0.1", port, keepalive=30)
        self.client.loop_start()

    def _on_connect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        with self._lock:
            self.connack = str(reason)
        if not reason.is_failure:
            self.connected.set()

    def _on_message(self, _c: Any, _u: Any, message: Any) -> None:
        with self._lock:
            self.messages.append((message.topic, bytes(message.payload), bool(message.retain)))

    def _on_subscribe(self, _c: Any, _u: Any, mid: int, reasons: Any, _p: Any) -> None:
        with self._lock:
            self.granted[mid] = [
                "granted" if not reason.is_failure else "refused" for reason in reasons
            ]

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        with self._lock:
            self.disconnects.append(str(reason))
        self.connected.clear()

    def wait_connected(self) -> MqttPeer:
        wait_until(self.connected.is_set, TIMEOUT_S, f"a CONNACK for {self.client_id!r}")
        return self

    def subscribe(self, *topics: str) -> list[str]:
        """Subscribe at QoS 1 and return what the SUBACK said of each topic."""
        result, mid = self.client.subscribe([(topic, 1) for topic in topics])
        assert result == mqtt.MQTT_ERR_SUCCESS
        return wait_until(lambda: self.granted.get(mid), TIMEOUT_S, f"a SUBACK for {topics}")

    def publish(self, topic: str, payload: bytes, *, retain: bool = False) -> bool:
        """Publish at QoS 1; whether the broker acknowledged it (MQTT 3.1.1 has no way to
        say "not authorised" in a PUBACK)."""
        info = self.client.publish(topic, payload, qos=1, retain=retain)
        info.wait_for_publish(TIMEOUT_S)
        return info.is_published()

    def received(self, topic: str | None = None) -> list[tuple[str, bytes, bool]]:
        with self._lock:
            return [m for m in self.messages if topic is None or m[0] == topic]

    def payloads(self, topic: str) -> list[bytes]:
        return [payload for _t, payload, _r in self.received(topic)]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
