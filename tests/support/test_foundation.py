"""The foundation works: a real broker, real paho-mqtt 2.x, the ACL, the leak check, the CLI."""

from __future__ import annotations

import os
import pty
import queue
import subprocess
import sys
import threading
import uuid

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from tests.conftest import child_pids, find_leaks, open_ptys
from tests.support.broker import BrokerProcess

TIMEOUT_S = 10.0


def _client(host: str, port: int, credentials: tuple[str, str] | None = None) -> mqtt.Client:
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=f"test-{uuid.uuid4().hex[:8]}",
        protocol=mqtt.MQTTv5,
    )
    if credentials:
        client.username_pw_set(*credentials)
    connected: queue.Queue[ReasonCode] = queue.Queue()
    client.on_connect = lambda _c, _u, _f, reason, _p: connected.put(reason)
    client.connect(host, port)
    client.loop_start()
    reason = connected.get(timeout=TIMEOUT_S)
    if reason.is_failure:
        client.loop_stop()
        raise ConnectionRefusedError(str(reason))
    return client


def _close(client: mqtt.Client) -> None:
    client.disconnect()
    client.loop_stop()


def test_qos1_retained_message_round_trips_through_a_real_broker(
    mqtt_broker: tuple[str, int],
) -> None:
    host, port = mqtt_broker
    publisher = _client(host, port)
    info = publisher.publish("livetable/t1/state", b'{"state": "IDLE"}', qos=1, retain=True)
    info.wait_for_publish(timeout=TIMEOUT_S)
    assert info.is_published()
    _close(publisher)

    # A subscriber that connects afterwards gets the retained message, flagged as retained.
    received: queue.Queue[mqtt.MQTTMessage] = queue.Queue()
    subscriber = _client(host, port)
    subscriber.on_message = lambda _c, _u, message: received.put(message)
    subscriber.subscribe("livetable/+/state", qos=1)
    try:
        message = received.get(timeout=TIMEOUT_S)
    finally:
        _close(subscriber)
    assert message.topic == "livetable/t1/state"
    assert message.payload == b'{"state": "IDLE"}'
    assert message.retain
    assert message.qos == 1


def test_secure_broker_refuses_anonymous_clients(secure_mqtt_broker: BrokerProcess) -> None:
    with pytest.raises(ConnectionRefusedError):
        _client(secure_mqtt_broker.host, secure_mqtt_broker.port)
    with pytest.raises(ConnectionRefusedError):
        _client(secure_mqtt_broker.host, secure_mqtt_broker.port, ("supervisor", "wrong"))


def test_acl_lets_only_supervisors_publish_supervisor_commands(
    secure_mqtt_broker: BrokerProcess,
) -> None:
    broker = secure_mqtt_broker
    users = broker.users
    received: queue.Queue[bytes] = queue.Queue()
    table = _client(broker.host, broker.port, users["table"])
    table.on_message = lambda _c, _u, message: received.put(message.payload)
    subscribed = threading.Event()
    table.on_subscribe = lambda *_args: subscribed.set()
    table.subscribe("livetable/t1/request/#", qos=1)
    assert subscribed.wait(TIMEOUT_S)
    try:
        # One after the other, each acknowledged before the next: the broker passes them on
        # in this order, so the supervisor's last one marks the end of what could arrive.
        roles = ("platform", "viewer", "supervisor", "platform", "viewer", "supervisor")
        supervisor = users["supervisor"][0]  # commands go under the supervisor's account
        for number, role in enumerate(roles, start=1):
            client = _client(broker.host, broker.port, users[role])
            props = Properties(mqtt.PacketTypes.PUBLISH)
            info = client.publish(
                f"livetable/t1/request/supervisor/{supervisor}/pause",
                f"{number} from {role}".encode(),
                qos=1,
                properties=props,
            )
            info.wait_for_publish(timeout=TIMEOUT_S)
            _close(client)
        # The supervisor's commands are the only ones the table receives: nothing came
        # before the first, nor between it and the last.
        assert received.get(timeout=TIMEOUT_S) == b"3 from supervisor"
        assert received.get(timeout=TIMEOUT_S) == b"6 from supervisor"
    finally:
        _close(table)


def test_leak_check_sees_threads_processes_and_ptys() -> None:
    threads, children, ptys = set(threading.enumerate()), child_pids(), open_ptys()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="deliberate-leak")
    thread.start()
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    master, slave = pty.openpty()
    try:
        problems = " ".join(find_leaks(threads, children, ptys, grace_s=0.1))
        assert "deliberate-leak" in problems
        assert str(process.pid) in problems
        assert "/dev/pt" in problems
    finally:
        stop.set()
        thread.join()
        process.kill()
        process.wait()
        os.close(master)
        os.close(slave)
    assert find_leaks(threads, children, ptys, grace_s=1.0) == []


def test_cli_prints_help_and_rejects_unknown_commands() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert "livetable" in done.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", "no-such-command"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
