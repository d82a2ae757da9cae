"""The studio broker configuration (systemd/mosquitto/livetable.conf and livetable.acl) on a
real mosquitto: the file as shipped, with only its ports, paths and certificates replaced
(tests/broker/test_shipped_broker_as_installed.py runs it on its own ports, in a network
namespace)."""

from __future__ import annotations

import queue
import shutil
import ssl
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from tests.support.broker import BrokerProcess, free_port, start_broker, write_password_file

REPO_ROOT = Path(__file__).resolve().parents[2]
CONF = REPO_ROOT / "systemd" / "mosquitto" / "livetable.conf"
ACL = REPO_ROOT / "systemd" / "mosquitto" / "livetable.acl"
TIMEOUT_S = 10.0
# How long a message the broker should have refused gets to show up anyway.
QUIET_S = 0.5

ACCOUNTS = ("livetable-t1", "livetable-t2", "platform", "alice", "bob", "viewer")


@dataclass
class StudioBroker:
    broker: BrokerProcess
    tls_port: int | None
    ca_file: Path | None
    passwords: dict[str, str]


def _make_certificates(directory: Path) -> None:
    """A test CA and a broker certificate for 127.0.0.1, signed by it."""
    openssl = shutil.which("openssl")
    assert openssl is not None
    ca_key, ca_pem = str(directory / "ca.key"), str(directory / "ca.pem")
    key, csr, pem = (str(directory / name) for name in ("broker.key", "broker.csr", "broker.pem"))
    san = directory / "san.ext"
    san.write_text("subjectAltName=IP:127.0.0.1\n")
    new_key = [openssl, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    for command in (
        [
            *new_key,
            "-nodes",
            "-x509",
            "-days",
            "2",
            "-subj",
            "/CN=test CA",
            "-keyout",
            ca_key,
            "-out",
            ca_pem,
        ],
        [*new_key, "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", csr],
        [
            openssl,
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            csr,
            "-CA",
            ca_pem,
            "-CAkey",
            ca_key,
            "-CAcreateserial",
            "-extfile",
            str(san),
            "-out",
            pem,
        ],
    ):
        subprocess.run(command, check=True, capture_output=True)


def adapt_config(text: str, *, workdir: Path, password_file: Path, tls_port: int | None) -> str:
    """livetable.conf for a test: tests.support.broker provides the loopback listener and the
    log file; the TLS listener moves to ``tls_port`` (or goes, without openssl); paths go to
    ``workdir``. Every other line is kept as written."""
    out: list[str] = []
    replaced: set[str] = set()
    in_tls_listener = False
    for line in text.splitlines():
        words = line.split()
        directive = words[0] if words and not words[0].startswith("#") else ""
        replacement: str | None = line
        if directive in ("pid_file", "log_dest", "log_timestamp", "include_dir"):
            replacement = None
        elif directive == "listener" and words[1:] == ["1883", "127.0.0.1"]:
            # start_broker's own listener on a free port, the first in its file, takes the
            # settings that follow this line: so this has to be the first listener here too.
            assert "listener" not in replaced, "the loopback listener is not the first"
            replacement = None
        elif directive == "listener" and words[1:] == ["8883"]:
            in_tls_listener = True
            replacement = None if tls_port is None else f"listener {tls_port} 127.0.0.1"
        elif directive in ("cafile", "certfile", "keyfile", "tls_version"):
            assert in_tls_listener, f"{directive} outside the TLS listener"
            name = {"cafile": "ca.pem", "certfile": "broker.pem", "keyfile": "broker.key"}
            if tls_port is None:
                replacement = None
            elif directive in name:
                replacement = f"{directive} {workdir / name[directive]}"
        elif directive == "persistence_location":
            replacement = f"persistence_location {workdir}/"
        elif directive == "password_file":
            replacement = f"password_file {password_file}"
        elif directive == "acl_file":
            replacement = f"acl_file {ACL}"
        if directive:
            replaced.add(directive)
        if replacement is not None:
            out.append(replacement)
    missing = {"listener", "password_file", "acl_file", "persistence_location"} - replaced
    assert not missing, f"livetable.conf lost {missing}"
    return "\n".join(out) + "\n"


@pytest.fixture
def studio_broker(tmp_path: Path) -> Iterator[StudioBroker]:
    workdir = tmp_path / "studio-broker"
    workdir.mkdir()
    passwords = {name: f"{name}-{uuid.uuid4().hex[:12]}" for name in ACCOUNTS}
    password_file = workdir / "passwords"
    write_password_file(password_file, {name: (name, pw) for name, pw in passwords.items()})
    tls_port = None
    if shutil.which("openssl"):
        _make_certificates(workdir)
        tls_port = free_port()
    config = adapt_config(
        CONF.read_text(), workdir=workdir, password_file=password_file, tls_port=tls_port
    )
    broker = start_broker(workdir, extra_config=config)
    try:
        yield StudioBroker(broker, tls_port, workdir / "ca.pem" if tls_port else None, passwords)
    finally:
        died_with = broker.stop()
    if died_with is not None:
        pytest.fail(f"mosquitto died during the test (exit {died_with}):\n{broker.log()}")


class Client:
    """A paho client that records what it receives."""

    def __init__(
        self,
        studio: StudioBroker,
        account: str | None,
        *,
        password: str | None = None,
        protocol: int = mqtt.MQTTv5,
        client_id: str | None = None,
        persistent: bool = False,
        tls: bool = False,
    ) -> None:
        kwargs = {"clean_session": not persistent} if protocol == mqtt.MQTTv311 else {}
        self.mqtt = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=client_id or f"test-{uuid.uuid4().hex[:8]}",
            protocol=protocol,
            **kwargs,
        )
        if account is not None:
            self.mqtt.username_pw_set(
                account, password if password is not None else studio.passwords[account]
            )
        port = studio.broker.port
        if tls:
            assert studio.ca_file is not None and studio.tls_port is not None
            self.mqtt.tls_set(ca_certs=str(studio.ca_file), tls_version=ssl.PROTOCOL_TLS_CLIENT)
            port = studio.tls_port
        self.received: queue.Queue[tuple[str, bytes]] = queue.Queue()
        self.granted: queue.Queue[bool] = queue.Queue()
        connected: queue.Queue[bool] = queue.Queue()
        self.mqtt.on_connect = lambda _c, _u, _f, reason, _p: connected.put(not reason.is_failure)
        self.mqtt.on_message = lambda _c, _u, m: self.received.put((m.topic, m.payload))
        self.mqtt.on_subscribe = lambda _c, _u, _m, codes, _p: self.granted.put(
            all(not code.is_failure for code in codes)
        )
        self.mqtt.connect(studio.broker.host, port)
        self.mqtt.loop_start()
        try:
            ok = connected.get(timeout=TIMEOUT_S)
        except queue.Empty:
            ok = False
        if not ok:
            self.close()
            raise ConnectionRefusedError(f"{account} was refused")

    def subscribe(self, topic: str) -> bool:
        self.mqtt.subscribe(topic, qos=1)
        return self.granted.get(timeout=TIMEOUT_S)

    def publish(self, topic: str, payload: bytes) -> None:
        info = self.mqtt.publish(topic, payload, qos=1)
        info.wait_for_publish(timeout=TIMEOUT_S)

    def next(self, timeout: float = TIMEOUT_S) -> tuple[str, bytes]:
        return self.received.get(timeout=timeout)

    def nothing_more(self) -> list[tuple[str, bytes]]:
        extra: list[tuple[str, bytes]] = []
        while True:
            try:
                extra.append(self.received.get(timeout=QUIET_S))
            except queue.Empty:
                return extra

    def close(self) -> None:
        self.mqtt.disconnect()
        self.mqtt.loop_stop()


