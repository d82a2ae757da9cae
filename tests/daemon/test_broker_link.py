"""The daemon's link to the broker holds: no message larger than the broker takes, no
request that takes the table off the broker again and again, no other account that can take
the table's session, and every connection problem named within seconds.

Real mosquitto (the shipped packet limit, one of 16 KiB, the shipped identity rule with the
production ACL), ``livetable run`` as a subprocess, its log read as an operator reads it."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest

from controller.client.api_client import Account, ApiClient
from controller.mqtt.connection import publish_packet_bytes
from controller.service.config import LivetableConfig, MqttConfig
from controller.service.daemon import TableDaemon
from controller.service.mqtt_link import POISON_AFTER_DROPS
from controller.table.config import TableConfig
from controller.table.events import SupervisorCommanded
from simulators.shoe.simulator import ShoeSimulator
from tests.support.broker import BrokerProcess, free_port
from tests.support.daemon import DaemonProcess, write_config
from tests.support.mqtt_proxy import CuttingProxy
from tests.support.wait import wait_until

BASE = "livetable/t1"
TIMEOUT_S = 20.0
EVENTS = 10_000
# A pause reason as long as the API takes (500 characters), of 4-byte characters: the
# largest events a supervisor can make the table publish.
BIG_REASON = "\N{PLAYING CARD ACE OF SPADES}" * 500


def build_journal(journal: Path, events: int) -> None:
    """A table whose journal and outbox hold ``events`` events, made in-process through the
    daemon's own table and publications (no broker): pauses with the longest reason a request
    may carry and resumes, alternately."""
    config = LivetableConfig(
        table=TableConfig(table_id="t1", game="baccarat", journal_path=journal),
        mqtt=MqttConfig(host="127.0.0.1", port=1),
    )
    daemon = TableDaemon(config, shoe=False)
    try:
        daemon.publications.live()
        daemon.assembled.start(at=99.0)
        table = daemon.assembled.table
        # Building only: the journal's fsync per row is not what this test is about.
        table.journal._db.execute("PRAGMA synchronous=OFF")
        runtime, at = daemon.runtime, 100.0
        number = 0
        while daemon.outbox.last_seq < events:
            number += 1
            at += 1.0
            if number % 2:
                command = SupervisorCommanded(
                    f"alice/{number}", "pause", "alice", "supervisor", at, BIG_REASON
                )
            else:
                command = SupervisorCommanded(
                    f"alice/{number}", "resume", "alice", "supervisor", at
                )
            runtime.handle(command)
        assert daemon.outbox.last_seq >= events
    finally:
        daemon.close()  # the journal's lock too: the daemon under test takes it next


class Tap:
    """An API client (the project's own) that also keeps every raw message it receives."""

    def __init__(self, port: int, account: Account, **options: Any) -> None:
        self.raw: list[tuple[str, bytes]] = []
        self.api = ApiClient("127.0.0.1", port, "t1", account, **options)
        inner = self.api.client.on_message

        def on_message(client: Any, userdata: Any, message: Any) -> None:
            self.raw.append((message.topic, bytes(message.payload)))
            inner(client, userdata, message)

        self.api.client.on_message = on_message
        assert self.api.wait_connected(), f"the broker refused the client: {self.api.refused}"

    def close(self) -> None:
        self.api.close()


@pytest.fixture
def taps() -> Iterator[Callable[..., Tap]]:
    made: list[Tap] = []

    def make(port: int, account: Account, **options: Any) -> Tap:
        tap = Tap(port, account, **options)
        made.append(tap)
        return tap

    yield make
    for tap in made:
        tap.close()


@pytest.fixture
def shoe(tmp_path: Path) -> Iterator[ShoeSimulator]:
    with ShoeSimulator("angel-eye", tmp_path / "shoe", seed=3) as simulator:
        yield simulator


@pytest.fixture
def daemons() -> Iterator[Callable[..., DaemonProcess]]:
    made: list[DaemonProcess] = []

    def make(config: Path) -> DaemonProcess:
        daemon = DaemonProcess(config, config.parent / "daemon.log")
        made.append(daemon)
        daemon.start()
        return daemon

    yield make
    for daemon in made:
        daemon.stop()


def wait_online(viewer: Tap, daemon: DaemonProcess) -> None:
    def online() -> bool:
        assert daemon.alive(), daemon.why()
        return viewer.api.availability == "online" and viewer.api.state is not None

    wait_until(online, TIMEOUT_S, "the daemon online with a state")


def connects(daemon: DaemonProcess) -> int:
    return daemon.log().count("connected to the broker")


# -- 1. No message larger than the broker takes ------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("broker_limit", "mqtt_protocol", "configured"),
    [
        (65536, "5", None),  # the shipped broker, which says its limit in CONNACK
        (16384, "3.1.1", 16384),  # a smaller one, told by [mqtt] max_packet_bytes
    ],
    ids=["shipped-64KiB-mqtt5", "16KiB-mqtt311"],
)
def test_a_viewer_pages_through_10000_events_and_the_daemon_never_drops(
    tmp_path: Path,
    start_mosquitto: Callable[..., BrokerProcess],
    taps: Callable[..., Tap],
    daemons: Callable[..., DaemonProcess],
    shoe: ShoeSimulator,
    broker_limit: int,
    mqtt_protocol: str,
    configured: int | None,
) -> None:
    # The shipped queue per client: the 10,000 events go out at once at the start (the
    # broker never had them), and the default queue of 1000 would drop the state after them.
    broker = start_mosquitto(
        tmp_path / "broker",
        extra_config=(
            f"allow_anonymous true\nmax_packet_size {broker_limit}\nmax_queued_messages 200000\n"
        ),
    )
    build_journal(tmp_path / "t1.journal", EVENTS)
    extra = f"max_packet_bytes = {configured}\n" if configured is not None else ""
    config = write_config(
        tmp_path / "t1.toml",
        shoe_port=tmp_path / "shoe",
        broker_port=broker.port,
        mqtt_protocol=mqtt_protocol,
        extra_mqtt=extra,
    )
    watcher = taps(broker.port, Account("viewer", "watcher"))
    watcher.api.client.subscribe(f"{BASE}/#", qos=1)
    viewer = taps(broker.port, Account("viewer", "viewer"))
    daemon = daemons(config)
    wait_online(viewer, daemon)
    seen: list[int] = []
    pages = 0
    since = 0
    while True:
        answer = viewer.api.request("events", since=since, timeout=TIMEOUT_S)
        assert answer["ok"], answer
        events = answer["data"]["events"]
        assert events, answer["message"]
        seen += [event["seq"] for event in events]
        pages += 1
        since = events[-1]["seq"]
        if not answer["data"]["more"]:
            break
    last = answer["data"]["last_seq"]
    assert last >= EVENTS
    assert seen == list(range(1, last + 1)), "every event once, in order"
    # The pages are as full as the limit allows: more than one, far fewer than one per event.
    assert 1 < pages < last / 10, pages
    # Every message the daemon published, answers and the big pauses' events and states
    # included, fits: what the broker would have disconnected it for never came.
    v5 = mqtt_protocol == "5"
    for topic, payload in viewer.raw + watcher.raw:
        assert publish_packet_bytes(topic, payload, None, v5) <= broker_limit, (topic, len(payload))
    assert connects(daemon) == 1, daemon.log()[-3000:]
    assert "lost the broker" not in daemon.log()
    assert daemon.alive()


