"""An idle table says its retained state again now and then: a broker cluster whose nodes
died and came back can hand a newcomer an older retained state (seen on NATS), and the
table, connected to a node that stayed up, has no reconnect to say it again on. Against a
real mosquitto, with the table's interval shortened."""

from __future__ import annotations

import threading
from pathlib import Path

import paho.mqtt.client as mqtt

import controller.service.mqtt_link as mqtt_link_module
from controller.service.config import LivetableConfig, MqttConfig
from controller.service.daemon import TableDaemon
from controller.table.config import TableConfig
from tests.support.wait import wait_until


def test_an_idle_table_says_its_retained_state_again(
    tmp_path: Path, mqtt_broker: tuple[str, int], monkeypatch
) -> None:
    monkeypatch.setattr(mqtt_link_module, "RESTATE_S", 0.5)
    host, port = mqtt_broker
    config = LivetableConfig(
        table=TableConfig(table_id="t1", game="baccarat", journal_path=tmp_path / "t1.journal"),
        mqtt=MqttConfig(host=host, port=port, client_id="livetable-t1"),
    )
    states: list[bytes] = []
    watcher = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="restate-watch")
    watcher.on_connect = lambda c, _u, _f, _r, _p: c.subscribe("livetable/t1/state", qos=1)
    watcher.on_message = lambda _c, _u, message: states.append(message.payload)
    watcher.connect(host, port)
    watcher.loop_start()
    stop = threading.Event()

    def run_table() -> None:
        # On one thread, as `livetable run` does: the journal is that thread's.
        TableDaemon(config, shoe=False).run(stop)

    runner = threading.Thread(target=run_table, name="table-under-test")
    runner.start()
    try:
        wait_until(lambda: states, 20, "the table's first state")
        first = states[0]
        # Nothing happens at the table: the same state comes again, and again.
        wait_until(lambda: len(states) >= 3, 20, "the idle table's state said again")
        assert all(state == first for state in states), states
    finally:
        stop.set()
        runner.join(20)
        watcher.loop_stop()
        watcher.disconnect()
    assert not runner.is_alive()
