"""``livetable bench latency``: a card's way through the whole daemon, against a floor.

One run, all on this machine, all real: mosquitto on a free loopback port, a simulated shoe
(Angel Eye) on a real pty in this process, and ``livetable run`` as a child process on a
baccarat table. This process plays the dealer, the platform (``open_round``) and the
supervisor (``new_shoe``) over MQTT, and one subscriber notes when each ``.../state``
message arrives (``time.monotonic()``, first thing in the MQTT client's callback).

- **card → state**: from right after the simulator's ``write()`` of the card's frame
  returned (the frame goes out in one call; :meth:`ShoeSimulator.draw` returns right after
  it) to the arrival of the first state whose ``shoe.cards_drawn`` counts that card. One card
  at a time: the dealer draws the next only once the table has shown the last, so this is
  the latency of one card, not queueing. Burn cards count as well as dealt ones.
- **floor**: the same way without livetable's code: the same simulator writes the same
  frames to a pty, a child process reads them with pyserial, inserts one row and commits it
  (SQLite, WAL, ``synchronous=FULL``), publishes QoS 1 with paho to the same mosquitto, and
  the same subscriber notes the arrival. What any implementation of the pipeline pays.
- **interleaved**: both pipelines are up at once and take turns, :data:`BLOCK_CARDS` cards
  of the daemon, then as many of the floor, and so on, so that both see the same moments of
  a shared machine; at each turn the bench pauses :data:`SETTLE_S`, so that neither
  pipeline's aftermath (acknowledgements, bookkeeping) falls into the other's cards.
- **request → answer**: every request the bench sends (``open_round``, ``new_shoe``,
  ``resume``), from its publish to the arrival of its answer (stamped as the states are).
- **resident memory** of the daemon (``VmRSS``, ``VmHWM``) after the cards, and its **idle
  CPU**: CPU seconds from ``/proc/<pid>/stat`` over ``--idle-s`` seconds with nothing
  happening (the floor stopped), as a percentage of one core.

Figures from one run: the machine is shared and noisy; compare runs on the same machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.kernel.cli_support import (
    add_json,
    examples,
    non_negative_int,
    positive_int,
    positive_seconds,
)
from controller.kernel.stats import percentile
from controller.mqtt.connection import watch_connection
from simulators.daemon_process import DaemonProcess
from simulators.table_config import write_table_config

logger = logging.getLogger(__name__)

RATIO_TARGET = 2.0
RSS_TARGET_MB = 80.0
IDLE_CPU_TARGET_PERCENT = 1.0
WAIT_S = 10.0  # for any one answer, state or floor message
KEEPALIVE_S = 3600  # the bench's own MQTT connections: longer than any run
FLOOR_TOPIC = "bench/floor"
TABLE_ID = "t1"
PREFIX = "livetable"
DRAW_PHASES = frozenset({"BURN_REVEAL", "BURNING", "DEALING"})
FRAME_BYTES = 8  # an Angel Eye card frame: ENQ SEQ 'D' D1 D2 ETX BCC BCC
# The broker as the shipped livetable.conf sets what matters to latency: Nagle's algorithm
# off on its sockets (without it, an answer sent to a client right after the PUBACK of its
# request waits for the client's delayed ACK, some 40 ms).
BROKER_CONFIG = "allow_anonymous true\nset_tcp_nodelay true\n"
# The two pipelines take turns in blocks of this many cards, so that both see the same
# moments of the machine (a block lasts tens of milliseconds) ...
BLOCK_CARDS = 10
# ... with this pause at each turn, so that neither pipeline's aftermath (acknowledgements,
# bookkeeping: a few milliseconds at most) falls into the other's block.
SETTLE_S = 0.01


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "latency",
        help="card on the pty -> state at a subscriber, the daemon against a floor",
        description="A card's way through the whole daemon, against a floor, all real and on "
        "this machine: mosquitto on a free loopback port, a simulated Angel Eye shoe on a real "
        "pty, and livetable run as a child process on a baccarat table. It reports card to "
        "state (from the card's frame written to the pty to the first state at a subscriber "
        "that counts it), the floor (the same path through pyserial, one SQLite commit and "
        "one MQTT publish, without livetable; the two take turns of a few cards, so that both "
        "see the same moments of the machine), the daemon's resident memory and its idle CPU "
        "(after the cards, nothing happening), as figures from one run: compare runs on the "
        "same machine.",
        epilog=examples("livetable bench latency", "livetable bench latency --cards 300 --json"),
    )
    parser.add_argument("--cards", type=positive_int, default=2000, help="cards timed (each part)")
    parser.add_argument(
        "--idle-s",
        type=positive_seconds,
        default=10.0,
        help="how long the idle CPU is measured, in seconds",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the journal goes")
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed (default 1)")
    add_json(parser)
    parser.set_defaults(func=run)


# -- the subscriber ---------------------------------------------------------------------------


class Link:
    """One MQTT connection of the bench: stamps every message on arrival, sends requests.

    The stamp is the first thing the client's callback does; parsing happens on the caller's
    thread, in :meth:`next_message`, so it never delays a stamp.

    The daemon's side and the floor's are this same class, so that both are stamped alike.
    It is not the API client (``controller/client/api_client.py``): that one parses, orders and
    locks before a consumer hears of a message, which the floor's pipeline would not pay,
    and its connections ping the broker every 30 s, which would fall into the timed cards
    (see the keepalive below).
    """

    def __init__(self, host: str, port: int, topics: list[str], account: str) -> None:
        import paho.mqtt.client as mqtt

        self.account = account
        self._inbox: list[tuple[float, str, bytes]] = []
        self._cond = threading.Condition()
        self._subscribed = threading.Event()
        self._topics = topics
        client_id = f"bench-{account}-{uuid.uuid4().hex[:8]}"
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv311
        )
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        watch_connection(
            self.client,
            host,
            port,
            protocol="3.1.1",
            username=None,
            client_id=client_id,
            log=logger,
            name="livetable bench",
        )
        # No keepalive ping during a run: after a PINGRESP that the bench's side has not
        # acknowledged yet (TCP's delayed acknowledgement), mosquitto's next message waits
        # for it behind Nagle's algorithm, some 40 ms, which would be the bench's own delay.
        self.client.connect_async(host, port, keepalive=KEEPALIVE_S)
        self.client.loop_start()

    def _on_connect(self, client: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if not reason.is_failure:
            client.subscribe([(topic, 1) for topic in self._topics])

    def _on_subscribe(self, *_args: Any) -> None:
        self._subscribed.set()

    def _on_message(self, _client: Any, _u: Any, message: Any) -> None:
        at = time.monotonic()
        with self._cond:
            self._inbox.append((at, message.topic, message.payload))
            self._cond.notify_all()

    def wait_ready(self, timeout: float = WAIT_S) -> None:
        if not self._subscribed.wait(timeout):
            raise RuntimeError("the bench's MQTT client could not connect and subscribe")

    def next_message(self, deadline: float, what: str) -> tuple[float, str, bytes]:
        with self._cond:
            while not self._inbox:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what}")
                self._cond.wait(left)
            return self._inbox.pop(0)

    def publish(self, topic: str, body: dict[str, Any]) -> None:
        self.client.publish(topic, json.dumps(body), qos=1)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


# -- the table, played over MQTT ------------------------------------------------------------


@dataclass
class Table:
    """The latest state and every answer, read from a :class:`Link`; requests sent on it."""

    link: Link
    base: str = f"{PREFIX}/{TABLE_ID}"
    state: dict[str, Any] | None = None
    state_at: float = 0.0
    responses: dict[str, dict[str, Any]] = field(default_factory=dict)
    answered_at: dict[str, float] = field(default_factory=dict)
    # Each request's round trip (seconds): published to its answer's arrival.
    request_latencies: list[float] = field(default_factory=list)

    def pump(self, until: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
        """Read messages until ``until()`` holds (checked before each)."""
        deadline = time.monotonic() + timeout
        while not until():
            at, topic, payload = self.link.next_message(deadline, what)
            if topic == f"{self.base}/state":
                body = json.loads(payload)
                if self.state is None or body["seq"] >= self.state["seq"]:
                    self.state, self.state_at = body, at
            elif topic.startswith(f"{self.base}/response/"):
                body = json.loads(payload)
                self.responses[str(body.get("transaction"))] = body
                self.answered_at[str(body.get("transaction"))] = at

    def request(self, role: str, command: str, **args: Any) -> dict[str, Any]:
        transaction = uuid.uuid4().hex
        topic = f"{self.base}/request/{role}/{self.link.account}/{command}"
        sent = time.monotonic()
        self.link.publish(topic, {"transaction": transaction, **args})
        self.pump(lambda: transaction in self.responses, f"the answer to {command}")
        answer = self.responses.pop(transaction)
        self.request_latencies.append(self.answered_at.pop(transaction) - sent)
        if not answer["ok"]:
            raise RuntimeError(f"{command} refused: {answer['message']}")
        return answer


def _key(state: dict[str, Any]) -> tuple[int, int]:
    return state["seq"], state["journal"]["seq"]


def _no_progress(_steps: int) -> None:
    pass


def play(
    table: Table,
    shoe: Any,
    cards: int,
    advance: Callable[[int], None] = _no_progress,
    between: Callable[[int], None] = _no_progress,
    every: int = 1,
) -> tuple[list[float], int]:
    """Deal until ``cards`` cards were timed; their latencies (seconds) and rounds opened.
    ``between(timed)`` runs after every ``every``-th timed card and after the last, outside
    any card's span (the bench times a block of floor cards there)."""
    latencies: list[float] = []
    rounds = 0
    table.pump(
        lambda: table.state is not None and table.state["devices"]["shoe_online"],
        "the table's state with the shoe online",
    )
    while len(latencies) < cards:
        assert table.state is not None
        rounds += table.state["phase"] == "SHOE_READY"
        latency = step(table, shoe, table.state)
        if latency is not None:
            latencies.append(latency)
            advance(1)  # after the card's arrival was stamped
            if len(latencies) % every == 0 or len(latencies) == cards:
                between(len(latencies))
    return latencies, rounds


