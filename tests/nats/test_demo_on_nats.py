"""``livetable demo`` on a broker that speaks MQTT 3.1.1 only (a node of a real NATS
cluster) and on mosquitto under 3.1.1: with ``--mqtt 3.1.1`` the demo's daemons, people and
view play their rounds there; with MQTT 5 the broker refuses the connection and the demo
says so in one line. Under 3.1.1 a broker acknowledges a publish its ACL drops, so the
demo's broker check reads back what it publishes: an ACL that refuses it is still named in
one line before any table starts."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import PRODUCTION_ACL, SECURE_USERS
from tests.support.broker import BrokerProcess, write_password_file
from tests.support.nats import NatsCluster

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
REPO_ROOT = Path(__file__).resolve().parent.parent.parent
FAST = ["--pace-s", "0.01", "--betting-s", "0.3", "--decision-s", "60", "--dealer-idle-s", "60"]
# Only keeps a hanging demo from hanging the suite: nothing here is timed.
HANG_S = 300.0


def run_demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    temporary = tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    return subprocess.run(
        [*LIVETABLE, "demo", "--plain", *args],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
        cwd=REPO_ROOT,
        env={**os.environ, "TMPDIR": str(temporary)},
    )


def settled(output: str, table_id: str) -> str:
    lines = [
        line
        for line in output.splitlines()
        if line.startswith(f"livetable demo: table {table_id}:")
    ]
    assert len(lines) == 1, output[-3000:]
    return lines[0]


def test_the_demo_plays_its_rounds_on_a_nats_node_under_mqtt_3_1_1(
    tmp_path: Path, nats_cluster: NatsCluster
) -> None:
    node = nats_cluster.node(2)
    done = run_demo(
        tmp_path,
        *["--tables", "2", "--rounds", "3", "--mqtt", "3.1.1", *FAST],
        *["--broker", f"mqtt://{node.host}:{node.mqtt_port}"],
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for table_id in ("demo1", "demo2"):
        assert "3 round(s) settled" in settled(done.stdout, table_id), done.stdout[-3000:]


def test_the_url_parameter_names_the_version_too(tmp_path: Path, nats_cluster: NatsCluster) -> None:
    node = nats_cluster.node(1)
    done = run_demo(
        tmp_path,
        *["--rounds", "1", *FAST, "--broker", f"mqtt://{node.host}:{node.mqtt_port}?mqtt=3.1.1"],
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 round(s) settled" in settled(done.stdout, "demo"), done.stdout[-3000:]


def test_mqtt_5_on_a_nats_node_is_refused_in_one_line(
    tmp_path: Path, nats_cluster: NatsCluster
) -> None:
    node = nats_cluster.node(1)
    done = run_demo(
        tmp_path,
        "--tables",
        "2",
        "--rounds",
        "3",
        "--broker",
        f"mqtt://{node.host}:{node.mqtt_port}",
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert done.stderr.splitlines() == [
        f"livetable: error: the broker at mqtt://{node.host}:{node.mqtt_port} refused MQTT 5: "
        "try --mqtt 3.1.1"
    ], done.stderr
    assert "round" not in done.stdout  # no table started


def test_the_demo_plays_on_mosquitto_under_mqtt_3_1_1(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    host, port = mqtt_broker
    done = run_demo(
        tmp_path,
        *["--tables", "2", "--rounds", "2", "--mqtt", "3.1.1", *FAST],
        *["--broker", f"mqtt://{host}:{port}"],
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for table_id in ("demo1", "demo2"):
        assert "2 round(s) settled" in settled(done.stdout, table_id), done.stdout[-3000:]


def test_an_acl_that_drops_the_demos_publishes_is_named_under_mqtt_3_1_1(
    tmp_path: Path, start_mosquitto: Callable[..., BrokerProcess]
) -> None:
    """The table account livetable-t1 of the shipped ACL may write only table t1's topics.
    Mosquitto acknowledges the 3.1.1 publishes it drops; the demo's read-back names one."""
    workdir = tmp_path / "broker"
    workdir.mkdir()
    passwords = workdir / "passwords"
    write_password_file(passwords, SECURE_USERS)
    broker = start_mosquitto(
        workdir,
        extra_config=(
            f"allow_anonymous false\npassword_file {passwords}\nacl_file {PRODUCTION_ACL}\n"
        ),
        users=SECURE_USERS,
    )
    user, password = SECURE_USERS["table"]
    done = run_demo(
        tmp_path,
        *["--rounds", "1", "--mqtt", "3.1.1"],
        *["--broker", f"mqtt://{user}:{password}@{broker.host}:{broker.port}"],
    )
    assert done.returncode == 1, done.stdout[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("livetable: error: the broker at "), lines
    assert "livetable/demo/" in lines[0] and "back to account livetable-t1" in lines[0], lines
    assert password not in lines[0]