@pytest.fixture
def clients(studio_broker: StudioBroker) -> Iterator[dict[str, Client]]:
    opened = {name: Client(studio_broker, name) for name in ACCOUNTS}
    try:
        yield opened
    finally:
        for client in opened.values():
            client.close()


def test_anonymous_and_wrong_passwords_are_refused(studio_broker: StudioBroker) -> None:
    with pytest.raises(ConnectionRefusedError):
        Client(studio_broker, None)
    with pytest.raises(ConnectionRefusedError):
        Client(studio_broker, "alice", password="bob's password")
    with pytest.raises(ConnectionRefusedError):
        Client(studio_broker, "mallory", password="anything")


def test_only_supervisors_publish_supervisor_requests_and_only_as_themselves(
    clients: dict[str, Client],
) -> None:
    table = clients["livetable-t1"]
    assert table.subscribe("livetable/t1/request/#")
    forged = [
        ("platform", "livetable/t1/request/supervisor/platform/pause"),
        ("platform", "livetable/t1/request/supervisor/alice/pause"),
        ("viewer", "livetable/t1/request/supervisor/viewer/pause"),
        ("alice", "livetable/t1/request/supervisor/bob/cancel"),
        ("alice", "livetable/t1/request/platform/platform/decision"),
        ("bob", "livetable/t1/request/supervisor/alice/resume"),
        ("livetable-t2", "livetable/t1/request/supervisor/alice/pause"),
    ]
    for account, topic in forged:
        clients[account].publish(topic, f"forged by {account}".encode())
    allowed = [
        ("alice", "livetable/t1/request/supervisor/alice/pause"),
        ("bob", "livetable/t1/request/supervisor/bob/resume"),
        ("platform", "livetable/t1/request/platform/platform/decision"),
        ("viewer", "livetable/t1/request/viewer/viewer/state"),
    ]
    for account, topic in allowed:
        clients[account].publish(topic, account.encode())
    got = [table.next() for _ in allowed] + table.nothing_more()
    assert got == [(topic, account.encode()) for account, topic in allowed]