def step(table: Table, shoe: Any, state: dict[str, Any]) -> float | None:
    """Do what ``state`` asks of the dealer, platform or supervisor, then wait for the state
    that shows it (an answer can overtake the state it caused, and other states, such as the
    shoe's coming online, can come between). A card's latency in seconds, else None."""
    phase = state["phase"]
    shoe_id = state["shoe"]["id"]
    if phase in DRAW_PHASES:
        before = state["shoe"]["cards_drawn"] or 0
        emitted = shoe.draw()
        written = time.monotonic()
        if emitted.event != "card":  # the cut card
            table.pump(
                lambda: (
                    table.state is not None
                    and (table.state["shoe"]["cut_card_seen"] or table.state["phase"] != phase)
                ),
                "the state showing the cut card",
            )
            return None

        def shown() -> bool:
            # The card counted, or, for the last card of the cut card's round, the shoe it
            # ended (the state then shows no shoe).
            now = table.state
            return now is not None and (
                now["shoe"]["id"] != shoe_id or (now["shoe"]["cards_drawn"] or 0) > before
            )

        table.pump(shown, f"the state showing card {before + 1} of shoe {shoe_id}")
        return table.state_at - written
    if phase == "AWAITING_SHUFFLE":
        shoe.new_shoe()
        table.request("supervisor", "new_shoe")
    elif phase == "SHOE_READY":
        table.request("platform", "open_round")
    elif phase == "PAUSED":
        pause = state["pause"] or {}
        needs = " ".join(pause.get("needs", []))
        args = {"resolution": "burn"} if "accept or burn" in needs else {}
        table.request("supervisor", "resume", **args)
    else:  # the table moves on by itself (betting closes on its timer)
        acted = _key(state)
        table.pump(
            lambda: table.state is not None and _key(table.state) != acted,
            f"a state after {phase}",
        )
        return None
    table.pump(
        lambda: table.state is not None and table.state["phase"] != phase,
        f"a state after {phase}",
    )
    return None


