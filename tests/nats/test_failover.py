"""Failover across the nodes of a three-node NATS cluster (MQTT 3.1.1, JetStream).

Four tables (``livetable run`` daemons with simulated shoes), each configured with
``[mqtt] hosts`` naming all three nodes, starting with a different one; per table a platform
and a supervisor (the bots of simulators/mqtt_bots.py, playing blackjack rounds) and a
subscriber with a persistent session (fixed client id, clean session off), all ApiClients
given every node and starting on a node other than their table's. In mid-round the node one
table is connected to is killed; once every table is back it is restarted, and then the node
another table is on is killed and restarted the same way (two dead nodes at once would take
the cluster's quorum).

What must hold: every table plays its rounds to the end; every persistent subscriber has
every event its table journaled, once after dropping repeats by seq; every retained state is
its table's last; every settled round is what the rules engine makes of the cards and
decisions published; the hole card is published without its face until it is read at the
reveal. How long each table took to be connected again after a kill is printed (no time is
asserted; the figures are in docs/nats.md).

A second test shows, on a node of a cluster with the generated authorisation, what happens to
a refused SUBSCRIBE: asked again at a slowing pace for the retry window, then left.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt

from controller.client.api_client import Account, ApiClient
from controller.mqtt.connection import Subscriptions
from simulators.mqtt_bots import TableBots
from simulators.shoe.simulator import ShoeSimulator
from tests.nats.conftest import SecureCluster
from tests.support.daemon import (
    DaemonProcess,
    check_stream,
    gaps,
    unique_by_seq,
    write_config,
)
from tests.support.nats import NatsCluster
from tests.support.wait import wait_until

logger = logging.getLogger(__name__)
TABLES = ("t1", "t2", "t3", "t4")
# Rounds after the second node is back: the bots play on until then, then this many more.
ROUNDS_AFTER = 3
TIMEOUT_S = 60.0
RETRY_S = 10.0
CONNECTED = re.compile(r"connected to the broker 127\.0\.0\.1:(\d+)")


class Table:
    """One table: its shoe, daemon, bots and persistent subscriber."""

    def __init__(self, workdir: Path, table_id: str, ports: list[int], first: int) -> None:
        workdir.mkdir(parents=True)
        self.table_id = table_id
        self.ports = ports
        self.shoe = ShoeSimulator("angel-eye", workdir / "shoe", seed=7 + first, cut_card_depth=60)
        self.shoe.__enter__()
        order = ports[first:] + ports[:first]
        config = write_config(
            workdir / f"{table_id}.toml",
            table_id=table_id,
            game="blackjack-classic",
            shoe_port=workdir / "shoe",
            broker_port=order[0],
            mqtt_protocol="3.1.1",
        )
        text = config.read_text()
        hosts = ", ".join(f'"127.0.0.1:{port}"' for port in order)
        text = text.replace(f'host = "127.0.0.1"\nport = {order[0]}\n', f"hosts = [{hosts}]\n")
        assert "hosts = [" in text, text
        config.write_text(text)
        self.daemon = DaemonProcess(config, workdir / "daemon.log")
        # The clients start on the next node (the subscriber on the one after): another
        # node's than the table's.
        # Every state the persistent subscriber got, in the order it came.
        self.states: list[dict[str, Any]] = []
        self.subscriber = self._client(order[2], "viewer", "watcher", f"watch-{table_id}")
        # The platform and the supervisor keep persistent sessions too: the bots count the
        # rounds that ended from the events the platform got (a clean session loses those
        # sent while it moves between nodes).
        self.platform = self._client(order[1], "platform", "platform", f"platform-{table_id}")
        self.supervisor = self._client(order[2], "supervisor", "alice", f"alice-{table_id}")
        self.bots = TableBots(
            self.platform,
            self.supervisor,
            draw=self.shoe.draw,
            shuffle=self.shoe.new_shoe,
            rounds=1_000_000,  # until told (see ROUNDS_AFTER)
            seed=first,
        )

    def _client(self, port: int, role: str, name: str, client_id: str | None = None) -> ApiClient:
        return ApiClient(
            "127.0.0.1",
            port,
            self.table_id,
            Account(role, name),
            protocol=mqtt.MQTTv311,
            client_id=client_id,
            clean=client_id is None,
            hosts=[("127.0.0.1", each) for each in self.ports],
            on_state=self.states.append if role == "viewer" else None,
        )

    def connections(self) -> list[int]:
        """The ports the daemon connected to, in order."""
        return [int(port) for port in CONNECTED.findall(self.daemon.log())]

    def in_round(self) -> bool:
        state = self.platform.state
        return bool(state and state.get("round") and self.bots.rounds_opened >= 2)

    def close(self) -> None:
        self.bots.stop()
        self.daemon.stop()
        for client in (self.subscriber, self.platform, self.supervisor):
            client.close()
        self.shoe.__exit__(None, None, None)


def _kill_under(
    cluster: NatsCluster, tables: list[Table], victim: Table, index_of: dict[int, int]
) -> list[str]:
    """Kill the node ``victim`` is connected to, in mid-round; wait until every table on it is
    connected again elsewhere; restart it. Returns the measured lines."""
    wait_until(
        victim.in_round,
        TIMEOUT_S,
        f"{victim.table_id} in a round (bots: {victim.bots.rounds_opened} opened, errors "
        f"{victim.bots.errors[-3:]})",
    )
    port = victim.connections()[-1]
    node = index_of[port]
    on_it = [table for table in tables if table.connections()[-1] == port]
    before = {table.table_id: len(table.connections()) for table in on_it}
    killed = time.monotonic()
    cluster.kill(node)
    figures = []
    for table in on_it:
        wait_until(
            lambda t=table: len(t.connections()) > before[t.table_id],
            TIMEOUT_S,
            f"{table.table_id} connected to another node after node {node} died",
        )
        now = table.connections()[-1]
        assert now != port, f"{table.table_id} went back to the dead node"
        line = (
            f"node {node} killed: {table.table_id} connected again (to node {index_of[now]}) "
            f"{time.monotonic() - killed:.1f} s after the kill"
        )
        figures.append(line)
        logger.info("%s", line)
        print(line)
        assert table.daemon.alive(), table.daemon.log()[-3000:]
    ready = cluster.wait_mqtt_ready()
    line = (
        f"node {node} killed: every MQTT stream led again {time.monotonic() - killed:.1f} s after"
    )
    figures.append(line)
    print(line)
    assert ready, "the MQTT streams got no new leaders"
    # Every table answers a request again (its requests subscription is granted).
    for table in tables:
        answer = _answered(table.supervisor, "status")
        assert answer["ok"], answer
        line = (
            f"node {node} killed: {table.table_id} answered status "
            f"{time.monotonic() - killed:.1f} s after"
        )
        figures.append(line)
        print(line)
    cluster.restart(node)
    return figures


def _answered(client: ApiClient, command: str) -> dict[str, Any]:
    """``command``'s answer, sent again under the same transaction until one comes: a client
    with a clean session that moved to another node meanwhile lost the answer sent while it
    was away (the table executes a transaction once and answers a repeat from its store)."""
    transaction = uuid.uuid4().hex
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        client.send(command, transaction)
        try:
            return client.response(transaction, timeout=RETRY_S)
        except TimeoutError:
            if time.monotonic() > deadline:
                raise
            print(f"{client.table_id}: no answer to {command} in {RETRY_S:g} s: sent again")


def _hole_card_hidden(events: list[dict[str, Any]], states: list[dict[str, Any]]) -> int:
    """The hole card is published face down (no ``card``), and while the players decide the
    dealer shows at most one card in every state. Returns the states checked in a decision."""
    for event in events:
        data = event["data"]
        if event["type"] == "card_dealt" and data.get("face_down"):
            assert "card" not in data, f"a face-down card published with its face: {event}"
    deciding = 0
    for state in states:
        view = (state.get("round") or {}).get("view") or {}
        if state.get("phase") != "DECIDING" or not view:
            continue
        deciding += 1
        shown = [card for card in view["dealer"]["cards"] if card is not None]
        assert len(shown) <= 1, f"the dealer's hole card shown during the decisions: {state}"
    return deciding


def test_four_tables_fail_over_across_a_three_node_cluster(
    tmp_path: Path, nats_cluster: NatsCluster
) -> None:
    cluster = nats_cluster
    ports = [cluster.node(index).mqtt_port for index in (1, 2, 3)]
    index_of = {port: index + 1 for index, port in enumerate(ports)}
    tables: list[Table] = []
    try:
        for number, table_id in enumerate(TABLES):
            tables.append(Table(tmp_path / table_id, table_id, ports, number % 3))
        for table in tables:
            for client in (table.subscriber, table.platform, table.supervisor):
                assert client.wait_connected(TIMEOUT_S), "a node refused a client"
                assert client.subscribed.wait(TIMEOUT_S), (
                    f"{client.client._client_id!r}: no SUBACK in {TIMEOUT_S:g} s"
                )
            table.daemon.start()
        for table in tables:
            table.platform.wait_for(
                lambda c: c.availability == "online" and c.state is not None,
                TIMEOUT_S,
                f"{table.table_id} online",
            )
            table.bots.start()

        figures = _kill_under(cluster, tables, tables[0], index_of)
        # Then the node another table is on (not the one just restarted, if it can be).
        first_node = index_of[tables[0].connections()[0]]
        others = [t for t in tables[1:] if index_of[t.connections()[-1]] != first_node]
        figures += _kill_under(cluster, tables, (others or tables[1:])[0], index_of)

        for table in tables:
            table.bots.rounds = table.bots.rounds_opened + ROUNDS_AFTER
        for table in tables:
            wait_until(
                lambda t=table: t.bots.done, TIMEOUT_S * 3, f"{table.table_id}'s rounds played"
            )
            table.bots.stop()

        for table in tables:
            full = table.supervisor.catch_up(timeout=TIMEOUT_S)
            journaled = full.events
            assert gaps([event["seq"] for event in journaled]) == [], table.table_id
            last = journaled[-1]["seq"]
            # Every one: a message in flight to the subscriber when its node died is sent
            # again by the cluster only after the consumer's ack wait (30 s by default).
            waited = time.monotonic()
            wanted = {event["seq"] for event in journaled}
            table.subscriber.wait_for(
                lambda c, wanted=wanted: wanted <= {e["seq"] for e in c.events},
                TIMEOUT_S,
                f"{table.table_id}'s events at its persistent subscriber (missing at first: "
                f"{gaps(sorted({e['seq'] for e in table.subscriber.events}))})",
            )
            waited = time.monotonic() - waited
            # The table may still be at work (a round the bots opened on an answer they
            # lost, its timers): what came after the catch-up is left out.
            seen = [e for e in unique_by_seq(list(table.subscriber.events)) if e["seq"] <= last]
            assert seen == journaled, (
                f"{table.table_id}: the subscriber's events differ from the journal: "
                f"{gaps([e['seq'] for e in seen])}"
            )
            repeats = len(table.subscriber.events) - len(seen)
            rounds = check_stream(seen, "blackjack-classic")
            assert rounds >= ROUNDS_AFTER, f"{table.table_id}: only {rounds} rounds settled"
            deciding = _hole_card_hidden(seen, table.states)
            assert deciding, f"{table.table_id}: no state in a decision to check"
            # The retained state, as a newcomer on any node gets it: the table's last, which
            # the persistent subscriber got too.
            newcomer = ApiClient(
                "127.0.0.1",
                ports[TABLES.index(table.table_id) % 3],
                table.table_id,
                Account("viewer", "late"),
                protocol=mqtt.MQTTv311,
            )
            try:
                newcomer.wait_for(
                    lambda c, t=table, last=last: (
                        c.state is not None
                        and c.state["seq"] >= last
                        and c.state == t.subscriber.state
                    ),
                    TIMEOUT_S,
                    f"{table.table_id}'s last state retained",
                )
            finally:
                newcomer.close()
            line = (
                f"{table.table_id}: {len(seen)} events once each ({repeats} repeats dropped), "
                f"{rounds} rounds checked, {deciding} states in decisions, connections "
                f"{table.connections()}, bot errors {len(table.bots.errors)}, waited "
                f"{waited:.1f} s for the subscriber's last events"
            )
            print(line)
            logger.info("%s", line)
        for line in figures:
            print(line)
    finally:
        for table in tables:
            table.close()


def test_a_refused_subscribe_is_asked_again_then_left_to_the_acl(
    secure_nats_cluster: SecureCluster,
) -> None:
    """What :class:`controller.mqtt.connection.Subscriptions` does with a SUBACK failure, on
    a real node: the refused topic (outside the viewer's rights: refused for good) is sent
    again at a slowing pace until the retry window ends, then reported; the granted one is
    never sent again."""
    cluster, passwords = secure_nats_cluster.cluster, secure_nats_cluster.passwords
    granted_topic, refused_topic = "livetable/+/state", "livetable/t1/request/#"
    answers: list[tuple[list[str], list[str]]] = []
    done: list[list[str]] = []
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id="retry-probe", protocol=mqtt.MQTTv311
    )
    client.username_pw_set("viewer", passwords["viewer"])
    # The window counts from the connection; 6 s leaves room for the first SUBACK on a
    # loaded machine (at 2.5 s a full test run at load 8 once saw no retry answered).
    subscriptions = Subscriptions(
        client,
        [(granted_topic, 1), (refused_topic, 1)],
        log=logger,
        retry_for_s=6.0,
        on_done=done.append,
    )
    # Every answer the helper gives, also the ones it takes up itself: a SUBACK that came
    # before subscribe() had returned its packet id is answered from inside the retry.
    answer_suback = subscriptions.on_suback

    def recorded(mid: int, reasons: Any) -> tuple[list[str], list[str]]:
        answer = answer_suback(mid, reasons)
        answers.append(answer)
        return answer

    subscriptions.on_suback = recorded  # type: ignore[method-assign]
    client.on_connect = lambda c, _u, _f, reason, _p: (
        None if reason.is_failure else subscriptions.subscribe(c)
    )
    client.on_subscribe = lambda _c, _u, mid, reasons, _p: subscriptions.on_suback(mid, reasons)
    client.connect_async("127.0.0.1", cluster.node(2).mqtt_port)
    client.loop_start()
    try:
        wait_until(lambda: done, TIMEOUT_S, "the retries given up")
    finally:
        subscriptions.close()
        client.disconnect()
        client.loop_stop()
    assert done == [[refused_topic]]
    assert subscriptions.refused == [refused_topic]
    # A SUBACK that came before subscribe() had returned its packet id answers nothing when
    # it comes (([], [])): the helper takes it up when subscribe() returns.
    answers = [answer for answer in answers if answer != ([], [])]
    # The first SUBACK answers both; each retry asks only for the refused one, refused again
    # (0.5 s, 1 s, 2 s ... while the window lasts: at least two retries).
    assert answers[0] == ([granted_topic], [refused_topic]), answers
    assert len(answers) >= 3, answers
    assert all(answer == ([], [refused_topic]) for answer in answers[1:]), answers
