"""``livetable bench studio``: a studio of tables over a NATS cluster, or over one mosquitto.

One run, all on this machine, all real: a three-node NATS cluster on free loopback ports
(:mod:`simulators.nats_cluster`, MQTT streams with three replicas) or one mosquitto; N
``livetable run`` daemons speaking MQTT 3.1.1 (nats-server speaks nothing else; mosquitto is
run the same way for a fair comparison), each with a simulated shoe on its own pty and the
demo's people (:class:`controller.tools.demo_table.DemoTable`: a dealer drawing what the table
asks for, a platform opening rounds, a supervisor), table *i* and its people on node *i*
mod 3. The shoe misreads nothing and the dealer makes no mistakes: the load is the game's own
traffic.
The tables start five at a time, the next five once these show a state (see
:data:`START_BATCH`: all at once, a NATS cluster on this machine refused some of their
subscriptions).

Measured after every table has been seen online:

- **messages carried**: every message on ``livetable/#`` that one subscriber on node 1 gets
  (states, events, the dealer's line, availability, the people's requests and the tables'
  answers), per second;
- **card → subscriber**: from the moment the simulated shoe has written a card on its serial
  line to the arrival of the table's first ``state`` that counts it (``shoe.cards_drawn``) at
  a subscriber on *another* node than the table's (the one mosquitto: its only subscriber).
  One clock: everything runs in this process or on this machine. p50, p99, max;
- **the brokers' memory**: each node's resident set (``VmRSS``), sampled; the daemons' total;
- with ``--kill-node``: a third into the run node 1 (or the mosquitto) is killed (SIGKILL).
  On NATS every daemon, every one of the demo's people and every subscriber knows the three
  nodes (``[mqtt] hosts``, the API clients' ``hosts``), its own node first, and moves on to
  the next when its node fails, as a studio's would; the killed node is started again on
  the same ports and store once the survivors lead every MQTT stream again (as a host comes
  back), and rejoins. The one mosquitto is started again at once: its tables have nowhere
  else to go. For each table of the killed node: the time from the kill, and from the
  restart, to its first new state (a journal head beyond the one before the kill) at a
  subscriber on another node, and to its first state counting a card drawn after that (the
  table playing again: the first new state may only carry what the daemon journaled
  before it lost its node, and a table whose people did not come back plays no more); for
  the tables of the other nodes, the longest time without a state.

Figures from one run: the machine is shared; compare runs made on the same machine.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import platform
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.kernel.cli_support import (
    add_json,
    examples,
    positive_int,
    positive_seconds,
)
from controller.kernel.stats import percentile

logger = logging.getLogger(__name__)

PREFIX = "livetable"
SAMPLE_S = 5.0
# Tables started together, the next ones once these show a state. On NATS every QoS 1
# subscription is a replicated JetStream consumer made through the meta leader: 50 tables
# (150 clients, some 600 subscriptions) at once on this 2-core machine had consumers time out
# ("Unable to add JetStream consumer ... timeout after 5s", SUBACK 0x80), and a client that
# is refused a subscription does not ask again, so those tables never played.
START_BATCH = 5
BATCH_TIMEOUT_S = 120.0
# After the last state is counted, how long a table of the killed node may take to be back.
BACK_TIMEOUT_S = 120.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "studio",
        help="a studio of tables over a NATS cluster or one mosquitto: messages/s, card -> "
        "subscriber latency, broker memory, a node's failure",
        description="N livetable run daemons (MQTT 3.1.1) with simulated shoes and the demo's "
        "people, spread over a three-node NATS cluster, or all on one mosquitto, all on this "
        "machine. Reports the messages per second carried, the time from a card on the shoe's "
        "serial line to its state at a subscriber on another node (p50, p99, max), the "
        "brokers' resident memory and, with --kill-node, how long the tables of a killed node "
        "take to be back.",
        epilog=examples(
            "livetable bench studio",
            "livetable bench studio --tables 10 --duration-s 60 --kill-node",
            "livetable bench studio --mosquitto --json",
        ),
    )
    parser.add_argument("--tables", type=positive_int, default=50, help="tables (default 50)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--nats",
        type=positive_int,
        default=3,
        metavar="NODES",
        help="a NATS cluster of this many nodes (default 3)",
    )
    where.add_argument(
        "--mosquitto", action="store_true", help="one mosquitto instead of a NATS cluster"
    )
    parser.add_argument(
        "--duration-s",
        type=positive_seconds,
        default=120.0,
        help="how long the studio is measured once every table is online (default 120)",
    )
    parser.add_argument(
        "--pace-s",
        type=positive_seconds,
        default=1.0,
        help="the dealer's pause before each card (default 1: a studio's pace, not the demo's)",
    )
    parser.add_argument(
        "--kill-node",
        action="store_true",
        help="kill node 1 (or the mosquitto) a third into the run and start it again",
    )
    parser.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp one)")
    add_json(parser)
    parser.set_defaults(func=run)


def rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


@dataclass
class TableClock:
    """One table's cards as the shoe wrote them and its states as a subscriber got them."""

    node: int
    draws: list[float] = field(default_factory=list)
    counted: int | None = None  # cards_drawn of the last state seen
    seq: int = 0  # the journal head of the last state seen
    states: list[float] = field(default_factory=list)  # arrival of every state
    seq_at_kill: int | None = None
    back_at: float | None = None
    # The first state counting a card drawn after back_at: the table plays again.
    playing_at: float | None = None


