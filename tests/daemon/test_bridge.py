"""Layout B of docs/deployment.md: a mosquitto on every table PC, bridged to the studio's.

Two tables, each with its own mosquitto whose bridge to a central mosquitto is
systemd/mosquitto/bridge.conf as shipped (only its address, TLS and password replaced, and t1
renamed for the second table); persistence on every broker; the central one with the
production ACL plus the bridges' accounts as bridge.conf describes them. The daemons and
their bots (dealer, platform, supervisor) are on the table PCs' brokers. A subscriber with a
persistent session on the CENTRAL broker watches both tables.

The central broker is stopped for 10 s in mid-round; the tables keep playing through their
own brokers; it comes back. The central subscriber must end with every event of both tables
exactly once by ``seq`` (repeats dropped), each round's result the rules engine's, and the
tables' dealer displays and retained states as the tables last published them.

The figures (how much each table published during the outage, how long the central
subscriber took to catch up after the restart, the repeats, the brokers' CPU and memory) go
to ``bridge.json`` in the test's directory and are printed; they are reported, never asserted.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.broker import BrokerProcess, start_broker, write_password_file
from tests.support.daemon import REPO_ROOT, check_stream, gaps, unique_by_seq
from tests.support.studio import (
    StreamWatcher,
    StudioBots,
    StudioTable,
    cpu_model,
    make_table,
    process_usage,
)
from tests.support.wait import wait_until

BRIDGE_CONF = REPO_ROOT / "systemd" / "mosquitto" / "bridge.conf"
PRODUCTION_ACL = REPO_ROOT / "systemd" / "mosquitto" / "livetable.acl"
TABLES = {"t1": "baccarat", "t2": "blackjack-classic"}
ROUNDS = 8
OUTAGE_S = 10.0
TABLE_CONFIG: dict[str, Any] = {"betting_s": 0.2, "decision_s": 5.0, "dealer_idle_s": 30.0}
# The studio broker's queue (systemd/mosquitto/livetable.conf), on every broker here.
QUEUE_CONFIG = "max_queued_messages 200000\nset_tcp_nodelay true\n"
VIEWER_PASSWORD = f"viewer-secret-{os.getpid()}"


def bridge_password(table_id: str) -> str:
    return f"bridge-{table_id}-secret-{os.getpid()}"


def bridge_config(table_id: str, central_port: int) -> str:
    """bridge.conf as shipped, for the PC of ``table_id``, bridged to ``central_port`` on
    loopback: the studio's address, its CA (no TLS here) and the password replaced; the
    example's table t1 (its topics, the bridge's client id, account and notification topic)
    renamed to ``table_id``."""
    lines = []
    for line in BRIDGE_CONF.read_text().splitlines():
        key = line.split(" ", 1)[0]
        if key == "address":
            line = f"address 127.0.0.1:{central_port}"
        elif key in ("bridge_cafile", "bridge_insecure"):
            continue
        elif key == "remote_password":
            line = f"remote_password {bridge_password(table_id)}"
        elif key == "topic":
            line = line.replace(" t1/", f" {table_id}/")
        lines.append(line.replace("pc-t1", f"pc-{table_id}"))
    return "\n".join(lines) + "\n"


def central_acl(path: Path) -> Path:
    """The production ACL plus each bridge's account, with the lines bridge.conf gives it."""
    blocks = [PRODUCTION_ACL.read_text()]
    for table_id in TABLES:
        blocks.append(
            f"\nuser bridge-pc-{table_id}\n"
            f"topic read livetable/{table_id}/request/#\n"
            f"topic write livetable/{table_id}/#\n"
            f"topic write livetable-bridges/pc-{table_id}\n"
        )
    path.write_text("".join(blocks))
    return path


@pytest.fixture
def central_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    workdir = tmp_path / "central"
    workdir.mkdir()
    users = {"viewer": ("viewer", VIEWER_PASSWORD)}
    users.update({f"bridge-{t}": (f"bridge-pc-{t}", bridge_password(t)) for t in TABLES})
    write_password_file(workdir / "passwords", users)
    broker = start_broker(
        workdir,
        persistence=True,
        extra_config=(
            "allow_anonymous false\n"
            f"password_file {workdir / 'passwords'}\n"
            f"acl_file {central_acl(workdir / 'livetable.acl')}\n" + QUEUE_CONFIG
        ),
        users=users,
    )
    try:
        yield broker
    finally:
        broker.stop()


