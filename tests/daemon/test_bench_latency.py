"""``livetable bench latency`` runs end to end (mosquitto, a shoe on a pty, the daemon, the
floor) and reports every figure it promises. Its figures are not checked: speed is the
bench's to report, not a test's to assert."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.daemon import REPO_ROOT

BENCH = [sys.executable, "-m", "controller.tools.cli", "bench", "latency", "--cards", "30"]


def run_bench(*args: str) -> str:
    done = subprocess.run(
        [*BENCH, "--idle-s", "0.5", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_json_has_every_figure() -> None:
    results = json.loads(run_bench("--json"))
    assert results["cards"] == 30
    for part in ("daemon", "floor"):
        row = results[part]
        assert row["cards"] == 30
        for figure in ("p50_ms", "p99_ms", "max_ms", "mean_ms"):
            assert isinstance(row[figure], float) and row[figure] > 0, (part, figure, row)
        assert row["p50_ms"] <= row["p99_ms"] <= row["max_ms"]
    requests = results["requests"]
    assert requests["requests"] >= 1
    for figure in ("p50_ms", "p99_ms", "max_ms", "mean_ms"):
        assert isinstance(requests[figure], float) and requests[figure] > 0, (figure, requests)
    daemon = results["daemon"]
    assert results["p99_ratio"] == round(daemon["p99_ms"] / results["floor"]["p99_ms"], 2)
    assert daemon["rounds"] >= 1
    assert 0 < daemon["rss_mb"] <= daemon["peak_rss_mb"]
    assert daemon["idle_cpu_percent"] >= 0 and daemon["idle_s"] == 0.5
    assert results["targets"] == {"p99_ratio": 2.0, "rss_mb": 80.0, "idle_cpu_percent": 1.0}
    assert results["machine"]["cores"] >= 1 and results["machine"]["cpu"]
    # Both pipelines up at once, taking turns (see test_the_daemon_and_the_floor_take_turns).
    interleaved = results["interleaved"]
    assert interleaved["block_cards"] >= 1 and interleaved["settle_s"] > 0


def test_text_report_names_every_figure() -> None:
    lines = run_bench().splitlines()
    assert lines[0].startswith("card on the pty -> state at a subscriber, 30 cards each")
    assert "daemon and floor taking turns of " in lines[0], lines[0]
    for part in ("daemon", "floor"):
        row = next(line for line in lines if line.strip().startswith(f"{part}:"))
        for figure in ("p50", "p99", "max"):
            assert f" {figure} " in row, row
    assert any(line.startswith("request -> answer: ") for line in lines), lines
    assert any(line.startswith("p99 / p99 floor: ") for line in lines), lines
    assert any(line.startswith("daemon resident memory: ") for line in lines), lines
    assert any(line.startswith("daemon idle CPU: ") for line in lines), lines


def test_the_daemon_and_the_floor_take_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The floor's cards are timed between the daemon's, in blocks, never inside a card."""
    from controller.tools import bench_latency as latency_bench

    order: list[str] = []

    def step(_table: object, _shoe: object, _state: object) -> float:
        order.append("daemon")
        return 0.001

    monkeypatch.setattr(latency_bench, "step", step)
    table = latency_bench.Table(link=None)  # type: ignore[arg-type]
    table.state = {"devices": {"shoe_online": True}, "phase": "DEALING"}
    turns: list[int] = []

    def floor_block(daemon_cards: int) -> None:
        turns.append(daemon_cards)
        order.append("floor")

    latencies, _rounds = latency_bench.play(table, None, 25, between=floor_block, every=10)
    assert len(latencies) == 25
    assert turns == [10, 20, 25]
    assert order == ["daemon"] * 10 + ["floor"] + ["daemon"] * 10 + ["floor"] + ["daemon"] * 5 + [
        "floor"
    ]
