"""The throw-away NATS cluster (simulators/nats_cluster.py) on real nodes: it forms, it
carries livetable's retained topics across nodes, and it survives one node killed and
restarted with the MQTT state replicated (three replicas)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support.nats import MqttPeer, NatsCluster
from tests.support.wait import wait_until

TIMEOUT_S = 30.0


@pytest.fixture
def peers() -> Iterator[Callable[..., MqttPeer]]:
    made: list[MqttPeer] = []

    def make(port: int, **options: object) -> MqttPeer:
        peer = MqttPeer(port, **options)  # type: ignore[arg-type]
        made.append(peer)
        return peer.wait_connected()

    yield make
    for peer in made:
        peer.close()


def subscribed(peer: MqttPeer, topic: str) -> None:
    """Subscribe until the SUBACK grants it: for some seconds after a node dies, a
    subscription's consumer cannot be made (SUBACK 0x80), and a client must try again."""
    wait_until(lambda: peer.subscribe(topic) == ["granted"], TIMEOUT_S, f"{topic} granted")


def test_the_cluster_forms_with_one_meta_leader_and_every_mqtt_port(
    nats_cluster: NatsCluster,
) -> None:
    assert len(nats_cluster.nodes) == 3
    assert nats_cluster.formed()
    assert nats_cluster.meta_leader() in {node.name for node in nats_cluster.nodes}
    routes = [node.monitor("routez") for node in nats_cluster.nodes]
    peers_seen = [{route["remote_name"] for route in r["routes"]} for r in routes if r]
    assert peers_seen == [
        {other.name for other in nats_cluster.nodes if other is not node}
        for node in nats_cluster.nodes
    ]


def test_retained_state_and_a_persistent_session_survive_a_killed_node(
    nats_cluster: NatsCluster, peers: Callable[..., MqttPeer]
) -> None:
    table = peers(nats_cluster.node(1).mqtt_port, client_id="table-t1")
    assert table.publish("livetable/t1/state", b'{"seq": 1}', retain=True)
    # A persistent QoS 1 session on node 2, then away.
    watcher = peers(nats_cluster.node(2).mqtt_port, client_id="watcher", clean=False)
    assert watcher.subscribe("livetable/+/events") == ["granted"]
    watcher.close()

    nats_cluster.kill(1)
    assert nats_cluster.wait_mqtt_ready(), "no new leaders for the MQTT streams"
    survivor = peers(nats_cluster.node(3).mqtt_port, client_id="table-t1-again")
    assert survivor.publish("livetable/t1/events", b"while n1 was down")
    late = peers(nats_cluster.node(3).mqtt_port, client_id="late")
    subscribed(late, "livetable/+/state")
    wait_until(lambda: late.payloads("livetable/t1/state"), TIMEOUT_S, "the retained state")
    assert late.received("livetable/t1/state")[0][2], "the state came without its retain flag"

    nats_cluster.restart(1)
    assert nats_cluster.formed()
    back = peers(nats_cluster.node(1).mqtt_port, client_id="watcher", clean=False)
    wait_until(
        lambda: back.payloads("livetable/t1/events") == [b"while n1 was down"],
        TIMEOUT_S,
        "the event queued for the session while it was away, on the restarted node",
    )
    fresh = peers(nats_cluster.node(1).mqtt_port, client_id="fresh")
    assert fresh.subscribe("livetable/t1/state") == ["granted"]
    wait_until(
        lambda: fresh.payloads("livetable/t1/state") == [b'{"seq": 1}'],
        TIMEOUT_S,
        "the retained state on the restarted node",
    )
