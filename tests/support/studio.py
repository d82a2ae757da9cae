"""A studio of tables for tests: many ``livetable run`` daemons, each with its own simulated
shoe on its own pty, driven by ONE set of bots over MQTT, watched by ONE independent
subscriber, and measured from ``/proc``.

One :class:`TableBots` per table costs three MQTT connections (three network threads) and a
bot thread; twenty tables would be eighty threads in the test process on a 2-core machine.
:class:`StudioBots` plays the dealer, the platform and the supervisor for every table from one
thread, round-robin, over two MQTT connections (the platform's and the supervisor's account,
each subscribed to ``livetable/+/...``). The tables still hear from the bots only over MQTT,
and the bots see the tables only through what they publish (the dealer's hand on the shoe
aside: it draws on the pty, as a dealer does). It never waits on an answer: a request is sent,
its table is skipped until the answer comes (or its deadline passes), and the other tables
are served meanwhile.

:class:`StreamWatcher` is the independent consumer: one plain MQTT client on ``livetable/+/events``
and ``livetable/+/state`` (and ``availability``, to tell when a table is up), optionally with a
persistent session, keeping every table's events in arrival order.

:func:`process_usage` reads a process's CPU seconds and resident memory from ``/proc``.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.client.api_client import (
    Account,
    BrokerRefused,
    StudioClient,
    TableUpdate,
    start_client,
)
from controller.kernel import stats
from simulators.mqtt_bots import (
    DECIDE,
    DRAW,
    ENTER_CARD,
    NEW_SHOE,
    OPEN_ROUND,
    RESOLVE,
    decision,
    next_move,
    resolution,
)
from simulators.shoe.simulator import FaultPlan, ShoeSimulator
from tests.support.daemon import DaemonProcess, write_config

PREFIX = "livetable"
RESPONSE_TIMEOUT_S = 15.0
# A pass over every table, then this pause: short beside a card's round trip, long enough
# that an idle driver does not spin a core the daemons need.
PASS_PAUSE_S = 0.005


def _table_of(topic: str) -> str:
    return topic.split("/", 2)[1]


# --- processes -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcessUsage:
    """CPU seconds (user + system) used so far and resident memory (now and peak), in KiB."""

    cpu_s: float
    rss_kib: int
    peak_rss_kib: int

    def to_dict(self) -> dict[str, float | int]:
        return {
            "cpu_s": round(self.cpu_s, 3),
            "rss_kib": self.rss_kib,
            "peak_rss_kib": self.peak_rss_kib,
        }


def process_usage(pid: int) -> ProcessUsage:
    """From ``/proc/<pid>/stat`` (utime, stime) and ``/proc/<pid>/status`` (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        # The command name may hold spaces and parentheses: count fields after the last ')'.
        fields = stat.read().rsplit(b")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu_s = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime: fields 14 and 15
    memory: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                memory[name] = int(value.split()[0])  # kB
    return ProcessUsage(cpu_s, memory.get("VmRSS", 0), memory.get("VmHWM", 0))


def cpu_model() -> str:
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def percentile(values: Iterable[float], fraction: float) -> float | None:
    """The benches' percentile (:func:`controller.kernel.stats.percentile`) at ``fraction`` (0 to 1)
    of ``values``, so the studio's figures compare with theirs; None if there are none (a
    table that saw no cards reports no spread rather than failing the run)."""
    listed = list(values)
    return stats.percentile(listed, fraction * 100) if listed else None


# --- the tables --------------------------------------------------------------------------------


@dataclass
class StudioTable:
    """One table: its daemon and its shoe (a simulator on its own pty)."""

    table_id: str
    game: str
    workdir: Path
    shoe: ShoeSimulator
    daemon: DaemonProcess

    @property
    def pid(self) -> int:
        assert self.daemon.process is not None
        return self.daemon.process.pid

    def close(self) -> None:
        try:
            self.daemon.stop()
        finally:
            self.shoe.stop()


def make_table(
    workdir: Path,
    table_id: str,
    game: str,
    broker_port: int,
    *,
    faults: FaultPlan | None = None,
    seed: int = 11,
    **config: Any,
) -> StudioTable:
    """A table's directory, its shoe (started: the pty exists) and its daemon (not started)."""
    workdir.mkdir(parents=True, exist_ok=True)
    shoe = ShoeSimulator(
        "angel-eye",
        workdir / "shoe",
        seed=seed,
        cut_card_depth=60,
        faults=faults,
        truth_path=workdir / "shoe-truth.jsonl",
    )
    shoe.start()
    config_path = write_config(
        workdir / f"{table_id}.toml",
        table_id=table_id,
        game=game,
        shoe_port=workdir / "shoe",
        broker_port=broker_port,
        **config,
    )
    daemon = DaemonProcess(config_path, workdir / "daemon.log")
    return StudioTable(table_id, game, workdir, shoe, daemon)


# --- the independent subscriber ------------------------------------------------------------------


class StreamWatcher:
    """Every table's ``events`` (in arrival order, repeats included), latest ``state`` and
    ``availability``, from one MQTT connection. With ``client_id``, a persistent session
    (clean session off): the broker keeps its QoS 1 messages while it is away.

    It is the tests' measure of delivery, so it stays a plain subscriber rather than the
    shared client (:class:`~controller.client.api_client.StudioClient`), which asks a table for the
    events it missed: what the broker delivered, each message's arrival time (latencies),
    a gap as a gap, ``$SYS`` topics."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str | None = None,
        username: str | None = None,
        password: str | None = None,
        extra_topics: tuple[str, ...] = (),
    ) -> None:
        self._lock = threading.Lock()
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.arrivals: dict[str, list[float]] = {}
        """When each of ``events`` arrived (wall clock, as the events' ``at``)."""
        self.states: dict[str, dict[str, Any]] = {}
        self.availability: dict[str, str] = {}
        self.other: dict[str, bytes] = {}
        """The last payload on each of ``extra_topics``' topics."""
        self.messages = 0
        self.connects = 0
        self.connected = threading.Event()
        self._topics = [
            (f"{PREFIX}/+/events", 1),
            (f"{PREFIX}/+/state", 1),
            (f"{PREFIX}/+/availability", 1),
            *((topic, 1) for topic in extra_topics),
        ]
        self.client = start_client(
            host,
            port,
            client_id or f"watcher-{uuid.uuid4().hex[:8]}",
            on_connect=self._on_connect,
            on_message=self._on_message,
            on_disconnect=self._on_disconnect,
            clean=client_id is None,
            login=(username, password) if username is not None else None,
            # A consumer that comes back soon after its broker does (paho's default backs
            # off to two minutes).
            reconnect_delay_s=(1, 2),
        )

    def _on_connect(self, client: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if reason.is_failure:
            return
        client.subscribe(self._topics)
        self.connects += 1
        self.connected.set()

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, _reason: Any, _p: Any) -> None:
        self.connected.clear()

    def _on_message(self, _client: Any, _u: Any, message: Any) -> None:
        topic = message.topic
        kind = topic.rsplit("/", 1)[1]
        table = _table_of(topic)
        arrived = time.time()
        with self._lock:
            if topic.startswith(f"{PREFIX}/"):
                self.messages += 1
            if kind == "events":
                self.events.setdefault(table, []).append(json.loads(message.payload))
                self.arrivals.setdefault(table, []).append(arrived)
            elif kind == "state":
                state = json.loads(message.payload)
                last = self.states.get(table)
                if last is None or state["seq"] >= last["seq"]:
                    self.states[table] = state
            elif kind == "availability":
                self.availability[table] = message.payload.decode()
            else:
                self.other[topic] = bytes(message.payload)

    def events_of(self, table: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events.get(table, ()))

    def latencies(self, table: str, kind: str) -> list[float]:
        """For each ``kind`` event of ``table`` (first arrival of each seq): seconds from its
        input (``at``) to its arrival here."""
        seen: set[int] = set()
        found = []
        with self._lock:
            pairs = list(zip(self.events.get(table, ()), self.arrivals.get(table, ()), strict=True))
        for event, arrived in pairs:
            if event["type"] == kind and event["seq"] not in seen and event.get("at"):
                seen.add(event["seq"])
                found.append(arrived - event["at"])
        return found

    def state_of(self, table: str) -> dict[str, Any] | None:
        with self._lock:
            return self.states.get(table)

    def caught_up(self, table: str, seq: int) -> bool:
        """Whether this table's events up to ``seq`` have all arrived (repeats aside)."""
        with self._lock:
            seen = {event["seq"] for event in self.events.get(table, ())}
        return seen.issuperset(range(1, seq + 1))

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


# --- the bots ----------------------------------------------------------------------------------


class MultiTableAccount:
    """One API account (platform or supervisor) for every table, on the shared client
    (:class:`~controller.client.api_client.StudioClient`, one MQTT connection): its latest state per
    table, what the bots need of its events (in ``seq`` order, gaps caught up by the client)
    and its answers, taken without waiting."""

    def __init__(self, host: str, port: int, role: str, name: str) -> None:
        self.role = role
        self.name = name
        self._lock = threading.Lock()
        self.states: dict[str, dict[str, Any]] = {}
        self.settled: dict[str, set[int]] = {}
        self.last_decision_request: dict[str, dict[str, Any]] = {}
        self.seen: dict[str, dict[int, str]] = {}
        """Every event's type by seq, per table."""
        # Kept from the client's updates as they come: the bots ask many times a second per
        # table, and a copy of a table's feed (its events) each time would cost the test
        # process what it measures of the daemons.
        self.studio = StudioClient(
            host, port, Account(role, name), prefix=PREFIX, on_update=self._on_update
        )
        # Retained states follow the SUBACK: from here the bots see every table that is up.
        self.connected = self.studio.subscribed

    def _on_update(self, update: TableUpdate) -> None:
        table, body = update.table_id, update.body
        with self._lock:
            if update.kind == "state":
                self.states[table] = body  # the client keeps the latest by seq
            elif update.kind == "epoch":
                self.seen.pop(table, None)
                self.settled.pop(table, None)
                self.last_decision_request.pop(table, None)
            elif update.kind == "event":
                self.seen.setdefault(table, {})[body["seq"]] = body["type"]
                if body["type"] == "round_settled":
                    self.settled.setdefault(table, set()).add(body["seq"])
                elif body["type"] == "decision_requested":
                    self.last_decision_request[table] = body

    def state(self, table: str) -> dict[str, Any] | None:
        with self._lock:
            return self.states.get(table)

    def rounds_settled(self, table: str) -> int:
        with self._lock:
            return len(self.settled.get(table, ()))

    def event_after(self, table: str, kind: str, seq: int) -> int | None:
        """The ``seq`` of the first ``kind`` event of ``table`` after ``seq``, if seen yet."""
        with self._lock:
            found = [
                number
                for number, seen in self.seen.get(table, {}).items()
                if seen == kind and number > seq
            ]
        return min(found, default=None)

    def decision_request(self, table: str) -> dict[str, Any] | None:
        with self._lock:
            return self.last_decision_request.get(table)

    def send(self, table: str, command: str, **args: Any) -> str:
        return self.studio.send(table, command, **args)

    def take_response(self, transaction: str) -> dict[str, Any] | None:
        """The table's answer if it came, else None (never waits); a request the broker
        refused (MQTT 5) is an answer that says so."""
        try:
            return self.studio.response(transaction, timeout=0)
        except TimeoutError:
            return None
        except BrokerRefused as refused:
            return {"ok": False, "message": f"the broker refused the request: {refused}"}

    def close(self) -> None:
        self.studio.close()


@dataclass
class _Pending:
    account: MultiTableAccount
    what: str
    transaction: str
    deadline: float
    seq: int
    """The ``seq`` of the state the request was sent on."""
    answered: bool = False


# The event each request publishes when it is done: the bots wait for it before acting on
# that table again, because the answer (its own topic) may overtake states published before
# the request was done, and acting on those would repeat the request.
DONE_EVENT: dict[str, str] = {
    "new_shoe": "shoe_started",
    "open_round": "round_opened",
    "decide": "decision_taken",
    "resume": "table_resumed",
}


def progress(state: dict[str, Any]) -> tuple[int, int | None]:
    """What must change before the bots act on a table again.

    Not the journal's head: the state is republished after every journaled row, also rows
    with nothing for the bots (a lock confirmation), and a dealer who drew again on those
    would draw a card out of turn. Every card dealt, request done or pause publishes an
    event (``seq``); a burn card publishes none, only the count left to burn.
    """
    awaiting = state.get("awaiting") or {}
    return state["seq"], awaiting.get("cards") if awaiting.get("what") == "burn" else None


@dataclass
class Seat:
    """What the bots keep of one table: its shoe (the dealer's hand) and their progress."""

    table_id: str
    draw: Callable[[], object]
    shuffle: Callable[[], None]
    rounds: int
    rounds_opened: int = 0
    draws: int = 0
    acted_on: tuple[int, int | None] | None = None
    """The progress (see :func:`progress`) of the state last acted on."""
    min_seq: int = 0
    """After a request was done: the state must show its event before the next action."""
    pending: _Pending | None = None
    decided: set[int] = field(default_factory=set)


class StudioBots:
    """The dealer, the platform and the supervisor of every table, from one thread.

    The reactions of :class:`simulators.mqtt_bots.TableBots`, from the same functions
    (:func:`~simulators.mqtt_bots.next_move`, :func:`~simulators.mqtt_bots.decision`,
    :func:`~simulators.mqtt_bots.resolution`: a new shoe when the table awaits one, a card
    when it deals, a round when the shoe is ready, a random decision when asked, a resume
    when paused, ``burn`` for cards lost to the line), served round-robin. A card to enter by
    hand is an error: this dealer never sees the cards.
    """

    def __init__(self, host: str, port: int, *, seed: int = 1) -> None:
        self.platform = MultiTableAccount(host, port, "platform", "platform")
        self.supervisor = MultiTableAccount(host, port, "supervisor", "alice")
        self.seats: list[Seat] = []
        self.errors: list[str] = []
        self.requests = 0
        self.response_s: dict[str, list[float]] = {}
        """Seconds from each request to its answer, by command."""
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def wait_connected(self, timeout: float = 10.0) -> bool:
        return self.platform.connected.wait(timeout) and self.supervisor.connected.wait(timeout)

    def seat(self, table_id: str, shoe: ShoeSimulator, rounds: int) -> None:
        self.seats.append(Seat(table_id, shoe.draw, shoe.new_shoe, rounds))

    def rounds_settled(self, table_id: str) -> int:
        return self.platform.rounds_settled(table_id)

    @property
    def done(self) -> bool:
        return all(self.rounds_settled(seat.table_id) >= seat.rounds for seat in self.seats)

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="studio-bots", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def close(self) -> None:
        self.stop()
        self.platform.close()
        self.supervisor.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            for seat in self.seats:
                try:
                    self._step(seat)
                except Exception as error:  # keep playing; the test reads the errors
                    self.errors.append(f"{seat.table_id}: {error!r}")
            time.sleep(PASS_PAUSE_S)

    def _request(
        self,
        seat: Seat,
        state: dict[str, Any],
        account: MultiTableAccount,
        command: str,
        **args: Any,
    ) -> None:
        transaction = account.send(seat.table_id, command, **args)
        self.requests += 1
        seat.pending = _Pending(
            account, command, transaction, time.monotonic() + RESPONSE_TIMEOUT_S, state["seq"]
        )

    def _answered(self, seat: Seat) -> bool:
        """Whether the seat is free to act: no request of its own unanswered, and the event
        of the last one done has arrived (then only states from it on count)."""
        pending = seat.pending
        if pending is None:
            return True
        now = time.monotonic()
        if not pending.answered:
            answer = pending.account.take_response(pending.transaction)
            if answer is None:
                return self._given_up(seat, now, f"no answer to {pending.what}")
            self.response_s.setdefault(pending.what, []).append(
                now - (pending.deadline - RESPONSE_TIMEOUT_S)
            )
            if not answer["ok"]:
                seat.pending = None
                if answer.get("error", {}).get("code") != "stale":
                    self.errors.append(f"{seat.table_id}: {pending.what}: {answer.get('message')}")
                return True
            pending.answered = True
            if pending.what == "open_round":
                seat.rounds_opened += 1
        done = self.platform.event_after(seat.table_id, DONE_EVENT[pending.what], pending.seq)
        if done is None:
            return self._given_up(seat, now, f"{pending.what} done, but no event said so")
        seat.pending = None
        seat.min_seq = done
        return True

    def _given_up(self, seat: Seat, now: float, error: str) -> bool:
        """Whether the seat's request, still awaited, is given up: not before its deadline;
        then ``error`` is noted and the seat is free to act again."""
        assert seat.pending is not None
        if now < seat.pending.deadline:
            return False
        self.errors.append(f"{seat.table_id}: {error}")
        seat.pending = None
        return True

    def _step(self, seat: Seat) -> None:
        if not self._answered(seat):
            return
        table = seat.table_id
        state = self.platform.state(table)
        if state is None:
            return
        key = progress(state)
        if state["seq"] < seat.min_seq or key == seat.acted_on:
            return
        move = next_move(state, seat.rounds_opened < seat.rounds)
        if move == NEW_SHOE:
            seat.shuffle()
            self._request(seat, state, self.supervisor, "new_shoe")
        elif move == DRAW:
            seat.draw()
            seat.draws += 1
        elif move == OPEN_ROUND:
            self._request(seat, state, self.platform, "open_round")
        elif move == DECIDE:
            request = self.platform.decision_request(table)
            if request is None or request["seq"] in seat.decided:
                return  # the request itself is still on its way
            seat.decided.add(request["seq"])
            self._request(seat, state, self.platform, "decide", **decision(request, self._rng))
        elif move == RESOLVE:
            pause = state["pause"] or {}
            resolved = resolution(pause)
            if resolved is not None and resolved[0] == ENTER_CARD:
                needs = " ".join(pause.get("needs", []))
                self.errors.append(f"{table}: a card needs entering by hand: {needs}")
            elif resolved is not None:
                command, args = resolved
                self._request(seat, state, self.supervisor, command, **args)
        else:
            return
        seat.acted_on = key
