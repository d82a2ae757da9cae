"""Several broker addresses: ``[mqtt] hosts`` of a table, ``[broker] hosts`` of the console,
``livetable ctl --broker h:p,h:p``, and how a watched paho client moves between them (a real
paho client against closed loopback ports: nothing is mocked)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from controller.console.config import load_console_config
from controller.kernel.errors import ConfigurationError
from controller.mqtt.connection import ConnectionWatch, parse_broker, watch_connection
from controller.service.config import load_config
from controller.tools.ctl import CtlError, ctl_broker
from tests.support.broker import closed_port
from tests.support.wait import wait_until

TABLE = """
[table]
id = "t7"
game = "baccarat"
journal_path = "t7.journal"
[mqtt]
"""


def _table(tmp_path: Path, mqtt_text: str) -> Path:
    path = tmp_path / "t7.toml"
    path.write_text(TABLE + mqtt_text)
    return path


def _refusal(path: Path) -> str:
    with pytest.raises(ConfigurationError) as refused:
        load_config(path, environ={})
    return str(refused.value)


def test_a_tables_hosts_are_its_brokers_in_order_the_first_as_host_and_port(
    tmp_path: Path,
) -> None:
    path = _table(tmp_path, 'hosts = ["n1:1883", "n2.studio:1884", "[::1]:1885"]\n')
    broker = load_config(path, environ={}).mqtt
    assert broker is not None
    assert broker.brokers == (("n1", 1883), ("n2.studio", 1884), ("::1", 1885))
    assert (broker.host, broker.port) == ("n1", 1883)
    # Without hosts: host and port alone, as before.
    plain = load_config(_table(tmp_path, 'host = "mq"\nport = 1999\n'), environ={}).mqtt
    assert plain is not None and plain.brokers == (("mq", 1999),) and plain.hosts == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('hosts = ["n1:1883"]\nhost = "n1"\n', "[mqtt] give hosts or host and port, not both"),
        ('hosts = ["n1:1883"]\nport = 1883\n', "[mqtt] give hosts or host and port, not both"),
        ("hosts = []\n", '[mqtt] hosts must be a list of "host:port"'),
        ('hosts = "n1:1883"\n', '[mqtt] hosts must be a list of "host:port"'),
        ('hosts = ["n1"]\n', "[mqtt] hosts: a broker is host:port with a port 1-65535, not 'n1'"),
        ('hosts = ["n1:0"]\n', "[mqtt] hosts: a broker is host:port"),
        ('hosts = ["n1:70000"]\n', "[mqtt] hosts: a broker is host:port"),
        ("hosts = [1883]\n", "[mqtt] hosts: a broker is host:port, not 1883"),
        ('hosts = ["n1:1883", "n1:1883"]\n', "[mqtt] hosts names n1:1883 twice"),
    ],
)
def test_bad_hosts_are_refused_in_one_line_naming_the_file_and_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _table(tmp_path, text)
    refused = _refusal(path)
    assert refused.startswith(f"{path}: {message}"), refused
    assert "\n" not in refused


def test_the_consoles_broker_hosts(tmp_path: Path) -> None:
    path = tmp_path / "console.toml"
    path.write_text('[broker]\nhosts = ["n1:1883", "n2:1883"]\nprotocol = "3.1.1"\n')
    broker = load_console_config(path).broker
    assert broker.hosts == (("n1", 1883), ("n2", 1883))
    assert (broker.host, broker.port) == ("n1", 1883)
    path.write_text('[broker]\nhosts = ["n1:1883"]\nhost = "n1"\n')
    with pytest.raises(ConfigurationError) as refused:
        load_console_config(path)
    assert str(refused.value) == f"{path}: [broker] give hosts or host and port, not both"
    path.write_text('[broker]\nhosts = ["n1"]\n')
    with pytest.raises(ConfigurationError, match=r"\[broker\] hosts: a broker is host:port"):
        load_console_config(path)


def test_ctls_broker_option_takes_a_host_a_host_and_port_or_a_list() -> None:
    def nodes(text: str, default_port: int) -> list[tuple[str, int]]:
        args = argparse.Namespace(broker=text, tls_ca=None, port=default_port, user=None, mqtt=None)
        return list(ctl_broker(args).nodes)

    assert nodes("127.0.0.1", 1883) == [("127.0.0.1", 1883)]
    assert nodes("mq:1999", 1883) == [("mq", 1999)]
    assert nodes("n1:1883,n2:1884, n3", 8883) == [
        ("n1", 1883),
        ("n2", 1884),
        ("n3", 8883),
    ]
    with pytest.raises(CtlError, match="an empty broker between commas"):
        nodes("n1:1883,,n2:1883", 1883)
    with pytest.raises(CtlError, match="a broker is host:port"):
        nodes("n1:port", 1883)


def test_parse_broker() -> None:
    assert parse_broker("[::1]:1883") == ("::1", 1883)
    with pytest.raises(ValueError, match="not ':1883'"):
        parse_broker(":1883")


def test_a_watched_client_tries_every_broker_in_turn_and_names_each_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Three loopback ports nothing listens on: each attempt is refused, and the next goes
    # to the next port, round and round.
    with closed_port() as first, closed_port() as second, closed_port() as third:
        _rotation(caplog, [first, second, third])


def _rotation(caplog: pytest.LogCaptureFixture, ports: list[int]) -> None:
    hosts = [("127.0.0.1", port) for port in ports]
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="rotation")
    client.reconnect_delay_set(0.05, 0.1)
    client.on_connect = lambda *_args: None
    log = logging.getLogger("test.rotation")
    moves: list[tuple[str, int]] = []
    watch = watch_connection(
        client,
        "127.0.0.1",
        ports[0],
        protocol="3.1.1",
        username=None,
        client_id="rotation",
        log=log,
        hosts=hosts,
    )
    watch.on_move = lambda host, port: moves.append((host, port))
    with caplog.at_level(logging.ERROR, logger="test.rotation"):
        client.connect_async("127.0.0.1", ports[0])
        client.loop_start()
        try:
            wait_until(lambda: len(moves) >= 7, 30.0, "seven moves between the brokers")
        finally:
            client.disconnect()
            client.loop_stop()
            watch.close()
    # Round-robin from the second: 2, 3, 1, 2, 3, 1, 2 ...
    assert moves[:7] == [hosts[(i + 1) % 3] for i in range(7)]
    lines = [r.getMessage() for r in caplog.records if r.name == "test.rotation"]
    # One line per broker for the problem (its repeats are due only after 5 s).
    for port in ports:
        said = [line for line in lines if f"127.0.0.1:{port} cannot be reached" in line]
        assert len(said) == 1, lines


def _watched(
    hosts: list[tuple[str, int]],
    reports: list[tuple[int, int]],
    on_connect: Callable[..., None] = lambda *_args: None,
) -> tuple[mqtt.Client, ConnectionWatch]:
    """A paho client watched over ``hosts`` (from the first), each unreached report noted."""
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="unreached")
    client.reconnect_delay_set(0.05, 0.1)
    client.on_connect = on_connect
    watch = watch_connection(
        client,
        *hosts[0],
        protocol="3.1.1",
        username=None,
        client_id="unreached",
        log=logging.getLogger("test.unreached"),
        hosts=hosts,
        on_unreached=lambda unreached, brokers: reports.append((unreached, brokers)),
    )
    client.connect_async(*hosts[0])
    client.loop_start()
    return client, watch


def test_a_watch_counts_each_broker_it_could_not_reach_once() -> None:
    # Both nodes refuse, round and round: every attempt is reported, each node counted once.
    reports: list[tuple[int, int]] = []
    with closed_port() as first, closed_port() as second:
        client, watch = _watched([("127.0.0.1", first), ("127.0.0.1", second)], reports)
        try:
            wait_until(lambda: len(reports) >= 5, 30.0, "five failed attempts")
        finally:
            client.disconnect()
            client.loop_stop()
            watch.close()
    assert reports[:5] == [(1, 2), (2, 2), (2, 2), (2, 2), (2, 2)]
    assert watch.unreached == 2


def test_a_watch_forgets_the_brokers_it_could_not_reach_once_connected(
    mqtt_broker: tuple[str, int],
) -> None:
    # A dead node first, then a live one: the client moves on and connects; the dead node
    # was one of two, and once connected none is counted.
    reports: list[tuple[int, int]] = []
    connected: list[bool] = []
    with closed_port() as dead:
        client, watch = _watched(
            [("127.0.0.1", dead), mqtt_broker],
            reports,
            lambda _c, _u, _f, reason, _p: connected.append(not reason.is_failure),
        )
        try:
            wait_until(lambda: connected, 30.0, "the client connected to the live node")
        finally:
            client.disconnect()
            client.loop_stop()
            watch.close()
    assert connected == [True]
    assert reports == [(1, 2)]
    assert watch.unreached == 0
