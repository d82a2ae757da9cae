"""``livetable bench studio``, briefly: three tables over a real three-node NATS cluster
and over one real mosquitto. Checks the report's shape and that the studio carried messages
and cards reached a subscriber; no figure is asserted (speed is the bench's to report)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulators.nats_cluster import nats_server_binary

REPO_ROOT = Path(__file__).resolve().parents[2]
# Only keeps a hanging bench from hanging the suite.
HANG_S = 600.0


def bench(tmp_path: Path, *args: str) -> dict:
    done = subprocess.run(
        [
            *[sys.executable, "-m", "controller.tools.cli", "bench", "studio", "--tables", "3"],
            *["--duration-s", "20", "--json", "--dir", str(tmp_path / "bench"), *args],
        ],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def check_report(report: dict, broker: str, nodes: int) -> None:
    assert (report["broker"], report["nodes"], report["tables"]) == (broker, nodes, 3)
    assert report["hosts_per_client"] == nodes, report
    assert report["messages"] > 0 and report["messages_per_s"] > 0, report
    assert report["cards_timed"] > 0, report
    latency = report["card_to_subscriber_ms"]
    assert 0 <= latency["p50"] <= latency["p99"] <= latency["max"], latency
    assert len(report["broker_rss_mb"]) == nodes, report["broker_rss_mb"]
    for memory in report["broker_rss_mb"].values():
        assert memory["first"] > 0 and 0 < memory["last"] <= memory["peak"], memory
    assert report["daemons_alive"] == 3, report
    assert report["machine"]["cores"] and len(report["machine"]["load_average"]) == 3


@pytest.mark.skipif(nats_server_binary() is None, reason="nats-server is not installed")
def test_the_studio_bench_over_a_nats_cluster_with_a_node_killed(tmp_path: Path) -> None:
    report = bench(tmp_path, "--kill-node")
    check_report(report, "nats", 3)
    kill = report["kill"]
    # Table studio01 is on node 1: it is back, on another node or on node 1 once it is up.
    assert kill["node"] == 1 and kill["tables_on_node"] == 1, kill
    assert kill["tables_back"] == 1, kill
    assert kill["back_after_kill_s"]["max"] >= kill["back_after_restart_s"]["max"], kill
    # ... and plays again: a state counts a card drawn after it was back.
    assert kill["tables_playing_again"] == 1, kill
    assert kill["playing_again_after_kill_s"]["min"] >= kill["back_after_kill_s"]["min"], kill
    # Each daemon knows the three nodes, its own first (table i on node i mod 3).
    configs = {path.stem: path.read_text() for path in (tmp_path / "bench").rglob("studio0*.toml")}
    assert sorted(configs) == ["studio01", "studio02", "studio03"], sorted(configs)
    firsts = set()
    for text in configs.values():
        hosts = re.search(r"^hosts = \[(.*)\]$", text, re.MULTILINE)
        assert hosts is not None and hosts.group(1).count("127.0.0.1:") == 3, text
        firsts.add(hosts.group(1).split(",")[0])
    assert len(firsts) == 3, firsts


def test_the_studio_bench_over_one_mosquitto(tmp_path: Path) -> None:
    report = bench(tmp_path, "--mosquitto")
    check_report(report, "mosquitto", 1)
    assert report["kill"] is None