class Stamps:
    """Every table's card draws and state arrivals, and what is measured from them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tables: dict[str, TableClock] = {}
        # (when the card was drawn, how long until a subscriber on another node had it)
        self.latencies_ms: list[tuple[float, float]] = []
        # Every state's arrival at each node's subscriber: node -> table -> times.
        self.arrivals: dict[int, dict[str, list[float]]] = {}
        self.messages = 0
        self.measuring = False
        self.killed_at: float | None = None

    def drawn(self, table_id: str) -> None:
        at = time.time()
        with self.lock:
            self.tables[table_id].draws.append(at)

    def new_shoe(self, table_id: str) -> None:
        with self.lock:
            self.tables[table_id].draws.clear()

    def message(self, *_args: Any) -> None:
        with self.lock:
            if self.measuring:
                self.messages += 1

    def state(self, table_id: str, body: dict[str, Any]) -> None:
        at = time.time()
        with self.lock:
            clock = self.tables.get(table_id)
            if clock is None:
                return
            clock.states.append(at)
            seq = int(body.get("seq") or 0)
            if (
                self.killed_at is not None
                and clock.seq_at_kill is not None
                and clock.back_at is None
                and seq > clock.seq_at_kill
            ):
                clock.back_at = at
            clock.seq = max(clock.seq, seq)
            counted = (body.get("shoe") or {}).get("cards_drawn")
            if not isinstance(counted, int):
                return
            if (
                clock.back_at is not None
                and clock.playing_at is None
                and 0 < counted <= len(clock.draws)
                and clock.draws[counted - 1] > clock.back_at
            ):
                clock.playing_at = at
            if clock.counted is not None and counted > clock.counted and self.measuring:
                for number in range(clock.counted + 1, counted + 1):
                    if number - 1 < len(clock.draws):
                        drawn = clock.draws[number - 1]
                        self.latencies_ms.append((drawn, max(0.0, (at - drawn) * 1000)))
            clock.counted = counted

    def arrived(self, node: int, table_id: str) -> None:
        at = time.time()
        with self.lock:
            self.arrivals.setdefault(node, {}).setdefault(table_id, []).append(at)

    def start_measuring(self) -> None:
        with self.lock:
            self.latencies_ms.clear()
            self.messages = 0
            self.measuring = True

    def kill(self, node: int) -> float:
        at = time.time()
        with self.lock:
            self.killed_at = at
            for clock in self.tables.values():
                if clock.node == node:
                    clock.seq_at_kill = clock.seq
        return at


class Subscriber:
    """One node's view of every table (the API client's StudioClient, MQTT 3.1.1), stamping
    the states of the tables it measures (those of another node)."""

    def __init__(
        self,
        hosts: tuple[tuple[str, int], ...],
        node: int,
        measured: set[str],
        stamps: Stamps,
    ) -> None:
        import paho.mqtt.client as mqtt

        from controller.client.api_client import Account, StudioClient

        self.node = node
        self.measured = measured
        self.stamps = stamps
        self.client = StudioClient(
            hosts[0][0],
            hosts[0][1],
            Account("viewer", f"bench-n{node}"),
            prefix=PREFIX,
            protocol=mqtt.MQTTv311,
            client_id=f"bench-subscriber-n{node}",
            on_update=self._on_update,
            hosts=hosts,
        )

    def _on_update(self, update: Any) -> None:
        if update.kind != "state":
            return
        if update.table_id in self.measured:
            self.stamps.state(update.table_id, update.body)
        self.stamps.arrived(self.node, update.table_id)

    def close(self) -> None:
        self.client.close()


def _demo_args(pace_s: float) -> argparse.Namespace:
    """The demo's options for every table, as ``livetable demo`` parses them: its people and
    timings, no misreads, no dealer's mistakes, MQTT 3.1.1, rounds without end."""
    from controller.tools import demo

    parser = argparse.ArgumentParser(prog="bench")
    demo.register(parser.add_subparsers())
    return parser.parse_args(
        [
            *["demo", "--rounds", "1000000", "--pace-s", str(pace_s)],
            *["--misread-rate", "0", "--mistake-rate", "0", "--mqtt", "3.1.1"],
        ]
    )


