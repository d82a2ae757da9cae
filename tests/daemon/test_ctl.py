"""``livetable ctl`` against the real thing: ``livetable ctl`` and ``livetable run`` as
subprocesses, the daemon's shoe a simulator on a pty, a real mosquitto with the production
password file, ACL and one connection per account (``secure_mqtt_broker``).

Every action succeeds where the table's state allows it (checked on MQTT by an independent
subscriber, and in the journal under the supervisor's name); every failure is one line on
stderr and a non-zero exit: an unreachable broker, a wrong password, an unknown table, an
action the state does not allow (the table's own words), a round id that is not the round
in play, and a viewer's pause. ``ctl audit`` lists the commands with their outcomes, as CSV
too, whose formula-like cells a spreadsheet never runs. The password is never printed.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.client.api_client import Account, ApiClient
from controller.tools.ctl_text import AUDIT_CSV_HEADER
from simulators.shoe.simulator import FaultPlan
from tests.daemon.test_security import (  # noqa: F401 (peers, tables, tls_broker: fixtures)
    BASE,
    Peer,
    Table,
    TlsBroker,
    latest_state,
    peers,
    request_topic,
    response_topic,
    tables,
    tls_broker,
    wait_online,
)
from tests.support.broker import BrokerProcess, free_port
from tests.support.daemon import REPO_ROOT, unique_by_seq
from tests.support.mqtt_proxy import CuttingProxy
from tests.support.wait import wait_until

TIMEOUT_S = 30.0
CTL_TIMEOUT_S = 60.0


@dataclass
class Ctl:
    """``livetable ctl`` as a subprocess, logging in to the broker as a given account."""

    port: int
    workdir: Path
    users: dict[str, tuple[str, str]]

    def password_file(self, role: str) -> Path:
        path = self.workdir / f"{role}.password"
        path.write_text(self.users[role][1] + "\n")
        return path

    def __call__(
        self,
        *argv: str,
        role: str = "supervisor",
        table: str = "t1",
        port: int | None = None,
        password: str | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        user = self.users[role][0]
        credentials = ["--password-file", str(self.password_file(role))] if password is None else []
        environment = {**os.environ, **(env or {})}
        environment.pop("LIVETABLE_PASSWORD", None)
        if password is not None:
            environment["LIVETABLE_PASSWORD"] = password
        command = [
            sys.executable,
            "-m",
            "controller.tools.cli",
            "ctl",
            "--table",
            table,
            "--port",
            str(port or self.port),
            "--user",
            user,
            *credentials,
            *argv,
        ]
        done = subprocess.run(
            command,
            cwd=REPO_ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=CTL_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        for secret in {password, self.users[role][1]} - {None}:
            assert secret not in done.stdout + done.stderr, "the password was printed"
        return done


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    """``done`` failed with exactly one line on stderr, ``livetable: error: ...``, which
    says each of ``words``; that line."""
    assert done.returncode != 0, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("livetable: error: "), lines
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    return done.stdout


@dataclass
class Studio:
    broker: BrokerProcess
    table: Table
    watch: Peer
    ctl: Ctl


@pytest.fixture
def studio(
    secure_mqtt_broker: BrokerProcess,
    tables: Callable[..., Table],  # noqa: F811
    peers: Callable[..., Peer],  # noqa: F811
    tmp_path: Path,
) -> Studio:
    """Table t1 on the secure broker with its own account, online, and the platform's
    account watching everything it may read (and opening rounds)."""
    broker = secure_mqtt_broker
    table = tables(broker.port, account=broker.users["table"])
    username, password = broker.users["platform"]
    watch = peers(
        broker.port, username=username, password=password, subscribe=(f"{BASE}/#",)
    ).wait_ready()
    table.daemon.start()
    wait_online(table, watch)
    return Studio(broker, table, watch, Ctl(broker.port, tmp_path, broker.users))


def state_of(studio: Studio, predicate: Callable[[dict[str, Any]], Any], what: str) -> Any:
    def check() -> Any:
        assert studio.table.daemon.alive(), studio.table.daemon.log()[-3000:]
        state = latest_state(studio.watch)
        return state if state is not None and predicate(state) else None

    return wait_until(check, TIMEOUT_S, what)


def events(studio: Studio, kind: str) -> list[dict[str, Any]]:
    found = [m.json() for m in studio.watch.on(f"{BASE}/events")]
    return [event for event in found if event["type"] == kind]


def draw_until(studio: Studio, phases: tuple[str, ...]) -> dict[str, Any]:
    """The dealer draws whenever the table waits for a card, until it is in ``phases``."""
    acted_on: Any = None

    def step() -> dict[str, Any] | None:
        nonlocal acted_on
        state = latest_state(studio.watch)
        assert studio.table.daemon.alive(), studio.table.daemon.log()[-3000:]
        if state is None:
            return None
        if state["phase"] in phases:
            return state
        key = (state["seq"], state["journal"]["seq"])
        if state["phase"] in ("BURN_REVEAL", "BURNING", "DEALING") and key != acted_on:
            studio.table.shoe.draw()
            acted_on = key
        return None

    return wait_until(step, TIMEOUT_S, f"the table in {phases}")


def open_round(studio: Studio) -> int:
    answer = studio.watch.ask(
        request_topic("platform", "platform", "open_round"),
        {"transaction": uuid.uuid4().hex},
        answer_on=response_topic("platform"),
    ).json()
    assert answer["ok"], answer
    state = state_of(studio, lambda s: s["round"] is not None, "the round open")
    return int(state["round"]["id"])


def test_every_action_succeeds_where_the_state_allows_it(studio: Studio) -> None:
    ctl = studio.ctl
    # status, readable and for scripts
    text = ok(ctl("status"))
    assert "table t1: online" in text and "AWAITING_SHUFFLE" in text, text
    status = json.loads(ok(ctl("status", "--json")))
    assert status["availability"] == "online" and status["state"]["table"] == "t1"

    # new-shoe, then the dealer reveals and burns
    assert ok(ctl("new-shoe")).startswith("t1: "), "the table's answer, for a person"
    draw_until(studio, ("SHOE_READY",))
    assert events(studio, "shoe_started")[-1]["data"]["by"] == "alice"

    # pause then resume, the table's answer as JSON; watch sees the pause. One connection
    # per account (the broker's rule): the watcher is bob, the actions are alice's.
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.tools.cli",
            "ctl",
            "--table",
            "t1",
            "--port",
            str(ctl.port),
            "--user",
            ctl.users["other_supervisor"][0],
            "--password-file",
            str(ctl.password_file("other_supervisor")),
            "watch",
            "--count",
            "1",
            "--json",
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        # The watcher is following once its first line (the state) is out.
        first = json.loads(watcher.stdout.readline())  # type: ignore[union-attr]
        assert first["state"]["phase"] == "SHOE_READY", first
        answer = json.loads(ok(ctl("pause", "--reason", "spilled drink", "--json")))
        assert answer["ok"] and answer["command"] == "pause", answer
        out, err = watcher.communicate(timeout=CTL_TIMEOUT_S)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
    assert watcher.returncode == 0, err
    watched = [json.loads(line) for line in out.splitlines()]
    assert any(m.get("type") == "table_paused" for m in watched), watched
    paused = state_of(studio, lambda s: s["phase"] == "PAUSED", "the pause")
    assert paused["pause"]["by"] == "alice" and paused["pause"]["reason"] == "supervisor"
    assert "PAUSED" in ok(ctl("status")) and "spilled drink" in ok(ctl("status"))
    ok(ctl("resume"))
    state_of(studio, lambda s: s["phase"] == "SHOE_READY", "resumed")

    # cancel: refused for a round id that is not the round in play, then done
    round_id = open_round(studio)
    one_line_error(
        ctl("cancel", "--round", str(round_id + 1)), f"round {round_id + 1}", "not the round"
    )
    assert latest_state(studio.watch)["round"]["id"] == round_id  # type: ignore[index]
    ok(ctl("cancel", "--round", str(round_id), "--reason", "dispute"))
    voided = state_of(studio, lambda s: s["round"] is None, "the round voided")
    assert voided["phase"] == "SHOE_READY"
    [void] = events(studio, "round_voided")
    assert (void["data"]["round_id"], void["data"]["by"]) == (round_id, "alice"), void

    # history of that round: every event from its opening to its voiding
    history = [
        json.loads(line)
        for line in ok(ctl("history", "--round", str(round_id), "--json")).splitlines()
    ]
    assert history[0]["type"] == "round_opened" and history[-1]["type"] == "round_voided"
    assert [e["seq"] for e in history] == list(range(history[0]["seq"], history[-1]["seq"] + 1))
    assert "round_voided" in ok(ctl("history", "--round", str(round_id)))

    # resume with a resolution: a card drawn between rounds pauses the table; it is burned
    studio.table.shoe.draw()
    out_of_turn = state_of(studio, lambda s: s["phase"] == "PAUSED", "the card out of turn")
    assert any("accept or burn" in need for need in out_of_turn["pause"]["needs"]), out_of_turn
    ok(ctl("resume", "--resolution", "burn"))
    state_of(studio, lambda s: s["phase"] == "SHOE_READY", "the card burned")
    assert events(studio, "cards_burned")[-1]["data"]["count"] == 1
    assert events(studio, "table_resumed")[-1]["data"]["resolution"] == "burn"

    # enter-card: the shoe cannot read the next card, the table pauses for it
    studio.table.shoe.faults = FaultPlan(unreadable_rate=1.0)
    second = open_round(studio)
    misread = draw_until(studio, ("PAUSED",))
    studio.table.shoe.faults = FaultPlan()
    assert any("enter_card" in need for need in misread["pause"]["needs"]), misread["pause"]
    card = studio.table.shoe.truth[-1].card
    assert card is not None
    ok(ctl("enter-card", card.lower()))
    entered = state_of(studio, lambda s: s["phase"] != "PAUSED", "the card entered")
    dealt = events(studio, "card_dealt")[-1]["data"]
    assert (dealt["source"], dealt["card"]) == ("supervisor", card), dealt
    assert entered["round"]["id"] == second

    # end-shoe between rounds (the round is cancelled first), then a new shoe
    ok(ctl("cancel", "--round", str(second)))
    state_of(studio, lambda s: s["phase"] == "SHOE_READY", "the second round voided")
    ok(ctl("end-shoe", "--reason", "end of shift"))
    state_of(studio, lambda s: s["phase"] == "AWAITING_SHUFFLE", "the shoe ended")
    ok(ctl("new-shoe"))
    state_of(studio, lambda s: s["phase"] == "BURN_REVEAL", "the next shoe")

    # The shared client's catch-up, paged three at a time, is the whole series without a gap,
    # what the independent subscriber saw.
    viewer = ApiClient(
        "127.0.0.1",
        studio.broker.port,
        "t1",
        Account("viewer", *studio.broker.users["viewer"]),
        client_id=studio.broker.users["viewer"][0],
    )
    try:
        assert viewer.wait_connected(TIMEOUT_S), viewer.refused
        series = viewer.catch_up(limit=3)
    finally:
        viewer.close()
    published = unique_by_seq([m.json() for m in studio.watch.on(f"{BASE}/events")])
    assert series.events == published and series.last_seq == published[-1]["seq"]
    assert series.epoch == latest_state(studio.watch)["epoch"]  # type: ignore[index]

    # The journal has every command under alice's name, as the broker saw her.
    assert studio.table.daemon.kill(signal.SIGTERM) == 0
    commanded = studio.table.journal_rows("SupervisorCommanded")
    assert {row["command_id"].split("/")[0] for row in commanded} == {"alice"}, commanded


def test_each_failure_is_one_line_and_a_failing_exit(studio: Studio) -> None:
    ctl = studio.ctl
    before = latest_state(studio.watch)
    assert before is not None
    # An unreachable broker.
    one_line_error(ctl("status", port=free_port()), "cannot be reached", "connection refused")
    # A wrong password (from the environment).
    one_line_error(ctl("status", password="not-the-password"), "refused", "alice")
    # An unknown table.
    one_line_error(ctl("--wait-s", "1", "status", table="t9"), "no table 't9'")
    # An action the state does not allow: the table's refusal, in its words.
    one_line_error(ctl("resume"), "refused resume (refused)", "not paused")
    one_line_error(ctl("end-shoe"), "refused end_shoe (refused)")
    # The round-id confirmation with no round in play.
    one_line_error(ctl("cancel", "--round", "1"), "no round is in play")
    # A viewer may not pause: the broker will not pass it on under the supervisor's role,
    # and the table refuses it under the viewer's own.
    one_line_error(ctl("pause", "--reason", "x", role="viewer"), "broker refused", "Not authorized")
    one_line_error(
        ctl("--role", "viewer", "pause", "--reason", "x", role="viewer"),
        "refused pause (forbidden)",
    )
    # The viewer still reads.
    assert "table t1: online" in ok(ctl("status", role="viewer"))
    after = latest_state(studio.watch)
    assert after is not None and after["phase"] == before["phase"] and after["pause"] is None
    # An offline table: its daemon stopped, nothing is sent.
    assert studio.table.daemon.kill(signal.SIGTERM) == 0
    wait_until(
        lambda: studio.watch.on(f"{BASE}/availability")[-1].payload == b"offline",
        TIMEOUT_S,
        "the table offline",
    )
    one_line_error(ctl("pause", "--reason", "x"), "offline", "nothing sent")


def test_watch_catches_up_the_events_it_missed_while_its_link_was_down(studio: Studio) -> None:
    """``watch`` through a link cut right after it got the pause: the resume is published
    while it is away, and it shows it anyway (from the ``events`` catch-up, the retained
    state being ahead of it), once and in order."""
    ctl, broker = studio.ctl, studio.broker
    delivered: list[bytes] = []

    def cut_after_the_pause(topic: str, body: bytes) -> bool:
        if topic != f"{BASE}/events":
            return False
        delivered.append(body)
        return b'"type":"table_paused"' in body

    proxy = CuttingProxy("127.0.0.1", broker.port, cut_after_the_pause, cuts=1)
    alice = ApiClient(
        "127.0.0.1",
        broker.port,
        "t1",
        Account("supervisor", *broker.users["supervisor"]),
        client_id=broker.users["supervisor"][0],
    )
    user, _password = broker.users["other_supervisor"]
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.tools.cli",
            "ctl",
            "--table",
            "t1",
            "--port",
            str(proxy.port),
            "--user",
            user,
            "--password-file",
            str(ctl.password_file("other_supervisor")),
            "--json",
            "watch",
            "--count",
            "2",
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert alice.wait_connected(TIMEOUT_S), alice.refused
        first = json.loads(watcher.stdout.readline())  # type: ignore[union-attr]
        assert first["state"]["phase"] == "AWAITING_SHUFFLE", first
        assert alice.request("pause", reason="link test")["ok"]
        wait_until(lambda: proxy.deliveries >= 1, TIMEOUT_S, "the pause through the proxy")
        # The watcher's link is down now (paho waits a second before it reconnects).
        assert alice.request("resume")["ok"]
        out, err = watcher.communicate(timeout=CTL_TIMEOUT_S)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        alice.close()
        proxy.close()
    assert watcher.returncode == 0, err
    shown = [m for line in out.splitlines() if "type" in (m := json.loads(line))]
    assert [m["type"] for m in shown] == ["table_paused", "table_resumed"], shown
    assert shown[1]["seq"] == shown[0]["seq"] + 1
    # The resume never crossed the link live: the catch-up brought it.
    assert not any(b'"type":"table_resumed"' in body for body in delivered), delivered


def test_ctl_speaks_tls_to_the_broker_with_the_ca_given(
    tls_broker: TlsBroker,  # noqa: F811
    tables: Callable[..., Table],  # noqa: F811
    peers: Callable[..., Peer],  # noqa: F811
) -> None:
    port = tls_broker.tls_port
    table = tables(port, extra_mqtt=f'[mqtt.tls]\nca_file = "{tls_broker.ca_file}"\n')
    table.daemon.start()
    viewer = peers(port, subscribe=(f"{BASE}/#",), tls_ca=tls_broker.ca_file).wait_ready()
    wait_online(table, viewer)
    command = [
        *(sys.executable, "-m", "controller.tools.cli", "ctl", "--table", "t1"),
        *("--port", str(port)),
    ]

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *argv],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=CTL_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )

    assert "table t1: online" in ok(run("--tls-ca", str(tls_broker.ca_file), "status"))
    # Plain MQTT to the TLS listener: one line, no state.
    one_line_error(run("status"), "closed the connection before accepting it")


def test_the_password_is_asked_for_on_a_terminal_without_echo(studio: Studio) -> None:
    """No file and no environment variable: on a terminal (here a pty, ctl in a session of
    its own so that it has no other terminal to ask on), ctl asks, with echo off."""
    user, password = studio.broker.users["supervisor"]
    master, slave = os.openpty()
    environment = {k: v for k, v in os.environ.items() if k != "LIVETABLE_PASSWORD"}
    try:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "controller.tools.cli", "ctl", "--table", "t1"),
                *("--port", str(studio.broker.port), "--user", user, "status"),
            ],
            cwd=REPO_ROOT,
            env=environment,
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            prompt = process.stderr.read(len(f"password for {user}: "))  # type: ignore[union-attr]
            assert prompt == f"password for {user}: ", prompt
            os.write(master, password.encode() + b"\n")
            out, err = process.communicate(timeout=CTL_TIMEOUT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 0, err
        assert "table t1: online" in out
        # What the terminal showed back: not the password (echo was off). Our end of the
        # slave stays open until this is read: a pty with no slave open reads as EIO.
        os.set_blocking(master, False)
        try:
            echoed = os.read(master, 4096)
        except BlockingIOError:
            echoed = b""
        assert password.encode() not in echoed and password not in out + err
    finally:
        os.close(master)
        os.close(slave)


def test_a_cancel_that_names_another_round_voids_nothing(studio: Studio) -> None:
    """The round ends and the next opens between the moment a supervisor (or ``ctl``) read
    the state and the moment the table takes the cancel: a cancel that names its round is
    refused for any other, and nothing is journaled for it."""
    alice, password = studio.broker.users["supervisor"]
    supervisor = ApiClient(
        "127.0.0.1",
        studio.broker.port,
        "t1",
        Account("supervisor", alice, password),
        client_id=alice,
    )
    try:
        assert supervisor.wait_connected(TIMEOUT_S), supervisor.refused
        assert supervisor.request("new_shoe")["ok"]
        draw_until(studio, ("SHOE_READY",))
        in_play = open_round(studio)
        rows_before = len(studio.table.entries())
        stale = supervisor.request("cancel", round_id=in_play - 1, reason="the last round")
        assert not stale["ok"] and stale["error"]["code"] == "refused", stale
        assert f"round {in_play - 1} is not the round in play" in stale["message"], stale
        assert events(studio, "round_voided") == []
        assert len(studio.table.entries()) == rows_before  # refused, and not journaled
        voided = supervisor.request("cancel", round_id=in_play, reason="this round")
        assert voided["ok"], voided
        state_of(studio, lambda s: s["round"] is None, "the round voided")
        assert [e["data"]["round_id"] for e in events(studio, "round_voided")] == [in_play]
    finally:
        supervisor.close()


def test_audit_lists_every_command_and_its_csv_runs_nothing_in_a_spreadsheet(
    studio: Studio,
) -> None:
    """``ctl audit``: the supervisor's commands with the table's answers, refusals
    included, readable, as JSON lines and as CSV (which the csv module reads back, with the
    reason typed as a formula defused); a viewer reads it, the platform may not."""
    ctl = studio.ctl
    ok(ctl("pause", "--reason", '=HYPERLINK("http://x.example","y")'))
    one_line_error(
        ctl("resume", "--resolution", "burn"), "refused resume (refused)", "nothing to burn"
    )
    ok(ctl("resume"))

    text = ok(ctl("audit"))
    lines = text.splitlines()
    assert lines[0].startswith("table t1: 3 supervisor command(s) after journal row 0"), text
    assert [line.split()[5] for line in lines[1:]] == ["pause", "resume", "resume"], text
    assert "REFUSED (refused): no card was drawn out of turn: nothing to burn" in lines[2], text
    assert all(" alice " in line and " supervisor " in line for line in lines[1:]), text

    entries = [json.loads(line) for line in ok(ctl("audit", "--json")).splitlines()]
    assert [(e["command"], e["ok"]) for e in entries] == [
        ("pause", True),
        ("resume", False),
        ("resume", True),
    ]

    rows = list(csv.reader(io.StringIO(ok(ctl("audit", "--csv")))))
    header, *body = rows
    assert header == list(AUDIT_CSV_HEADER)
    assert len(body) == 3 and all(len(row) == len(header) for row in body)
    cell = dict(zip(header, body[0], strict=True))
    assert cell["reason"] == '\'=HYPERLINK("http://x.example","y")', cell
    assert (cell["account"], cell["command"], cell["ok"]) == ("alice", "pause", "true")
    assert cell["journal_seq"] == str(entries[0]["journal_seq"])
    refused = dict(zip(header, body[1], strict=True))
    assert (refused["ok"], refused["code"]) == ("false", "refused")
    assert refused["message"] == "no card was drawn out of turn: nothing to burn"
    assert not any(value.startswith(("=", "+", "-", "@")) for row in body for value in row)

    # From a row on: only what came after it.
    after = ok(ctl("audit", "--json", "--since", str(entries[0]["journal_seq"])))
    assert [json.loads(line) for line in after.splitlines()] == entries[1:]
    # A viewer reads it; the platform's account is refused by the table.
    assert "resume" in ok(ctl("--role", "viewer", "audit", role="viewer"))
    one_line_error(ctl("--role", "platform", "audit", role="platform"), "refused audit (forbidden)")
