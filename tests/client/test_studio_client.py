"""The multi-table API client against a real broker and a real ``livetable run``: every event
once and in order although its link is cut while the table plays (caught up by ``seq``),
the last ``backfill`` events on first sight, and the role the broker lets an account act in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt

from controller.client.api_client import Account, StudioClient, TableUpdate
from tests.support.broker import closed_port
from tests.support.daemon import SimulatedTable, unique_by_seq
from tests.support.mqtt_proxy import CuttingProxy
from tests.support.wait import wait_until

ROUNDS = 30
TIMEOUT_S = 240.0


def test_a_cut_link_loses_no_event_and_repeats_none(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    host, port = mqtt_broker
    deliveries = 0

    def every_tenth_event(topic: str, _body: bytes) -> bool:
        nonlocal deliveries
        if not topic.endswith("/events"):
            return False
        deliveries += 1
        return deliveries % 10 == 0

    proxy = CuttingProxy(host, port, every_tenth_event, cuts=3)
    updates: list[TableUpdate] = []
    links: list[bool] = []
    table = SimulatedTable(tmp_path / "t1", host, port, "baccarat", ROUNDS)
    studio = StudioClient(
        "127.0.0.1",
        proxy.port,
        Account("viewer", "watcher"),
        on_update=updates.append,
        on_link=lambda up, _why: links.append(up),
    )
    try:
        assert studio.wait_connected(10)
        table.daemon.start()
        table.bots.start()
        wait_until(
            lambda: table.bots.done or not table.daemon.alive(), TIMEOUT_S, f"{ROUNDS} rounds"
        )
        assert table.daemon.alive(), table.daemon.why()
        assert proxy.cuts_left == 0, "the link was not cut three times"
        published = unique_by_seq(table.viewer.events)
        last = published[-1]["seq"]

        def caught_up(client: StudioClient) -> bool:
            feed = client.feed("t1")
            return feed is not None and feed.last_seq == last

        studio.wait_for(caught_up, 30, f"the studio client to reach seq {last}")
        feed = studio.feed("t1")
        assert feed is not None and feed.complete_since == 0
        assert feed.events == published
        told = [u.body for u in updates if u.kind == "event"]
        assert told == published, "on_update told an event twice, out of order, or not at all"
        assert links.count(False) >= 3 and links[-1] is True
        assert feed.state is not None and feed.state["seq"] == last
    finally:
        studio.close()
        table.close()
        proxy.close()


def test_first_sight_fetches_only_the_last_backfill_events(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    host, port = mqtt_broker
    table = SimulatedTable(tmp_path / "t1", host, port, "baccarat", 3)
    try:
        table.daemon.start()
        table.bots.start()
        wait_until(lambda: table.bots.done or not table.daemon.alive(), TIMEOUT_S, "3 rounds")
        published = unique_by_seq(table.viewer.events)
        last = published[-1]["seq"]
        studio = StudioClient(host, port, Account("viewer", "late"), backfill=10)
        try:

            def ready(client: StudioClient) -> bool:
                feed = client.feed("t1")
                return feed is not None and feed.ready and feed.last_seq == last

            studio.wait_for(ready, 30, "the backfill")
            feed = studio.feed("t1")
            assert feed is not None
            assert feed.complete_since == last - 10
            assert feed.events == published[-10:]
            assert feed.availability == "online" and feed.dealer is not None
        finally:
            studio.close()
    finally:
        table.close()


def test_the_role_is_the_one_the_broker_lets_the_account_act_in(secure_mqtt_broker: Any) -> None:
    broker = secure_mqtt_broker
    found = {}
    for role in ("supervisor", "viewer", "platform"):
        user, password = broker.users[role]
        client = StudioClient(
            "127.0.0.1",
            broker.port,
            Account(role, user, password),
            protocol=mqtt.MQTTv5,
            client_id=user,
        )
        try:
            assert client.wait_connected(10), client.refused
            found[role] = client.probe_role()
        finally:
            client.close()
    assert found == {"supervisor": "supervisor", "viewer": "viewer", "platform": None}


def test_wrong_credentials_are_refused_at_once(secure_mqtt_broker: Any) -> None:
    broker = secure_mqtt_broker
    user, _password = broker.users["supervisor"]
    links: list[tuple[bool, str]] = []
    client = StudioClient(
        "127.0.0.1",
        broker.port,
        Account("supervisor", user, "not-the-password"),
        protocol=mqtt.MQTTv5,
        client_id=user,
        on_link=lambda up, why: links.append((up, why)),
    )
    try:
        assert not client.wait_connected(10)
        assert client.refused is not None
        assert links and links[0][0] is False and "refused" in links[0][1]
    finally:
        client.close()


def test_a_broker_that_refuses_the_connection_is_known_unreachable_at_once() -> None:
    with closed_port() as port:
        client = StudioClient("127.0.0.1", port, Account("viewer", "watcher"))
        try:
            wait_until(lambda: client.unreachable, 10.0, "the client knowing it")
            assert client.refused is None
            assert not client.connected.is_set()
        finally:
            client.close()


def test_a_dead_node_of_a_cluster_is_not_the_cluster_unreachable(
    mqtt_broker: tuple[str, int],
) -> None:
    # The first node refuses; the client moves on to the second, which is up.
    with closed_port() as dead:
        client = StudioClient(
            "127.0.0.1",
            dead,
            Account("viewer", "watcher"),
            hosts=[("127.0.0.1", dead), mqtt_broker],
        )
        try:
            assert client.wait_connected(10)
            assert not client.unreachable
        finally:
            client.close()