# -- the daemon ------------------------------------------------------------------------------


def rss_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of ``pid``, in kB."""
    found: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                found[name] = int(value.split()[0])
    return found


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of every thread of ``pid`` so far."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    # After the command: state is field 3 of proc(5); utime and stime are 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu_percent(pid: int, seconds: float) -> float:
    start_cpu, start = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    used, elapsed = cpu_seconds(pid) - start_cpu, time.monotonic() - start
    return 100.0 * used / elapsed


@dataclass
class DaemonUnderTest:
    """``livetable run`` up, with its shoe and the bench's view of its table."""

    daemon: DaemonProcess
    table: Table
    shoe: Any

    @property
    def pid(self) -> int:
        assert self.daemon.process is not None
        return self.daemon.process.pid

    def exited(self) -> RuntimeError:
        return RuntimeError(f"the daemon exited: {self.daemon.why()}")

    def check_alive(self) -> None:
        if not self.daemon.alive():
            raise self.exited()


@contextlib.contextmanager
def running_daemon(workdir: Path, host: str, port: int, seed: int) -> Iterator[DaemonUnderTest]:
    """The daemon as a child process on a baccarat table, its simulated shoe, a subscriber."""
    from simulators.shoe.simulator import ShoeSimulator

    link_path = workdir / "shoe"
    config = write_table_config(
        workdir / f"{TABLE_ID}.toml",
        table_id=TABLE_ID,
        game="baccarat",
        shoe_port=link_path,
        broker_port=port,
        broker_host=host,
        betting_s=0.05,  # short betting: the bench times cards, not the wait for bets
        dealer_idle_s=60.0,
    )
    base = f"{PREFIX}/{TABLE_ID}"
    with ShoeSimulator("angel-eye", link_path, seed=seed) as shoe:
        process = DaemonProcess(config, workdir / "daemon.log", cwd=workdir)
        process.start()
        link = Link(host, port, [f"{base}/state", f"{base}/response/bench"], "bench")
        daemon = DaemonUnderTest(process, Table(link), shoe)
        try:
            link.wait_ready()
            yield daemon
        except Exception as error:
            if not process.alive():
                raise daemon.exited() from error
            raise
        finally:
            link.close()
            process.stop()