class Brokers:
    """The cluster's nodes, or the one mosquitto: ports, pids, kill and restart."""

    def __init__(self, work: Path, nats_nodes: int | None) -> None:
        self.cluster: Any = None
        self.mosquitto: Any = None
        if nats_nodes is not None:
            from controller.client.api_client import start_client
            from simulators.nats_cluster import start_cluster

            self.cluster = start_cluster(work / "nats", nats_nodes)
            # The first MQTT connection makes the MQTT streams: wait until each has a leader.
            warm = start_client(
                "127.0.0.1",
                self.cluster.node(1).mqtt_port,
                "bench-warm-up",
                on_connect=lambda *_a: None,
                on_message=lambda *_a: None,
            )
            try:
                if not self.cluster.wait_mqtt_ready():
                    raise RuntimeError("the NATS cluster's MQTT streams got no leaders")
            finally:
                warm.disconnect()
                warm.loop_stop()
        else:
            from simulators.broker import start_broker

            self.mosquitto = start_broker(
                work / "mosquitto", extra_config="allow_anonymous true\n", persistence=True
            )

    @property
    def kind(self) -> str:
        return "nats" if self.cluster is not None else "mosquitto"

    def ports(self) -> list[int]:
        if self.cluster is not None:
            return [node.mqtt_port for node in self.cluster.nodes]
        return [self.mosquitto.port]

    def hosts(self, first: int) -> tuple[tuple[str, int], ...]:
        """Every node, node ``first`` (from 0) first then the next ones, for a client to move
        on to when its node fails; the one mosquitto alone."""
        ports = self.ports()
        return tuple(("127.0.0.1", port) for port in ports[first:] + ports[:first])

    def memory(self) -> dict[str, float | None]:
        if self.cluster is not None:
            return {
                node.name: rss_mb(node.pid if node.alive() else None) for node in self.cluster.nodes
            }
        return {"mosquitto": rss_mb(self.mosquitto.pid if self.mosquitto.alive() else None)}

    def kill_and_restart(self) -> tuple[float, float]:
        """Kill node 1 and start it again when it may be; (seconds down, seconds until it
        had rejoined or listened)."""
        killed = time.monotonic()
        if self.cluster is not None:
            self.cluster.kill(1)
            # Until the survivors lead every MQTT stream, new connections are refused.
            self.cluster.wait_mqtt_ready()
            down = time.monotonic() - killed
            self.cluster.restart(1)
        else:
            self.mosquitto.process.kill()
            self.mosquitto.process.wait()
            down = time.monotonic() - killed
            self.mosquitto.restart()
        return down, time.monotonic() - killed - down

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        if self.mosquitto is not None:
            self.mosquitto.stop()