# -- 2. A request the link keeps dropping on is dropped, not retried ----------------------


def test_a_request_whose_delivery_fails_ten_times_is_answered_poisoned_and_does_not_loop(
    tmp_path: Path,
    mqtt_broker: tuple[str, int],
    taps: Callable[..., Tap],
    daemons: Callable[..., DaemonProcess],
    shoe: ShoeSimulator,
) -> None:
    host, port = mqtt_broker
    transaction = f"poison-{uuid.uuid4().hex}"
    proxy = CuttingProxy(
        host,
        port,
        lambda topic, body: topic.endswith("/status") and transaction.encode() in body,
        cuts=10,
    )
    try:
        config = write_config(
            tmp_path / "t1.toml", shoe_port=tmp_path / "shoe", broker_port=proxy.port
        )
        viewer = taps(port, Account("viewer", "viewer"))
        daemon = daemons(config)
        wait_online(viewer, daemon)
        viewer.api.send("status", transaction)

        def answers() -> list[dict[str, Any]]:
            return [
                body
                for topic, payload in list(viewer.raw)
                if topic == f"{BASE}/response/viewer"
                and (body := json.loads(payload))["transaction"] == transaction
            ]

        # The answers of the first deliveries, which the daemon did handle, may come too (its
        # MQTT client sends them again after reconnecting); the last word is "poisoned".
        wait_until(
            lambda: any(not a["ok"] and a["error"]["code"] == "poisoned" for a in answers()),
            TIMEOUT_S * 2,
            "a poisoned answer",
        )
        # The broker delivers it again after every cut (its acknowledgement never got
        # through), ten times, then once through the proxy: the broker has it acknowledged
        # then, and nothing brings it back. (The poisoned answer comes after the third cut,
        # while the broker still has cuts to go: count once they are used.)
        wait_until(
            lambda: proxy.cuts_left == 0 and proxy.deliveries >= 11,
            TIMEOUT_S * 2,
            "the ten cuts used and the request delivered once more",
        )
        settled = proxy.deliveries
        assert settled == 11, settled
        fresh = viewer.api.request("status", timeout=TIMEOUT_S)
        assert fresh["ok"], fresh
        assert proxy.deliveries == settled, "the poisoned request came back"
        lines = [line for line in daemon.log().splitlines() if "answered 'poisoned'" in line]
        assert len(lines) == 1, lines
        assert f"dropped {POISON_AFTER_DROPS} times" in lines[0]
        assert " ERROR " in lines[0], lines[0]
    finally:
        proxy.close()