# -- the floor -------------------------------------------------------------------------------


def floor_relay(link: str, host: str, port: int, database: str) -> None:
    """The floor's middle, in its own process as the daemon is: pyserial in, one SQLite row
    committed with ``synchronous=FULL`` (WAL), paho QoS 1 out. Prints ``ready``, then runs
    until its standard input closes."""
    import paho.mqtt.client as mqtt
    import serial

    db = sqlite3.connect(database, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE cards (n INTEGER PRIMARY KEY, frame BLOB NOT NULL, at REAL)")
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id="bench-floor", protocol=mqtt.MQTTv5
    )
    connected = threading.Event()
    client.on_connect = lambda *_args: connected.set()
    client.connect(host, port)
    client.loop_start()
    if not connected.wait(WAIT_S):
        raise SystemExit("the floor relay could not connect")
    port_ = serial.Serial(link, 4800, timeout=0.05)
    stop = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    print("ready", flush=True)
    buffer = b""
    count = 0
    while not stop.is_set():
        data = port_.read(1)
        if not data:
            continue
        waiting = port_.in_waiting
        if waiting:
            data += port_.read(waiting)
        buffer += data
        while len(buffer) >= FRAME_BYTES:
            frame, buffer = buffer[:FRAME_BYTES], buffer[FRAME_BYTES:]
            count += 1
            db.execute("BEGIN")
            db.execute("INSERT INTO cards VALUES (?, ?, ?)", (count, frame, time.time()))
            db.execute("COMMIT")
            client.publish(FLOOR_TOPIC, json.dumps({"n": count, "frame": frame.hex()}), qos=1)
    port_.close()
    client.disconnect()
    client.loop_stop()
    db.close()