@pytest.mark.slow
def test_a_central_broker_outage_behind_bridges_loses_no_event(
    tmp_path: Path, central_broker: BrokerProcess
) -> None:
    central = central_broker
    watcher = StreamWatcher(
        central.host,
        central.port,
        client_id="central-subscriber",
        username="viewer",
        password=VIEWER_PASSWORD,
        extra_topics=("livetable/+/dealer",),
    )
    local_brokers: dict[str, BrokerProcess] = {}
    tables: dict[str, StudioTable] = {}
    bots: dict[str, StudioBots] = {}
    try:
        assert watcher.connected.wait(10), "the central broker refused the subscriber"
        for table_id, game in TABLES.items():
            local_brokers[table_id] = local = start_broker(
                tmp_path / f"pc-{table_id}",
                persistence=True,
                extra_config="allow_anonymous true\n"
                + QUEUE_CONFIG
                + bridge_config(table_id, central.port),
            )
            tables[table_id] = make_table(
                tmp_path / table_id, table_id, game, local.port, **TABLE_CONFIG
            )
            bots[table_id] = StudioBots(local.host, local.port)
            bots[table_id].seat(table_id, tables[table_id].shoe, ROUNDS)
            assert bots[table_id].wait_connected(), "a table PC's broker refused the bots"
        wait_until(
            lambda: all(f"as bridge-pc-{t} " in central.log() for t in TABLES),
            30,
            "both bridges connected to the central broker",
        )
        for table in tables.values():
            table.daemon.start()
        wait_until(
            lambda: all(watcher.availability.get(t) == "online" for t in TABLES),
            30,
            "both tables online at the central broker",
        )
        for table_bots in bots.values():
            table_bots.start()

        def local_state(table_id: str) -> dict[str, Any]:
            return bots[table_id].platform.state(table_id) or {"seq": 0, "phase": None}

        wait_until(
            lambda: all(bots[t].rounds_settled(t) >= 2 for t in TABLES),
            90,
            "two rounds on each table",
        )
        # Mid-round on both: a card or a decision is awaited.
        wait_until(
            lambda: all(local_state(t)["phase"] in ("DEALING", "DECIDING") for t in TABLES),
            30,
            "both tables in a round",
        )
        before = {t: local_state(t)["seq"] for t in TABLES}
        settled_before = {t: bots[t].rounds_settled(t) for t in TABLES}
        central.stop()
        stopped_at = time.monotonic()
        time.sleep(OUTAGE_S)  # the outage itself: its length is the scenario, not a wait
        during = {t: local_state(t)["seq"] for t in TABLES}
        settled_during = {t: bots[t].rounds_settled(t) - settled_before[t] for t in TABLES}
        central.restart()
        restarted_at = time.monotonic()
        # The tables played on through their own brokers while the central one was away.
        assert all(during[t] > before[t] for t in TABLES), (before, during)
        wait_until(
            lambda: all(watcher.caught_up(t, during[t]) for t in TABLES),
            60,
            "the central subscriber to receive what was published during the outage",
        )
        caught_up_s = time.monotonic() - restarted_at

        wait_until(
            lambda: (
                all(bots[t].done for t in TABLES)
                or any(bots[t].errors for t in TABLES)
                or not all(table.daemon.alive() for table in tables.values())
            ),
            120,
            f"{ROUNDS} rounds on each table",
        )
        for table_bots in bots.values():
            table_bots.stop()
        for table_id, table in tables.items():
            assert table.daemon.alive(), table.daemon.log()[-2000:]
            assert not bots[table_id].errors, bots[table_id].errors[:5]

        def all_arrived() -> bool:
            for t in TABLES:
                last = local_state(t)
                central_state = watcher.state_of(t)
                if central_state is None or central_state["journal"] != last["journal"]:
                    return False
                if not watcher.caught_up(t, last["seq"]):
                    return False
            return True

        wait_until(all_arrived, 30, "every event and the last state at the central subscriber")
        figures: dict[str, Any] = {
            "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
            "outage_s": round(restarted_at - stopped_at, 2),
            "caught_up_after_restart_s": round(caught_up_s, 2),
            "tables": {},
            "central_broker": process_usage(central.process.pid).to_dict(),
            "table_pc_brokers": {
                t: process_usage(broker.process.pid).to_dict()
                for t, broker in local_brokers.items()
            },
            "daemons": {t: process_usage(table.pid).to_dict() for t, table in tables.items()},
        }
        for table_id, table in tables.items():
            received = watcher.events_of(table_id)
            events = unique_by_seq(received)
            seqs = [event["seq"] for event in events]
            assert gaps(seqs) == [], table_id
            assert seqs[-1] == local_state(table_id)["seq"], table_id
            assert check_stream(events, table.game) >= ROUNDS, table_id
            # The dealer's display reaches the studio too.
            dealer = watcher.other.get(f"livetable/{table_id}/dealer")
            assert dealer is not None, f"{table_id}: the dealer topic never reached the studio"
            figures["tables"][table_id] = {
                "game": table.game,
                "events": len(events),
                "repeats_received": len(received) - len(events),
                "published_during_outage": during[table_id] - before[table_id],
                "rounds_settled_during_outage": settled_during[table_id],
            }
        (tmp_path / "bridge.json").write_text(json.dumps(figures, indent=2) + "\n")
        print("\nbridge figures (" + str(tmp_path / "bridge.json") + "):")
        print(json.dumps(figures, indent=2))
    finally:
        for table_bots in bots.values():
            table_bots.close()
        for table in tables.values():
            table.close()
        watcher.close()
        for broker in local_brokers.values():
            broker.stop()
