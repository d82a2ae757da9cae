"""A studio on one machine: twenty tables (twenty ``livetable run`` daemons, each with its own
simulated shoe on its own pty, with noise on the line) on ONE mosquitto, ten rounds each.

The dealer, the platform and the supervisor of every table are one bot thread with two MQTT
connections (tests/support/studio.py), so the test process stays small beside the daemons;
the tables hear from them only over MQTT. Cards lost to the noise pause a table; the
supervisor bot resumes it (burning the lost card). One independent subscriber on
``livetable/+/events`` and ``livetable/+/state`` then checks every table's stream: no ``seq``
gap, every result the rules engine's from the cards published.

What the daemons and the broker cost is measured from ``/proc`` (CPU seconds, resident
memory) when all tables are up, after an idle spell and at the end of play, written to
``studio.json`` in the test's directory and printed (``pytest -s`` shows it). The figures are
reported, never asserted: docs/deployment.md ("Measured") quotes one run.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from controller.games.registry import GAME_IDS
from controller.service.journal import Journal
from simulators.shoe.simulator import FaultPlan
from tests.support.broker import BrokerProcess
from tests.support.daemon import check_stream, gaps, unique_by_seq
from tests.support.studio import (
    StreamWatcher,
    StudioBots,
    StudioTable,
    cpu_model,
    make_table,
    percentile,
    process_usage,
)
from tests.support.wait import wait_until

TABLES = 20
ROUNDS = 10
# Noise on every shoe's line, per frame: bytes of garbage before it, its checksum spoilt
# (the card is lost: the table pauses at the next frame's sequence gap, or at the dealer idle
# deadline if it was the round's last card), sent twice (dropped by sequence).
NOISE = FaultPlan(garbage_rate=0.05, corrupt_rate=0.03, duplicate_rate=0.05)
# Fast betting, no dealer pace; a card lost as the round's last one costs DEALER_IDLE_S.
TABLE_CONFIG: dict[str, Any] = {"betting_s": 0.1, "decision_s": 5.0, "dealer_idle_s": 2.0}
START_TIMEOUT_S = 120.0
IDLE_WINDOW_S = 5.0
PLAY_TIMEOUT_S = 240.0
# The test broker as the studio's (systemd/mosquitto/livetable.conf): a subscriber of every
# table is never cut short by mosquitto's default queue of 1000, and small packets are not
# held back by Nagle's algorithm; $SYS every second.
BROKER_CONFIG = (
    "allow_anonymous true\nmax_queued_messages 200000\nset_tcp_nodelay true\nsys_interval 1\n"
)


@pytest.fixture
def studio_broker(tmp_path: Path, start_mosquitto: Callable[..., BrokerProcess]) -> BrokerProcess:
    return start_mosquitto(tmp_path / "broker", extra_config=BROKER_CONFIG)


def _usage(tables: list[StudioTable], broker: BrokerProcess) -> dict[str, Any]:
    return {
        "daemons": {table.table_id: process_usage(table.pid) for table in tables},
        "broker": process_usage(broker.process.pid),
        "test_process_cpu_s": _own_cpu_s(),
        "at": time.monotonic(),
    }


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _sys_counter(watcher: StreamWatcher, name: str) -> int | None:
    payload = watcher.other.get(f"$SYS/broker/{name}")
    return int(payload) if payload is not None else None


def _journal_rows(table: StudioTable) -> Counter[str]:
    """The table's journal rows by kind (every row is one committed, synced write)."""
    with Journal(table.workdir / f"{table.table_id}.journal", read_only=True) as journal:
        return Counter(entry.kind for entry in journal.entries())


def _spread(values: list[float]) -> dict[str, float | None]:
    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 4)

    return {
        "p50": rounded(percentile(values, 0.5)),
        "p95": rounded(percentile(values, 0.95)),
        "max": rounded(max(values, default=None)),
        "n": len(values),
    }


