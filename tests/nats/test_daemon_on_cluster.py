"""A first end-to-end run of livetable on a three-node NATS cluster, with the generated
authorisation: a real ``livetable run`` daemon (MQTT 3.1.1, its account livetable-t1, a
simulated shoe on a pty) connected to node 1, a supervisor's ApiClient on node 2.

Node 1 is then killed. The daemon's paho client knows one broker address and reconnects to
it only (failover to the other nodes is not built yet), so the daemon waits, alive, until
node 1 is back; then it resumes its persistent session, gets the request sent meanwhile on
node 2, and the supervisor's events continue by seq with none lost. The times and what the
nodes logged are in docs/nats.md; the test asserts only what must happen, and logs how
long each step took (``--log-cli-level=INFO`` shows them).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import paho.mqtt.client as mqtt

from controller.client.api_client import Account, ApiClient
from simulators.shoe.simulator import ShoeSimulator
from tests.nats.conftest import SecureCluster
from tests.support.daemon import DaemonProcess, gaps, unique_by_seq, write_config
from tests.support.nats import MqttPeer
from tests.support.wait import wait_until

logger = logging.getLogger(__name__)
TIMEOUT_S = 30.0


def test_a_daemon_on_node_1_survives_its_nodes_restart_without_losing_an_event(
    tmp_path: Path, secure_nats_cluster: SecureCluster
) -> None:
    cluster, passwords = secure_nats_cluster.cluster, secure_nats_cluster.passwords
    node1, node2 = cluster.node(1), cluster.node(2)
    with ShoeSimulator("angel-eye", tmp_path / "shoe", seed=5):
        config = write_config(
            tmp_path / "t1.toml",
            shoe_port=tmp_path / "shoe",
            broker_port=node1.mqtt_port,
            mqtt_protocol="3.1.1",
            username="livetable-t1",
            password=passwords["livetable-t1"],
        )
        daemon = DaemonProcess(config, tmp_path / "daemon.log")
        alice = ApiClient(
            "127.0.0.1",
            node2.mqtt_port,
            "t1",
            Account("supervisor", "alice", passwords["alice"]),
            protocol=mqtt.MQTTv311,
        )
        # The table's availability as a viewer on node 3 sees it, every message.
        watcher = MqttPeer(
            cluster.node(3).mqtt_port,
            client_id="availability-watcher",
            login=("viewer", passwords["viewer"]),
        )
        try:
            assert watcher.wait_connected().subscribe("livetable/t1/availability") == ["granted"]
            assert alice.wait_connected(TIMEOUT_S), f"node 2 refused alice: {alice.refused}"
            started = time.monotonic()
            daemon.start()
            alice.wait_for(
                lambda c: (
                    c.availability == "online"
                    and c.state is not None
                    and c.state["devices"]["shoe_online"]
                ),
                TIMEOUT_S,
                "the table online with its shoe, seen on node 2",
            )
            logger.info(
                "online and a state on node 2 %.2f s after start", time.monotonic() - started
            )
            answer = alice.request("status", timeout=TIMEOUT_S)
            assert answer["ok"] and answer["command"] == "status", answer
            assert alice.request("pause", reason="before the node dies", timeout=TIMEOUT_S)["ok"]

            killed = time.monotonic()
            cluster.kill(1)
            wait_until(
                lambda: "lost the broker" in daemon.log(),
                TIMEOUT_S,
                "the daemon noticing its node gone",
            )
            logger.info(
                "the daemon saw its node gone %.2f s after the kill", time.monotonic() - killed
            )
            assert daemon.alive(), daemon.log()[-3000:]
            # Sent on node 2 while the daemon has no broker: kept in its persistent session.
            assert cluster.wait_mqtt_ready(), "the MQTT streams got no new leaders"
            logger.info("MQTT streams led again %.2f s after the kill", time.monotonic() - killed)
            resume = alice.send("resume")

            restarted = time.monotonic()
            cluster.restart(1)
            logger.info("node 1 rejoined in %.2f s", time.monotonic() - restarted)
            answer = alice.response(resume, timeout=TIMEOUT_S)
            logger.info(
                "the resume sent during the outage answered %.2f s after node 1 restarted",
                time.monotonic() - restarted,
            )
            assert answer["ok"], answer
            assert daemon.alive()
            assert alice.request("pause", reason="after the node came back", timeout=TIMEOUT_S)[
                "ok"
            ]
            assert alice.request("resume", timeout=TIMEOUT_S)["ok"]

            # Every event the daemon journaled, paged from the table, against what alice saw.
            full = alice.catch_up(timeout=TIMEOUT_S)
            last = full.events[-1]["seq"]
            alice.wait_for(
                lambda c: any(e["seq"] == last for e in c.events), TIMEOUT_S, "the last event live"
            )
            seen = unique_by_seq(list(alice.events))
            seqs = [event["seq"] for event in seen]
            assert gaps([event["seq"] for event in full.events]) == []
            assert gaps(seqs[:1] and list(range(1, seqs[0])) + seqs) == [], seqs
            first = seqs[0]
            assert seen == [e for e in full.events if e["seq"] >= first]
            kinds = [event["type"] for event in seen]
            assert kinds.count("table_paused") == 2 and kinds.count("table_resumed") == 2, kinds
            logger.info("%d events live, %d repeats", len(seen), len(alice.events) - len(seen))
            # The daemon says online again on its new connection. Nobody said offline: the
            # node that held its connection (and its will) was the one that died.
            availability = wait_until(
                lambda: (seen := watcher.payloads("livetable/t1/availability"))[1:] and seen,
                TIMEOUT_S,
                "the daemon's second online, on its new connection",
            )
            logger.info("availability seen on node 3: %s", availability)
            assert availability == [b"online", b"online"], availability
        finally:
            watcher.close()
            alice.close()
            daemon.stop()
