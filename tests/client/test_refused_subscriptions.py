"""A subscription the broker refuses past the retry window is reported once and still asked
for, slowly, while the connection lasts: a cluster that stays busy longer than the window
(a NATS node refusing new subscriptions for over a minute under load) must not leave a
table's people deaf for good. Against a real nats-server node whose permissions are changed
and reloaded (mosquitto grants every SUBSCRIBE and applies its ACL to delivery instead)."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from controller.mqtt.connection import Subscriptions
from simulators.nats_cluster import nats_server_binary, start_cluster
from tests.support.wait import wait_until

logger = logging.getLogger(__name__)

GRANTED, LATER = "livetable/granted", "livetable/later"


def authorization(*topics: str) -> str:
    """One user, ``probe``, who may subscribe to ``topics`` (and what NATS's MQTT needs)."""
    subjects = ", ".join(f'"{topic.replace("/", ".")}"' for topic in topics)
    return (
        "authorization {\n  users = [\n"
        '    {user: "probe", password: "probe-pw", permissions: {\n'
        '      publish: {allow: ["$MQTT.>"]},\n'
        f'      subscribe: {{allow: [{subjects}, "$MQTT.sub.>"]}}\n'
        "    }}\n  ]\n}\n"
    )


@pytest.mark.skipif(nats_server_binary() is None, reason="nats-server is not installed")
def test_a_subscription_refused_past_the_window_is_taken_up_once_the_broker_grants_it(
    tmp_path: Path,
) -> None:
    rights = tmp_path / "users.conf"
    rights.write_text(authorization(GRANTED))
    done: list[list[str]] = []
    late: list[str] = []
    with start_cluster(tmp_path / "nats", includes=[rights]) as cluster:
        node = cluster.node(1)
        client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id="slow-retry", protocol=mqtt.MQTTv311
        )
        subscriptions = Subscriptions(
            client,
            [(GRANTED, 1), (LATER, 1)],
            log=logger,
            retry_for_s=0.5,
            slow_retry_s=0.5,
            on_done=done.append,
            on_granted_late=late.append,
        )
        client.on_connect = lambda c, _u, _f, reason, _p: (
            None if reason.is_failure else subscriptions.subscribe(c)
        )
        client.on_subscribe = lambda _c, _u, mid, reasons, _p: subscriptions.on_suback(mid, reasons)
        client.username_pw_set("probe", "probe-pw")
        client.connect_async(node.host, node.mqtt_port)
        client.loop_start()
        try:
            wait_until(lambda: done, 20, "the refusal reported after the retry window")
            assert done == [[LATER]] and subscriptions.refused == [LATER]
            # The broker comes to grant it (here: its permissions, reloaded).
            rights.write_text(authorization(GRANTED, LATER))
            for each in cluster.nodes:
                assert each.process is not None
                each.process.send_signal(signal.SIGHUP)
            wait_until(lambda: late, 20, "the subscription taken up once the broker grants it")
            assert late == [LATER]
            assert subscriptions.refused == [] and subscriptions.refused_now() == []
            assert done == [[LATER]]  # reported once, not again
        finally:
            subscriptions.close()
            client.disconnect()
            client.loop_stop()