def test_each_account_reads_only_its_own_responses(clients: dict[str, Client]) -> None:
    readers = ("platform", "alice", "bob", "viewer")
    for account in readers:
        assert clients[account].subscribe("livetable/+/response/+")
    for account in readers:
        clients["livetable-t1"].publish(f"livetable/t1/response/{account}", account.encode())
    # Another table cannot answer in t1's name.
    clients["livetable-t2"].publish("livetable/t1/response/alice", b"forged by t2")
    clients["livetable-t2"].publish("livetable/t2/response/alice", b"t2 for alice")
    for account in readers:
        first = clients[account].next()
        assert first == (f"livetable/t1/response/{account}", account.encode())
    assert clients["alice"].next() == ("livetable/t2/response/alice", b"t2 for alice")
    for account in readers:
        assert clients[account].nothing_more() == [], account


def test_a_dashboard_subscribed_to_everything_sees_only_the_public_topics(
    clients: dict[str, Client],
) -> None:
    viewer = clients["viewer"]
    viewer.subscribe("livetable/#")
    table = clients["livetable-t1"]
    clients["alice"].publish("livetable/t1/request/supervisor/alice/pause", b"request")
    table.publish("livetable/t1/response/alice", b"response")
    table.publish("livetable/t1/events", b"event")
    table.publish("livetable/t1/state", b"state")
    # The table account writes only its own namespace.
    table.publish("livetable/t2/state", b"forged by t1")
    table.publish("livetable/t1/availability", b"online")
    got = [viewer.next(), viewer.next(), viewer.next(), *viewer.nothing_more()]
    assert got == [
        ("livetable/t1/events", b"event"),
        ("livetable/t1/state", b"state"),
        ("livetable/t1/availability", b"online"),
    ]


