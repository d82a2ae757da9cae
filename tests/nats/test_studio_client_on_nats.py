"""The multi-table API client on a NATS cluster, whose broker refuses a subscription its
authorisation does not grant (mosquitto grants it and filters deliveries instead): the
platform's client says which of its subscriptions were refused, and reads the rest."""

from __future__ import annotations

from typing import Any

from controller.client.api_client import Account, StudioClient


def test_a_refused_subscription_is_named_and_the_others_stand(secure_nats_cluster: Any) -> None:
    secure = secure_nats_cluster
    node = secure.cluster.node(1)
    client = StudioClient(
        node.host,
        node.mqtt_port,
        Account("platform", "platform", secure.passwords["platform"]),
        client_id="platform",
    )
    try:
        assert client.wait_connected(30), client.refused
        assert client.refused_subscriptions == ["livetable/+/dealer"]
    finally:
        client.close()