class Floor:
    """The floor's pipeline, up: its shoe, its relay (a child process), its subscriber."""

    def __init__(self, shoe: Any, link: Link) -> None:
        self.shoe = shoe
        self.link = link
        self.number = 0

    def card(self) -> float:
        """Draw one card and wait for the relay's message about it: its latency (seconds)."""
        if self.shoe.cards_left == 0:
            self.shoe.new_shoe()
        self.number += 1
        number = self.number
        self.shoe.draw()
        written = time.monotonic()
        deadline = written + WAIT_S
        while True:
            at, _topic, payload = self.link.next_message(deadline, f"floor card {number}")
            if json.loads(payload)["n"] == number:
                return at - written


@contextlib.contextmanager
def running_floor(workdir: Path, host: str, port: int, seed: int) -> Iterator[Floor]:
    from simulators.shoe.simulator import ShoeSimulator

    link_path = workdir / "floor-shoe"
    link = Link(host, port, [FLOOR_TOPIC], "floor")
    # No cut card: every frame is a card frame of FRAME_BYTES bytes.
    with ShoeSimulator("angel-eye", link_path, seed=seed, cut_card_depth=0) as shoe:
        relay = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "controller.tools.bench_latency",
                "--floor-relay",
                str(link_path),
                host,
                str(port),
                str(workdir / "floor.db"),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert relay.stdin is not None and relay.stdout is not None
        try:
            link.wait_ready()
            if relay.stdout.readline().strip() != "ready":
                raise RuntimeError("the floor relay did not start")
            yield Floor(shoe, link)
        finally:
            link.close()
            with contextlib.suppress(OSError):
                relay.stdin.close()
            try:
                relay.wait(10)
            except subprocess.TimeoutExpired:
                relay.kill()
                relay.wait()
            relay.stdout.close()


# -- the report ------------------------------------------------------------------------------