def test_a_packet_over_64_kib_is_refused(studio_broker: StudioBroker) -> None:
    viewer = Client(studio_broker, "viewer")
    # MQTT 3.1.1: the client is not told the limit, so the broker itself has to refuse it.
    table = Client(studio_broker, "livetable-t1", protocol=mqtt.MQTTv311)
    try:
        assert viewer.subscribe("livetable/t1/events")
        table.publish("livetable/t1/events", b"x" * 60_000)
        assert viewer.next() == ("livetable/t1/events", b"x" * 60_000)
        table.mqtt.publish("livetable/t1/events", b"y" * 70_000, qos=1)
        assert viewer.nothing_more() == []
    finally:
        table.close()
        viewer.close()


def test_no_other_account_can_connect_as_the_tables_client_id(
    studio_broker: StudioBroker,
) -> None:
    """The table's connection survives a viewer and the platform connecting with its client
    id (each gets its own account's name), and still receives what is sent to it."""
    disconnects: queue.Queue[str] = queue.Queue()
    table = Client(studio_broker, "livetable-t1", client_id="livetable-t1", persistent=True)
    table.mqtt.on_disconnect = lambda _c, _u, _f, reason, _p: disconnects.put(str(reason))
    impostors = []
    try:
        assert table.subscribe("livetable/t1/request/#")
        for account in ("viewer", "platform"):
            impostors.append(Client(studio_broker, account, client_id="livetable-t1"))
        platform = impostors[-1]
        platform.publish("livetable/t1/request/platform/platform/status", b"{}")
        assert table.next() == ("livetable/t1/request/platform/platform/status", b"{}")
        assert disconnects.empty(), disconnects.get()
    finally:
        for impostor in impostors:
            impostor.close()
        table.close()


def test_a_slow_consumer_loses_no_qos1_message_beyond_the_default_queue(
    studio_broker: StudioBroker,
) -> None:
    # mosquitto's default max_queued_messages (1000) would drop the last 500 of these.
    count = 1500
    consumer_id = f"platform-{uuid.uuid4().hex[:8]}"
    consumer = Client(
        studio_broker, "platform", protocol=mqtt.MQTTv311, client_id=consumer_id, persistent=True
    )
    assert consumer.subscribe("livetable/+/events")
    consumer.close()
    table = Client(studio_broker, "livetable-t1")
    try:
        infos = [
            table.mqtt.publish("livetable/t1/events", str(seq).encode(), qos=1)
            for seq in range(count)
        ]
        for info in infos:
            info.wait_for_publish(timeout=TIMEOUT_S)
    finally:
        table.close()
    consumer = Client(
        studio_broker, "platform", protocol=mqtt.MQTTv311, client_id=consumer_id, persistent=True
    )
    try:
        payloads = [consumer.next()[1] for _ in range(count)]
    finally:
        consumer.close()
    assert payloads == [str(seq).encode() for seq in range(count)]


def test_the_tls_listener_authenticates_too(studio_broker: StudioBroker) -> None:
    if studio_broker.tls_port is None:
        pytest.skip("openssl is not installed: no certificates for the TLS listener")
    with pytest.raises(ConnectionRefusedError):
        Client(studio_broker, None, tls=True)
    alice = Client(studio_broker, "alice", tls=True)
    try:
        assert alice.subscribe("livetable/+/state")
    finally:
        alice.close()


def test_supervisors_and_viewers_read_the_dealers_line_and_the_platform_does_not(
    clients: dict[str, Client],
) -> None:
    """docs/mqtt-api.md, Accounts: the dealer's line names no card, so a console or a
    dealer display (a viewer) may read it; the platform has no use for it."""
    for account in ("platform", "alice", "bob", "viewer"):
        clients[account].subscribe("livetable/t1/dealer")  # the platform's may be refused
        assert clients[account].subscribe("livetable/t1/state"), account
    table = clients["livetable-t1"]
    table.publish("livetable/t1/dealer", b"dealer line")
    table.publish("livetable/t1/state", b"state")  # after the line: absence is shown by it
    for account in ("alice", "bob", "viewer"):
        got = [clients[account].next(), clients[account].next()]
        assert got == [("livetable/t1/dealer", b"dealer line"), ("livetable/t1/state", b"state")]
    assert clients["platform"].next() == ("livetable/t1/state", b"state")