# -- 3. The table's session is the table's --------------------------------------------------


def test_another_account_with_the_tables_client_id_leaves_the_table_connected(
    tmp_path: Path,
    secure_mqtt_broker: BrokerProcess,
    taps: Callable[..., Tap],
    daemons: Callable[..., DaemonProcess],
    shoe: ShoeSimulator,
) -> None:
    broker = secure_mqtt_broker
    users = broker.users
    username, password = users["table"]
    config = write_config(
        tmp_path / "t1.toml",
        shoe_port=tmp_path / "shoe",
        broker_port=broker.port,
        username=username,
        password=password,
    )
    viewer = taps(broker.port, Account("viewer", *users["viewer"]))
    supervisor = taps(broker.port, Account("supervisor", *users["supervisor"]))
    daemon = daemons(config)
    wait_online(viewer, daemon)
    impostors: list[mqtt.Client] = []
    try:
        for role, protocol in (("viewer", mqtt.MQTTv311), ("platform", mqtt.MQTTv5)):
            name, secret = users[role]
            options: dict[str, Any] = {} if protocol == mqtt.MQTTv5 else {"clean_session": False}
            impostor = mqtt.Client(
                mqtt.CallbackAPIVersion.VERSION2,
                client_id=config_client_id(config),
                protocol=protocol,
                **options,
            )
            impostor.username_pw_set(name, secret)
            connected = threading.Event()
            impostor.on_connect = lambda *_a, done=connected: done.set()
            impostor.reconnect_delay_set(0.1, 0.2)
            impostor.connect_async("127.0.0.1", broker.port, keepalive=30)
            impostor.loop_start()
            impostors.append(impostor)
            assert connected.wait(TIMEOUT_S), f"the {role} impostor did not connect"
        # Requests sent while the impostors hold "the table's" id are the table's to answer.
        for number in range(5):
            answer = supervisor.api.request("status", timeout=TIMEOUT_S)
            assert answer["ok"], (number, answer)
        pause = supervisor.api.request("pause", reason="checking the link", timeout=TIMEOUT_S)
        assert pause["ok"], pause
    finally:
        for impostor in impostors:
            impostor.disconnect()
            impostor.loop_stop()
    assert connects(daemon) == 1, daemon.log()[-3000:]
    assert "lost the broker" not in daemon.log()
    assert "offline" not in [
        payload.decode() for topic, payload in viewer.raw if topic == f"{BASE}/availability"
    ]