def measure(
    tables: int,
    nats_nodes: int | None,
    duration_s: float,
    pace_s: float,
    kill_node: bool,
    work: Path,
) -> dict[str, Any]:
    from controller.client.api_client import start_client
    from controller.tools.demo import BrokerAddress, DemoTable

    args = _demo_args(pace_s)
    stamps = Stamps()
    results: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        brokers = Brokers(work, nats_nodes)
        stack.callback(brokers.stop)
        ports = brokers.ports()
        nodes = len(ports)
        ids = [f"studio{n:02d}" for n in range(1, tables + 1)]
        node_of = {table_id: index % nodes for index, table_id in enumerate(ids)}
        for table_id in ids:
            stamps.tables[table_id] = TableClock(node_of[table_id] + 1)
        # The tables of node k are measured at the subscriber of node k+1 (another node).
        subscribers = []
        for node in range(nodes):
            measured = {t for t, n in node_of.items() if (n + 1) % nodes == node}
            subscriber = Subscriber(brokers.hosts(node), node + 1, measured, stamps)
            stack.callback(subscriber.close)
            subscribers.append(subscriber)
        counter = start_client(
            "127.0.0.1",
            ports[0],
            "bench-counter",
            on_connect=lambda client, *_a: client.subscribe(f"{PREFIX}/#", qos=1),
            on_message=stamps.message,
            reconnect_delay_s=(1, 2),
            hosts=brokers.hosts(0),
        )
        stack.callback(counter.loop_stop)
        stack.callback(counter.disconnect)
        made: list[Any] = []
        studio = work / "studio"
        studio.mkdir(parents=True, exist_ok=True)
        started_at = time.monotonic()
        for index, table_id in enumerate(ids):
            port = ports[node_of[table_id]]
            broker = BrokerAddress(
                "127.0.0.1", port, None, "3.1.1", hosts=brokers.hosts(node_of[table_id])
            )
            table = DemoTable(index, table_id, args, studio, broker, False, None)
            shoe_draw, shoe_new = table.shoe.draw, table.shoe.new_shoe

            def draw(*a: Any, _draw: Any = shoe_draw, _id: str = table_id, **k: Any) -> Any:
                emitted = _draw(*a, **k)
                if emitted.event == "card":
                    stamps.drawn(_id)
                return emitted

            def new_shoe(*a: Any, _new: Any = shoe_new, _id: str = table_id, **k: Any) -> Any:
                stamps.new_shoe(_id)
                return _new(*a, **k)

            table.shoe.draw = draw  # type: ignore[method-assign]
            table.shoe.new_shoe = new_shoe  # type: ignore[method-assign]
            stack.callback(table.stop)
            table.start()
            made.append(table)
            if len(made) % START_BATCH == 0 or len(made) == tables:
                _wait_online(stamps, len(made), subscribers, made, BATCH_TIMEOUT_S)
        all_online_s = time.monotonic() - started_at
        stamps.start_measuring()
        began = time.monotonic()
        memory: dict[str, list[float]] = {}
        daemons: list[float] = []
        kill: dict[str, Any] | None = None
        next_sample = began
        killed = False
        while (elapsed := time.monotonic() - began) < duration_s:
            if time.monotonic() >= next_sample:
                for name, mb in brokers.memory().items():
                    if mb is not None:
                        memory.setdefault(name, []).append(mb)
                daemons.append(
                    sum(
                        rss_mb(getattr(getattr(t.daemon, "process", None), "pid", None)) or 0.0
                        for t in made
                    )
                )
                next_sample += SAMPLE_S
            if kill_node and not killed and elapsed >= duration_s / 3:
                killed = True
                kill_time = stamps.kill(1)
                down_s, rejoin_s = brokers.kill_and_restart()
                restarted_at = time.time()
                kill = {"node": 1, "down_s": round(down_s, 2), "rejoin_s": round(rejoin_s, 2)}
                kill["kill_time"], kill["restart_time"] = kill_time, restarted_at
            time.sleep(0.2)
        measured_s = time.monotonic() - began
        kill_time = restart_time = 0.0
        backs: list[float] = []
        if kill is not None:
            victims = [c for c in stamps.tables.values() if c.node == 1]
            back_by = time.monotonic() + BACK_TIMEOUT_S
            while time.monotonic() < back_by and any(c.playing_at is None for c in victims):
                time.sleep(0.5)
            kill_time, restart_time = kill.pop("kill_time"), kill.pop("restart_time")
            backs = [c.back_at for c in victims if c.back_at is not None]
            from_kill = [b - kill_time for b in backs]
            from_restart = [max(0.0, b - restart_time) for b in backs]
            playing = [c.playing_at - kill_time for c in victims if c.playing_at is not None]
            # The other tables as a subscriber on a node that stayed up saw them.
            survivor_view = stamps.arrivals.get(2 if nodes > 1 else 1, {})
            survivors = [survivor_view.get(t, []) for t, c in stamps.tables.items() if c.node != 1]

            def longest_gap(states: list[float]) -> float:
                around = [t for t in states if kill_time - 30 <= t <= restart_time + 30]
                return max((b - a for a, b in itertools.pairwise(around)), default=0.0)

            kill.update(
                {
                    "tables_on_node": len(victims),
                    "tables_back": len(backs),
                    "back_after_kill_s": _spread(from_kill),
                    "back_after_restart_s": _spread(from_restart),
                    "tables_playing_again": len(playing),
                    "playing_again_after_kill_s": _spread(playing),
                    "survivors_longest_state_gap_s": round(
                        max((longest_gap(states) for states in survivors), default=0.0), 2
                    ),
                }
            )
        with stamps.lock:
            timed = list(stamps.latencies_ms)
            messages = stamps.messages
        # Cards drawn while a node was down wait for it (a table goes on without its
        # broker): counted apart, from the kill until 30 s after the last table was back.
        outage = (float("inf"), float("-inf"))
        if kill is not None:
            outage = (kill_time, max(backs, default=restart_time) + 30)
        latencies = [ms for drawn, ms in timed if not outage[0] <= drawn <= outage[1]]
        in_outage = [ms for drawn, ms in timed if outage[0] <= drawn <= outage[1]]
        results = {
            "broker": brokers.kind,
            "nodes": nodes,
            # The nodes each daemon, person and subscriber knows ([mqtt] hosts): all of them.
            "hosts_per_client": len(brokers.hosts(0)),
            "tables": tables,
            "pace_s": pace_s,
            "duration_s": round(measured_s, 1),
            "all_online_s": round(all_online_s, 1),
            "messages": messages,
            "messages_per_s": round(messages / measured_s, 1) if measured_s else 0.0,
            "cards_timed": len(latencies),
            "cards_drawn_in_the_outage": {
                "count": len(in_outage),
                "max_ms": round(max(in_outage), 1) if in_outage else None,
            },
            "card_to_subscriber_ms": {
                "p50": round(percentile(latencies, 50), 1) if latencies else None,
                "p99": round(percentile(latencies, 99), 1) if latencies else None,
                "max": round(max(latencies), 1) if latencies else None,
            },
            "broker_rss_mb": {
                name: {
                    "first": round(mbs[0], 1),
                    "last": round(mbs[-1], 1),
                    "peak": round(max(mbs), 1),
                }
                for name, mbs in memory.items()
            },
            "daemons_rss_mb": {
                "last": round(daemons[-1], 1) if daemons else None,
                "peak": round(max(daemons), 1) if daemons else None,
            },
            "daemons_alive": sum(1 for t in made if t.daemon.alive()),
            "kill": kill,
            "machine": {
                "cores": os.cpu_count(),
                "cpu": platform.processor() or platform.machine(),
                "load_average": [round(load, 2) for load in os.getloadavg()],
            },
        }
    return results