def summary(latencies: list[float]) -> dict[str, Any]:
    ms = [value * 1000 for value in latencies]
    return {
        "cards": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "max_ms": round(max(ms), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or "unknown"


def measure(cards: int, idle_s: float, directory: Path | None, seed: int) -> dict[str, Any]:
    """Both pipelines up at once, their cards alternating (a daemon card, a floor card, ...),
    so that both see the same moments of the machine; then, the floor down, the daemon's
    idle CPU with nothing happening, and its memory."""
    from controller.kernel.progress import progress
    from simulators.broker import start_broker

    if cards < 1:
        raise ValueError("--cards must be at least 1")
    floor_latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="livetable-latency-", dir=directory) as folder:
        workdir = Path(folder)
        with (
            start_broker(workdir / "broker", extra_config=BROKER_CONFIG) as broker,
            running_daemon(workdir, broker.host, broker.port, seed) as daemon,
        ):
            # A bar on a terminal (stderr) only, advanced once per timed card, outside it.
            with (
                running_floor(workdir, broker.host, broker.port, seed) as floor,
                progress(2 * cards, "cards (daemon and floor in turns)") as advance,
            ):

                def floor_block(daemon_cards: int) -> None:
                    # The daemon at rest, the floor catches up to the daemon's count.
                    time.sleep(SETTLE_S)
                    while len(floor_latencies) < daemon_cards:
                        floor_latencies.append(floor.card())
                        advance(1)  # after the card's arrival was stamped
                    time.sleep(SETTLE_S)

                started = time.monotonic()
                latencies, rounds = play(
                    daemon.table, daemon.shoe, cards, advance, floor_block, BLOCK_CARDS
                )
                elapsed = time.monotonic() - started
            # The floor is down: nothing happens now but the daemon at rest.
            time.sleep(0.5)  # let the last acknowledgements settle
            daemon.check_alive()
            idle = idle_cpu_percent(daemon.pid, idle_s)
            memory = rss_kb(daemon.pid)
    timed, floor = summary(latencies), summary(floor_latencies)
    requests = summary(daemon.table.request_latencies)
    requests["requests"] = requests.pop("cards")
    return {
        "cards": cards,
        "requests": requests,
        "interleaved": {"block_cards": BLOCK_CARDS, "settle_s": SETTLE_S},
        "daemon": {
            **timed,
            "rounds": rounds,
            "elapsed_s": round(elapsed, 1),
            "rss_mb": round(memory["VmRSS"] / 1024, 1),
            "peak_rss_mb": round(memory["VmHWM"] / 1024, 1),
            "idle_cpu_percent": round(idle, 2),
            "idle_s": idle_s,
        },
        "floor": floor,
        "p99_ratio": round(timed["p99_ms"] / floor["p99_ms"], 2),
        "targets": {
            "p99_ratio": RATIO_TARGET,
            "rss_mb": RSS_TARGET_MB,
            "idle_cpu_percent": IDLE_CPU_TARGET_PERCENT,
        },
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
    }


def _verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def run(args: argparse.Namespace) -> int:
    results = measure(args.cards, args.idle_s, args.dir, args.seed)
    if args.json:
        json.dump(results, sys.stdout)
        print()
        return 0
    daemon, floor = results["daemon"], results["floor"]
    print(
        f"card on the pty -> state at a subscriber, {results['cards']} cards each, daemon "
        f"and floor taking turns of {results['interleaved']['block_cards']} "
        f"({results['machine']['cores']} x {results['machine']['cpu']})"
    )
    for name, row in (("daemon", daemon), ("floor", floor)):
        print(
            f"{name:>7}: p50 {row['p50_ms']:.3f} ms  p99 {row['p99_ms']:.3f} ms  "
            f"max {row['max_ms']:.3f} ms  mean {row['mean_ms']:.3f} ms"
        )
    ratio = results["p99_ratio"]
    asked = results["requests"]
    print(
        f"request -> answer: {asked['requests']} requests (open_round, new_shoe, resume): "
        f"p50 {asked['p50_ms']:.3f} ms  p99 {asked['p99_ms']:.3f} ms  "
        f"max {asked['max_ms']:.3f} ms  mean {asked['mean_ms']:.3f} ms"
    )
    print(f"p99 / p99 floor: {ratio:.2f} ({_verdict(ratio <= RATIO_TARGET)} <= {RATIO_TARGET})")
    print(
        f"daemon resident memory: {daemon['rss_mb']} MB, peak {daemon['peak_rss_mb']} MB "
        f"({_verdict(daemon['rss_mb'] <= RSS_TARGET_MB)} <= {RSS_TARGET_MB:g} MB)"
    )
    print(
        f"daemon idle CPU: {daemon['idle_cpu_percent']:.2f} % of one core over "
        f"{daemon['idle_s']:g} s ({_verdict(daemon['idle_cpu_percent'] <= IDLE_CPU_TARGET_PERCENT)}"
        f" <= {IDLE_CPU_TARGET_PERCENT:g} %)"
    )
    print(f"({daemon['rounds']} rounds, and the floor's cards between, in {daemon['elapsed_s']} s)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--floor-relay":
        floor_relay(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        sys.exit("usage: livetable bench latency (this module's own entry is for its relay)")