def _figures(
    tables: list[StudioTable],
    marks: dict[str, dict[str, Any]],
    watcher: StreamWatcher,
    bots: StudioBots,
    streams: dict[str, list[dict[str, Any]]],
    started_at: float,
) -> dict[str, Any]:
    ready, idle, end = marks["ready"], marks["idle"], marks["end"]
    idle_s = idle["at"] - ready["at"]
    play_s = end["at"] - idle["at"]
    per_daemon: dict[str, Any] = {}
    journal_rows: Counter[str] = Counter()
    pause_reasons: Counter[str] = Counter()
    for table in tables:
        tid = table.table_id
        rows = _journal_rows(table)
        journal_rows.update(rows)
        pause_reasons.update(
            event["data"]["reason"] for event in streams[tid] if event["type"] == "table_paused"
        )
        settled = sum(1 for event in streams[tid] if event["type"] == "round_settled")
        per_daemon[tid] = {
            "game": table.game,
            "cpu_s_start": round(ready["daemons"][tid].cpu_s, 2),
            "cpu_s_idle": round(idle["daemons"][tid].cpu_s - ready["daemons"][tid].cpu_s, 3),
            "cpu_s_play": round(end["daemons"][tid].cpu_s - idle["daemons"][tid].cpu_s, 2),
            "cpu_s_total": round(end["daemons"][tid].cpu_s, 2),
            "rss_mib": round(end["daemons"][tid].rss_kib / 1024, 1),
            "peak_rss_mib": round(end["daemons"][tid].peak_rss_kib / 1024, 1),
            "events": len(streams[tid]),
            "journal_rows": sum(rows.values()),
            "rounds_settled": settled,
            "cards_lost_pauses": sum(
                1
                for event in streams[tid]
                if event["type"] == "table_paused" and event["data"]["reason"] == "cards_lost"
            ),
            "pauses": sum(1 for event in streams[tid] if event["type"] == "table_paused"),
            "shoe_wire": {
                "frames": table.shoe.wire.frames,
                "garbage": table.shoe.wire.garbage,
                "corrupted": table.shoe.wire.corrupted,
                "duplicated": table.shoe.wire.duplicated,
            },
        }
    daemons = list(per_daemon.values())
    rounds = sum(d["rounds_settled"] for d in daemons)
    play_cpu = sum(d["cpu_s_play"] for d in daemons)
    idle_cpu = sum(d["cpu_s_idle"] for d in daemons)
    broker_play_cpu = end["broker"].cpu_s - idle["broker"].cpu_s
    round_s: list[float] = []
    for stream in streams.values():
        opened: dict[int, float] = {}
        for event in stream:
            if event["type"] == "round_opened":
                opened[event["data"]["round_id"]] = event["at"]
            elif event["type"] == "round_settled" and event["data"]["round_id"] in opened:
                round_s.append(event["at"] - opened[event["data"]["round_id"]])
    card_latency = [
        latency for table in tables for latency in watcher.latencies(table.table_id, "card_dealt")
    ]
    return {
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
        "tables": len(tables),
        "rounds_per_table": ROUNDS,
        "games": sorted({table.game for table in tables}),
        "noise": asdict(NOISE),
        "table_config": TABLE_CONFIG,
        "wall_s": {
            "start_all_daemons": round(ready["at"] - started_at, 2),
            "idle_window": round(idle_s, 2),
            "play": round(play_s, 2),
        },
        "rounds_settled": rounds,
        "rounds_per_s": round(rounds / play_s, 2),
        "round_s": _spread(round_s),
        "card_to_subscriber_s": _spread(card_latency),
        "bot_request_to_answer_s": {
            command: _spread(times) for command, times in sorted(bots.response_s.items())
        },
        "daemon_totals": {
            "cpu_s_start_mean": round(sum(d["cpu_s_start"] for d in daemons) / len(daemons), 2),
            "cpu_s_idle_per_s_per_daemon": round(idle_cpu / idle_s / len(daemons), 5),
            "cpu_s_play": round(play_cpu, 2),
            "cpu_s_per_round": round(play_cpu / rounds, 4),
            "rss_mib_mean": round(sum(d["rss_mib"] for d in daemons) / len(daemons), 1),
            "rss_mib_max": max(d["rss_mib"] for d in daemons),
            "peak_rss_mib_max": max(d["peak_rss_mib"] for d in daemons),
            "cards_lost_pauses": sum(d["cards_lost_pauses"] for d in daemons),
            "pauses": sum(d["pauses"] for d in daemons),
            "pause_reasons": dict(pause_reasons.most_common()),
            "events_published": sum(d["events"] for d in daemons),
            "journal_rows": sum(journal_rows.values()),
            "journal_rows_by_kind": dict(journal_rows.most_common()),
        },
        "broker": {
            "cpu_s_start": round(ready["broker"].cpu_s, 3),
            "cpu_s_idle": round(idle["broker"].cpu_s - ready["broker"].cpu_s, 3),
            "cpu_s_play": round(broker_play_cpu, 3),
            "cpu_s_total": round(end["broker"].cpu_s, 3),
            "rss_mib": round(end["broker"].rss_kib / 1024, 1),
            "peak_rss_mib": round(end["broker"].peak_rss_kib / 1024, 1),
            # mosquitto's $SYS counters (every MQTT packet, acknowledgements included), as of
            # its last report (every second).
            "messages_received": _sys_counter(watcher, "messages/received"),
            "messages_sent": _sys_counter(watcher, "messages/sent"),
            "publish_sent": _sys_counter(watcher, "publish/messages/sent"),
            "clients": _sys_counter(watcher, "clients/connected"),
        },
        "subscriber_messages": watcher.messages,
        "test_process_cpu_s_play": round(end["test_process_cpu_s"] - idle["test_process_cpu_s"], 2),
        "per_daemon": per_daemon,
    }