def config_client_id(config: Path) -> str:
    from controller.service.config import load_config

    mqtt_config = load_config(config).mqtt
    assert mqtt_config is not None
    return mqtt_config.client_id


# -- 4. Every connection problem named at once ---------------------------------------------

ERROR_LINE = re.compile(r" ERROR controller\.service\.daemon: (?P<message>.*the MQTT broker at .*)")


def first_error(daemon: DaemonProcess, started: float, within_s: float = 5.0) -> str:
    """The daemon's first error line about the broker, which must come within ``within_s``
    of its start."""

    def found() -> str | None:
        assert daemon.alive(), daemon.why()
        for line in daemon.log().splitlines():
            match = ERROR_LINE.search(line)
            if match:
                return match.group("message")
        return None

    message = wait_until(found, within_s + 5.0, "an error line about the broker")
    elapsed = time.monotonic() - started
    assert elapsed <= within_s + 0.5, f"the line came after {elapsed:.1f} s: {message}"
    return message


def start_daemon_at(
    tmp_path: Path, daemons: Callable[..., DaemonProcess], **config: Any
) -> tuple[DaemonProcess, float]:
    path = write_config(tmp_path / "t1.toml", shoe_port=tmp_path / "shoe", **config)
    started = time.monotonic()
    return daemons(path), started


def test_a_closed_port_is_named_at_once(
    tmp_path: Path, daemons: Callable[..., DaemonProcess], shoe: ShoeSimulator
) -> None:
    port = free_port()
    daemon, started = start_daemon_at(tmp_path, daemons, broker_port=port)
    message = first_error(daemon, started)
    assert f"127.0.0.1:{port} cannot be reached: connection refused" in message, message


def test_an_unknown_host_is_named_at_once(
    tmp_path: Path, daemons: Callable[..., DaemonProcess], shoe: ShoeSimulator
) -> None:
    daemon, started = start_daemon_at(
        tmp_path, daemons, broker_host="no-such-broker.invalid", broker_port=1883
    )
    message = first_error(daemon, started)
    assert "no-such-broker.invalid:1883 cannot be reached: unknown host" in message, message


def test_a_wrong_password_is_named_at_once(
    tmp_path: Path,
    secure_mqtt_broker: BrokerProcess,
    daemons: Callable[..., DaemonProcess],
    shoe: ShoeSimulator,
) -> None:
    username, _password = secure_mqtt_broker.users["table"]
    daemon, started = start_daemon_at(
        tmp_path,
        daemons,
        broker_port=secure_mqtt_broker.port,
        username=username,
        password="not-the-password",
    )
    message = first_error(daemon, started)
    assert "refused" in message and "livetable-t1" in message, message
    assert "not-the-password" not in daemon.log()


def test_a_broker_that_speaks_only_mqtt_311_is_named_at_once_to_an_mqtt_5_daemon(
    tmp_path: Path, daemons: Callable[..., DaemonProcess], shoe: ShoeSimulator
) -> None:
    from simulators.embedded_broker import EmbeddedBroker

    with EmbeddedBroker() as broker:  # amqtt: MQTT 3.1.1 only
        daemon, started = start_daemon_at(
            tmp_path,
            daemons,
            broker_port=broker.port,
            mqtt_protocol="5",
            username=broker.username,
            password=broker.password,
        )
        message = first_error(daemon, started)
        assert "MQTT 5" in message and 'protocol = "3.1.1"' in message, message
        daemon.stop()