def _wait_online(
    stamps: Stamps, count: int, subscribers: list[Subscriber], made: list[Any], timeout_s: float
) -> None:
    """Until ``count`` tables have shown a state that counts the shoe's cards."""

    def online() -> int:
        with stamps.lock:
            return sum(1 for clock in stamps.tables.values() if clock.counted is not None)

    deadline = time.monotonic() + timeout_s
    while online() < count:
        if time.monotonic() > deadline:
            refused = sorted(
                {topic for sub in subscribers for topic in sub.client.refused_subscriptions}
            )
            alive = sum(1 for t in made if t.daemon.alive())
            raise RuntimeError(
                f"only {online()} of {count} tables showed a counted state in {timeout_s:g} s "
                f"({alive} daemons alive; subscriptions the broker refused the bench: "
                f"{', '.join(refused) or 'none'})"
            )
        time.sleep(0.2)


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"min": None, "p50": None, "max": None}
    return {
        "min": round(min(values), 2),
        "p50": round(percentile(values, 50), 2),
        "max": round(max(values), 2),
    }


def _said(spread: dict[str, float | None]) -> str:
    return f"min {spread['min']} s, p50 {spread['p50']} s, max {spread['max']} s"


def run(args: argparse.Namespace) -> int:
    nats_nodes = None if args.mosquitto else args.nats
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        results = measure(
            args.tables, nats_nodes, args.duration_s, args.pace_s, args.kill_node, args.dir
        )
    else:
        with tempfile.TemporaryDirectory(prefix="livetable-bench-studio-") as work:
            results = measure(
                args.tables, nats_nodes, args.duration_s, args.pace_s, args.kill_node, Path(work)
            )
    if args.json:
        json.dump(results, sys.stdout)
        print()
        return 0
    machine = results["machine"]
    where = (
        f"a {results['nodes']}-node NATS cluster"
        if results["broker"] == "nats"
        else "one mosquitto"
    )
    print(
        f"{results['tables']} tables over {where}, {results['duration_s']:g} s measured, a card "
        f"every {results['pace_s']:g} s per table ({machine['cores']} cores, load "
        f"{machine['load_average']}); all online {results['all_online_s']:g} s after start; "
        f"every client knows {results['hosts_per_client']} broker address(es)"
    )
    print(
        f"messages carried: {results['messages_per_s']:g}/s ({results['messages']} on livetable/#)"
    )
    latency = results["card_to_subscriber_ms"]
    print(
        f"card -> subscriber{' on another node' if results['nodes'] > 1 else ''}: "
        f"{results['cards_timed']} cards: p50 "
        f"{latency['p50']} ms  p99 {latency['p99']} ms  max {latency['max']} ms"
    )
    for name, mb in results["broker_rss_mb"].items():
        print(f"{name} memory: {mb['first']} MB -> {mb['last']} MB (peak {mb['peak']} MB)")
    print(
        f"daemons' memory (all {results['tables']}): {results['daemons_rss_mb']['last']} MB; "
        f"{results['daemons_alive']} alive at the end"
    )
    kill = results["kill"]
    if kill is not None:
        outage = results["cards_drawn_in_the_outage"]
        print(
            f"cards drawn during the outage (not above): {outage['count']}, the slowest at a "
            f"subscriber after {outage['max_ms']} ms"
        )
        print(
            f"node 1 killed: down {kill['down_s']} s, rejoined in {kill['rejoin_s']} s; "
            f"{kill['tables_back']} of {kill['tables_on_node']} tables back "
            f"{_said(kill['back_after_kill_s'])} after the kill "
            f"({_said(kill['back_after_restart_s'])} after the restart); the other tables' "
            "longest wait for a state "
            f"{kill['survivors_longest_state_gap_s']} s"
        )
        print(
            f"playing again (a state counting a card drawn after it was back): "
            f"{kill['tables_playing_again']} of {kill['tables_on_node']}, "
            f"{_said(kill['playing_again_after_kill_s'])} after the kill"
        )
    return 0