@pytest.mark.slow
def test_twenty_tables_on_one_broker_play_with_no_gap_and_rules_results(
    tmp_path: Path, studio_broker: BrokerProcess
) -> None:
    host, port = studio_broker.host, studio_broker.port
    watcher = StreamWatcher(host, port, extra_topics=("$SYS/broker/#",))
    bots = StudioBots(host, port)
    tables: list[StudioTable] = []
    try:
        assert watcher.connected.wait(10) and bots.wait_connected(), "the broker refused us"
        for number in range(1, TABLES + 1):
            table_id = f"t{number}"
            tables.append(
                make_table(
                    tmp_path / table_id,
                    table_id,
                    GAME_IDS[(number - 1) % len(GAME_IDS)],
                    port,
                    faults=NOISE,
                    seed=number,
                    **TABLE_CONFIG,
                )
            )
        started_at = time.monotonic()
        for table in tables:
            table.daemon.start()
        wait_until(
            lambda: (
                all(
                    watcher.availability.get(t.table_id) == "online"
                    and watcher.state_of(t.table_id) is not None
                    for t in tables
                )
                or not all(t.daemon.alive() for t in tables)
            ),
            START_TIMEOUT_S,
            f"{TABLES} tables online",
        )
        dead = [t.table_id for t in tables if not t.daemon.alive()]
        assert not dead, f"daemons died at start: {dead}"
        marks = {"ready": _usage(tables, studio_broker)}
        # An idle studio's cost: every table up, no round played. A measuring window, not a
        # wait for anything.
        time.sleep(IDLE_WINDOW_S)
        marks["idle"] = _usage(tables, studio_broker)

        for table in tables:
            bots.seat(table.table_id, table.shoe, ROUNDS)
        bots.start()
        wait_until(
            lambda: bots.done or bool(bots.errors) or not all(t.daemon.alive() for t in tables),
            PLAY_TIMEOUT_S,
            f"{ROUNDS} rounds on each of {TABLES} tables "
            f"(settled: {[bots.rounds_settled(t.table_id) for t in tables]})",
        )
        bots.stop()
        marks["end"] = _usage(tables, studio_broker)
        dead = [t.table_id for t in tables if not t.daemon.alive()]
        assert not dead, f"daemons died: {dead}; " + tables[0].daemon.log()[-2000:]
        assert not bots.errors, bots.errors[:10]

        # Every table's events up to its last state have reached the subscriber.
        def caught_up() -> bool:
            for table in tables:
                state = watcher.state_of(table.table_id)
                if state is None or not watcher.caught_up(table.table_id, state["seq"]):
                    return False
            return True

        wait_until(caught_up, 30, "every table's events at the subscriber")
        streams = {t.table_id: unique_by_seq(watcher.events_of(t.table_id)) for t in tables}
        for table in tables:
            events = streams[table.table_id]
            assert gaps([event["seq"] for event in events]) == [], table.table_id
            assert check_stream(events, table.game) >= ROUNDS, table.table_id
        # The noise did its work: cards were lost and the tables paused and resumed.
        lost = sum(
            1
            for events in streams.values()
            for event in events
            if event["type"] == "table_paused" and event["data"]["reason"] == "cards_lost"
        )
        assert lost > 0, "no card was lost to the noise: the test proved nothing about pauses"

        figures = _figures(tables, marks, watcher, bots, streams, started_at)
        (tmp_path / "studio.json").write_text(json.dumps(figures, indent=2) + "\n")
        summary = {key: value for key, value in figures.items() if key != "per_daemon"}
        print("\nstudio figures (" + str(tmp_path / "studio.json") + "):")
        print(json.dumps(summary, indent=2))
    finally:
        bots.close()
        for table in tables:
            table.close()
        watcher.close()