def test_a_lasting_problem_is_said_again_at_a_slowing_pace(
    tmp_path: Path, daemons: Callable[..., DaemonProcess], shoe: ShoeSimulator
) -> None:
    """Not once per attempt (every 0.2 to 5 s), nor once and never again."""
    port = free_port()
    daemon, started = start_daemon_at(tmp_path, daemons, broker_port=port)
    first_error(daemon, started)

    def repeated() -> list[str]:
        lines = [line for line in daemon.log().splitlines() if ERROR_LINE.search(line)]
        return lines if len(lines) >= 2 else []

    lines = wait_until(repeated, 15.0, "the problem said a second time")
    assert "(still: " in lines[1], lines
    attempts = int(re.search(r"still: (\d+) attempts", lines[1]).group(1))  # type: ignore[union-attr]
    assert attempts > 2, lines[1]


def test_the_api_client_names_a_refused_login_and_a_closed_port_at_once(
    secure_mqtt_broker: BrokerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """The project's API client (the demo's and the bench's connections are watched the
    same way) says what is wrong within seconds, at error level."""
    caplog.set_level(logging.ERROR, logger="controller.client.api_client")
    port = free_port()
    closed = ApiClient("127.0.0.1", port, "t1", Account("viewer", "viewer", "x"))
    refused = ApiClient(
        "127.0.0.1", secure_mqtt_broker.port, "t1", Account("viewer", "viewer", "wrong")
    )
    try:

        def said(text: str) -> bool:
            return any(
                text in record.getMessage() and record.levelno == logging.ERROR
                for record in caplog.records
            )

        wait_until(lambda: said(f"127.0.0.1:{port} cannot be reached"), 5.0, "the closed port")
        wait_until(lambda: said(f"127.0.0.1:{secure_mqtt_broker.port} refused"), 5.0, "the refusal")
    finally:
        closed.close()
        refused.close()


def test_the_demo_against_a_broker_refusing_mqtt_5_says_so_at_once_and_stops(
    tmp_path: Path,
) -> None:
    """The demo speaks MQTT 5 to a broker given by --broker; one that speaks only 3.1.1
    (amqtt here) is named in one line in the first seconds, with the way out, and the demo
    stops before any table starts."""
    import subprocess
    import sys

    from simulators.embedded_broker import EmbeddedBroker
    from tests.support.daemon import REPO_ROOT

    with EmbeddedBroker() as broker:
        started = time.monotonic()
        demo = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "controller.tools.cli",
                "demo",
                "--plain",
                "--rounds",
                "1",
                "--broker",
                f"mqtt://{broker.username}:{broker.password}@{broker.host}:{broker.port}",
            ],
            cwd=REPO_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[tuple[float, str]] = []
        try:
            assert demo.stderr is not None
            for line in demo.stderr:
                lines.append((time.monotonic() - started, line.rstrip()))
            code = demo.wait(120)
        finally:
            if demo.poll() is None:
                demo.kill()
                demo.wait()
    elapsed = time.monotonic() - started
    # The demo checks the broker before any table starts: its one error line names MQTT 5
    # and the way out, and no table is started against a broker that cannot carry it.
    said = [
        (at, line)
        for at, line in lines
        if line.startswith("livetable: error:") and "MQTT 5" in line
    ]
    assert said, "\n".join(line for _at, line in lines)
    assert "3.1.1" in said[0][1], said[0]
    assert said[0][0] < 15.0, said[0]  # the demo's own start (imports) included
    assert code == 1
    assert not any("running:" in line for _at, line in lines), lines
    assert elapsed < 90.0, elapsed
