"""``/metrics`` of ``livetable run`` ([metrics] in the table's file): the real daemon as a
subprocess, its shoe a simulator on a real pty, a real mosquitto, scraped over HTTP. What it
counts is held to what an independent subscriber saw on ``.../events``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from controller.kernel.errors import ConfigurationError
from controller.service.config import MetricsConfig, load_config
from controller.service.metrics import METRIC_NAMES, TableMetrics
from controller.table.state import PauseReason
from tests.support.daemon import REPO_ROOT, SimulatedTable, unique_by_seq, write_config
from tests.support.wait import wait_until

ROUNDS = 10
PLAY_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def metrics_section(port: int) -> str:
    return f'[metrics]\nlisten = "127.0.0.1:{port}"\n'


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``: (name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def total(samples: dict[Any, float], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(
        value
        for (sample, sample_labels), value in samples.items()
        if sample == name and set(labels.items()) <= set(sample_labels)
    )


@pytest.fixture
def table(tmp_path: Path, mqtt_broker: tuple[str, int]) -> Iterator[tuple[SimulatedTable, int]]:
    port = free_port()
    made = SimulatedTable(
        tmp_path / "t1", *mqtt_broker, "baccarat", ROUNDS, extra_mqtt=metrics_section(port)
    )
    try:
        yield made, port
    finally:
        made.close()


def test_a_scrape_counts_the_rounds_pauses_and_cards_the_table_published(
    table: tuple[SimulatedTable, int],
) -> None:
    simulated, port = table
    simulated.daemon.start()
    wait_until(lambda: simulated.viewer.state is not None, 20, "the table's first state")
    before = scrape(port)
    # Counters start at zero with the process, each label the table can give already there.
    assert total(before, "livetable_rounds_total", outcome="settled", game="baccarat") == 0
    for reason in PauseReason:
        assert ("livetable_pauses_total", (("reason", reason.value), ("table", "t1"))) in before
    assert total(before, "livetable_cards_total") == 0
    simulated.bots.start()
    wait_until(
        lambda: simulated.bots.done or not simulated.daemon.alive(), PLAY_TIMEOUT_S, "10 rounds"
    )
    assert not simulated.bots.errors, simulated.bots.errors[:5]
    # A card drawn between rounds pauses the table (the supervisor bot burns it); a
    # supervisor's pause holds it until the supervisor lifts it.
    simulated.shoe.draw()
    wait_until(lambda: _paused_by(simulated, "card_out_of_turn") == 1, 20, "the card's pause")
    wait_until(
        lambda: simulated.platform.state is not None and simulated.platform.state["pause"] is None,
        20,
        "the burn",
    )
    assert simulated.supervisor.request("pause", reason="a spill")["ok"]
    held_from = time.monotonic()
    wait_until(lambda: total(scrape(port), "livetable_paused") == 1, 10, "paused 1 in a scrape")
    time.sleep(max(0.0, 0.5 - (time.monotonic() - held_from)))
    assert simulated.supervisor.request("resume")["ok"]
    wait_until(lambda: total(scrape(port), "livetable_paused") == 0, 10, "paused 0 again")

    events = unique_by_seq(simulated.viewer.events)
    cards = [event["data"]["source"] for event in events if event["type"] == "card_dealt"]
    # Every card's event acknowledged by the broker is one delivery measured.
    wait_until(
        lambda: total(scrape(port), "livetable_card_delivery_seconds_count") == len(cards),
        10,
        "every card's delivery measured",
    )
    # Each card timed as its own event (the daemon says so once if the seqs it expected
    # were not the ones published).
    assert "delivery times not measured" not in simulated.daemon.log()
    samples = scrape(port)
    settled = [event for event in events if event["type"] == "round_settled"]
    assert len(settled) == ROUNDS
    assert total(samples, "livetable_rounds_total") == ROUNDS
    assert total(samples, "livetable_rounds_total", outcome="settled", game="baccarat") == ROUNDS
    paused = Counter(event["data"]["reason"] for event in events if event["type"] == "table_paused")
    assert paused == {"card_out_of_turn": 1, "supervisor": 1}, paused
    for reason in PauseReason:
        counted = total(samples, "livetable_pauses_total", reason=reason.value)
        assert counted == paused.get(reason.value, 0), reason
    assert total(samples, "livetable_pause_seconds_total", reason="supervisor") >= 0.5
    assert total(samples, "livetable_pause_seconds_total", reason="card_out_of_turn") > 0
    for source, count in Counter(cards).items():
        assert total(samples, "livetable_cards_total", source=source) == count, source
    assert total(samples, "livetable_cards_total") == len(cards) > 4 * ROUNDS
    assert total(samples, "livetable_shoe_online") == 1
    assert total(samples, "livetable_mqtt_connected") == 1
    disk = os.statvfs(simulated.workdir)
    size = total(samples, "livetable_journal_size_bytes")
    assert size == disk.f_blocks * disk.f_frsize
    assert 0 < total(samples, "livetable_journal_free_bytes") <= size


def test_a_restarted_table_counts_from_zero_and_shows_the_pause_it_replayed(
    table: tuple[SimulatedTable, int],
) -> None:
    simulated, port = table
    simulated.daemon.start()
    wait_until(lambda: simulated.viewer.state is not None, 20, "the table's first state")
    assert simulated.supervisor.request("pause", reason="a spill")["ok"]
    wait_until(lambda: total(scrape(port), "livetable_pauses_total") == 1, 10, "the pause")
    stopping = time.monotonic()
    assert simulated.daemon.kill(signal.SIGTERM) == 0
    # Serving metrics keeps the daemon's promise: stopped within 2 s of SIGTERM.
    assert time.monotonic() - stopping < 2.0
    wait_until(lambda: simulated.viewer.availability == "offline", 10, "the table offline")
    simulated.daemon.start()
    wait_until(lambda: simulated.viewer.availability == "online", 20, "the table back")
    wait_until(lambda: _answers(port), 10, "the metrics back")
    wait_until(lambda: total(scrape(port), "livetable_mqtt_connected") == 1, 10, "connected")
    samples = scrape(port)
    # Paused still (the journal says so), but no pause was taken by this process.
    assert total(samples, "livetable_paused") == 1
    assert total(samples, "livetable_pauses_total") == 0
    time.sleep(0.2)
    assert simulated.supervisor.request("resume")["ok"]
    wait_until(lambda: total(scrape(port), "livetable_paused") == 0, 10, "paused 0")
    assert total(scrape(port), "livetable_pause_seconds_total", reason="supervisor") >= 0.2


def _answers(port: int) -> bool:
    try:
        scrape(port)
    except OSError:
        return False
    return True


def _paused_by(simulated: SimulatedTable, reason: str) -> int:
    return sum(
        1
        for event in unique_by_seq(simulated.viewer.events)
        if event["type"] == "table_paused" and event["data"]["reason"] == reason
    )


def test_the_metrics_exposed_are_the_ones_named(tmp_path: Path) -> None:
    """Each table its own registry: two in one process, every metric of METRIC_NAMES."""
    first = TableMetrics("t1", "baccarat", tmp_path / "t1.journal", lambda: True)
    second = TableMetrics("t2", "blackjack-classic", tmp_path / "t2.journal", lambda: False)
    for metrics, table_id in ((first, "t1"), (second, "t2")):
        names = set()
        for family in metrics.registry.collect():
            for sample in family.samples:
                assert sample.labels["table"] == table_id, sample
            names.add(family.name + ("_total" if family.type == "counter" else ""))
        assert names == set(METRIC_NAMES)


@pytest.mark.parametrize(
    "listen",
    ["127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", ":9464", "::1:9464", "127.0.0.1:x", 9464],
)
def test_a_malformed_listen_address_is_one_line_naming_the_key(
    tmp_path: Path, listen: object
) -> None:
    value = f'"{listen}"' if isinstance(listen, str) else str(listen)
    path = write_config(
        tmp_path / "t1.toml", shoe_port="/dev/null", broker_port=1883,
        extra_mqtt=f"[metrics]\nlisten = {value}\n",
    )  # fmt: skip
    with pytest.raises(ConfigurationError) as raised:
        load_config(path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: [metrics] listen must be host:port"), message


def test_an_unknown_key_or_no_listen_is_refused(tmp_path: Path) -> None:
    for extra, words in (
        ('[metrics]\nlisten = "127.0.0.1:9464"\nport = 1\n', "unknown keys in [metrics]: port"),
        ("[metrics]\n", "[metrics] needs listen"),
    ):
        path = write_config(
            tmp_path / "t1.toml", shoe_port="/dev/null", broker_port=1883, extra_mqtt=extra
        )
        with pytest.raises(ConfigurationError, match=words.replace("[", r"\[")):
            load_config(path)
    path = write_config(
        tmp_path / "t1.toml",
        shoe_port="/dev/null",
        broker_port=1883,
        extra_mqtt='[metrics]\nlisten = "[::1]:9464"\n',
    )
    metrics = load_config(path).metrics
    assert metrics is not None and (metrics.host, metrics.port) == ("::1", 9464)
    assert load_config(write_config(path, shoe_port="/dev/null", broker_port=1)).metrics is None


def test_a_port_taken_stops_the_start_with_one_line(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = write_config(
            tmp_path / "t1.toml",
            shoe_port=tmp_path / "no-shoe",
            broker_port=mqtt_broker[1],
            extra_mqtt=metrics_section(port),
        )
        done = subprocess.run(
            [sys.executable, "-m", "controller.tools.cli", "run", "--config", str(path)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert lines[-1].endswith(
        f"[metrics] listen 127.0.0.1:{port}: cannot listen there: Address already in use"
    ), done.stderr


SHIPPED_PROMETHEUS = REPO_ROOT / "systemd" / "prometheus"


def prometheus_config(path: Path, target: str) -> Path:
    """The shipped prometheus-livetable.yml, scraping ``target`` (table t1) every second,
    with the shipped alert rules."""
    config = yaml.safe_load((SHIPPED_PROMETHEUS / "prometheus-livetable.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(SHIPPED_PROMETHEUS / name) for name in config["rule_files"]]
    (job,) = config["scrape_configs"]
    job["static_configs"] = [{"targets": [target], "labels": {"table": "t1"}}]
    path.write_text(yaml.safe_dump(config))
    return path


def query(web: int, promql: str) -> list[dict[str, Any]]:
    """The result of an instant query on Prometheus' HTTP API ([] while it is not up)."""
    url = f"http://127.0.0.1:{web}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            body = json.load(answer)
    except OSError:
        return []
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def test_debians_prometheus_scrapes_a_running_table(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    binary = shutil.which("prometheus")
    assert binary is not None, "prometheus is missing: Debian's prometheus package (scripts/test)"
    port, web = free_port(), free_port()
    simulated = SimulatedTable(
        tmp_path / "t1", *mqtt_broker, "baccarat", 2, extra_mqtt=metrics_section(port)
    )
    log = (tmp_path / "prometheus.log").open("wb")
    server = subprocess.Popen(
        [
            binary,
            f"--config.file={prometheus_config(tmp_path / 'prometheus.yml', f'127.0.0.1:{port}')}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{web}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        simulated.daemon.start()
        simulated.bots.start()
        wait_until(
            lambda: simulated.bots.done or not simulated.daemon.alive(), PLAY_TIMEOUT_S, "2 rounds"
        )
        assert simulated.bots.rounds_settled == 2, simulated.bots.errors[:5]
        wait_until(
            lambda: [
                float(row["value"][1])
                for row in query(web, 'sum(livetable_rounds_total{outcome="settled"})')
            ]
            == [2.0],
            30,
            "Prometheus to have scraped the 2 rounds",
        )
        (rounds,) = query(web, 'livetable_rounds_total{outcome="settled"}')
        assert rounds["metric"] == {
            "__name__": "livetable_rounds_total",
            "game": "baccarat",
            "instance": f"127.0.0.1:{port}",
            "job": "livetable",
            "outcome": "settled",
            "table": "t1",
        }
        (up,) = query(web, 'up{job="livetable"}')
        assert up["metric"]["table"] == "t1" and up["value"][1] == "1"
        # The shipped rules were loaded and evaluate; none fires at a healthy table (the
        # disk's depends on the machine's, not the table's).
        with urllib.request.urlopen(f"http://127.0.0.1:{web}/api/v1/rules", timeout=5) as answer:
            groups = json.load(answer)["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        assert len(rules) == 5 and all(rule["health"] == "ok" for rule in rules), rules
        assert query(web, 'ALERTS{alertname!="LivetableJournalDiskLow"}') == []
    finally:
        simulated.close()
        server.terminate()
        server.wait(10)
        log.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_serving_and_closing_in_one_process(tmp_path: Path, host: str) -> None:
    """Served on an IPv4 or IPv6 address; closed, it leaves no thread and frees its port."""
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    config = MetricsConfig(host, port)
    metrics = TableMetrics("t1", "baccarat", tmp_path / "t1.journal", lambda: True)
    metrics.serve(config)
    try:
        url = f"http://{config.listen}/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            assert b'livetable_mqtt_connected{table="t1"} 1.0' in answer.read()
    finally:
        metrics.close()
    again = TableMetrics("t1", "baccarat", tmp_path / "t1.journal", lambda: True)
    again.serve(config)  # the port is free again
    again.close()
