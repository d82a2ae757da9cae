"""The table's storage under attack: a full disk, two daemons on one journal, request floods,
and a journal started afresh. ``livetable run`` as a subprocess, its shoe a simulator on a
real pty, a real mosquitto.

- A disk that fills during play stops the table with one line naming the file, SQLite's
  words and the free space, and a non-zero exit; a restart while it is still full fails
  with that line again (no crash loop of other errors); once space is freed, a restart
  resumes with everything the table had acknowledged, the round paused ``recovered``.
- A second daemon on the same journal exits at once with one line naming the holder's pid;
  the first never drops, and the read-only journal tools still read the held journal.
- A flood of 10,000 requests from one account adds at most 200 journal rows (answered
  ``rate_limited`` beyond the account's budget), and the table still answers the others.
- Every journal has an epoch, in the state and in the ``events`` answer: a new journal
  gives another one, with ``seq`` starting again at 1.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.kernel.cards import parse_card
from controller.service.config import LivetableConfig, MqttConfig
from controller.service.daemon import TableDaemon
from controller.service.journal import Journal
from controller.service.journal_files import JournalWriteError
from controller.service.journaled_table import config_of, replay
from controller.service.outbox import outbox_path
from controller.table.config import TableConfig
from controller.table.events import CardDrawn, SupervisorCommanded
from tests.daemon.test_security import (
    BASE,
    Peer,
    Table,
    request_topic,
    response_topic,
    wait_online,
)
from tests.support.api_schema import validate_message
from tests.support.broker import BrokerProcess
from tests.support.daemon import REPO_ROOT, DaemonProcess, SimulatedTable
from tests.support.wait import wait_until

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
FLOOD = 10_000
FLOOD_ROWS_MAX = 200
# The journal and its outbox on a filesystem of this size: their write-ahead logs (up to
# about 4 MiB each before SQLite folds them back) fit, so it fills when the test fills it.
SMALL_DISK = "16m"


# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Any]:
    """``small_disk(size)``: a tmpfs of ``size`` (``"1m"``), mounted for the test and
    unmounted after it; skipped where mounting is not allowed."""
    mounts: list[Path] = []

    def mount(size: str) -> Path:
        folder = tmp_path / f"small-disk-{len(mounts)}"
        folder.mkdir()
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs for the journal needs root")
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
        )
        if mounted.returncode != 0:
            pytest.skip(
                f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}"
            )
        mounts.append(folder)
        return folder

    try:
        yield mount
    finally:
        for folder in mounts:
            subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


@pytest.fixture
def roomy_broker(tmp_path: Path, start_mosquitto: Any) -> tuple[str, int]:
    """An open broker that queues for a slow subscriber as many messages as the shipped
    configuration does (``max_queued_messages``): the test's tap reads every answer of a
    flood, which mosquitto's default of 1000 would drop."""
    broker = start_mosquitto(
        tmp_path / "broker", extra_config="allow_anonymous true\nmax_queued_messages 200000\n"
    )
    return broker.host, broker.port


def grow(folder: Path, size: str) -> None:
    """Give the tmpfs at ``folder`` more room (space freed, as far as the table can tell)."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(folder)], check=True)


def fill(folder: Path) -> Path:
    """Fill ``folder``'s filesystem to the last byte with one file; return it."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            block = b"\0" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as error:
                    assert error.errno == errno.ENOSPC, error
                    break
    finally:
        os.close(fd)
    assert shutil.disk_usage(folder).free < 4096
    return filler


def ended(daemon: DaemonProcess, timeout_s: float, what: str) -> int:
    """Wait for the daemon to exit on its own; its exit status."""
    wait_until(lambda: not daemon.alive(), timeout_s, what)
    assert daemon.process is not None
    return int(daemon.process.returncode)


def storage_lines(log: str) -> list[str]:
    """The lines that report a journal or outbox that cannot be written."""
    return [line for line in log.splitlines() if "cannot " in line and " free of " in line]


def rows(journal: Path) -> int:
    with Journal(journal, read_only=True) as opened:
        return opened.last_seq


def round_in_progress(journal: Path) -> bool:
    """Whether the journal ends inside a round (as its replay says)."""
    with Journal(journal, read_only=True) as opened:
        config = config_of(opened)
        machine = replay(opened, config, config.operational())
    return machine.round_in_progress() is not None


def responses(table: SimulatedTable, account: str) -> dict[str, dict[str, Any]]:
    """Every answer the broker carried to ``account`` (the open broker lets the tap read
    them all), by transaction."""
    topic = f"livetable/t1/response/{account}"
    found: dict[str, dict[str, Any]] = {}
    for got, body in list(table.raw):
        if got == topic:
            answer = json.loads(body)
            found[str(answer["transaction"])] = answer
    return found


def catch_up(client: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Every event the table holds, paged with ``events`` from 0; and each answer's epoch."""
    events: list[dict[str, Any]] = []
    epochs: list[str] = []
    since = 0
    while True:
        answer = client.request("events", since=since)
        assert answer["ok"], answer
        validate_message("livetable/t1/response/x", json.dumps(answer).encode())
        data = answer["data"]
        epochs.append(data["epoch"])
        events += data["events"]
        if not data["more"]:
            return events, epochs
        since = events[-1]["seq"]


def outbox_config(tmp_path: Path) -> LivetableConfig:
    """A table whose daemon is built but never connected (no broker)."""
    return LivetableConfig(
        table=TableConfig(table_id="t1", game="baccarat", journal_path=tmp_path / "t1.journal"),
        mqtt=MqttConfig(host="127.0.0.1", port=1),
    )


def journal_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LIVETABLE, "journal", *args], capture_output=True, text=True, cwd=REPO_ROOT, timeout=60
    )


# -- a full disk -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("how", ["filled-in-a-round", "a-1-MiB-disk"])
def test_a_full_disk_stops_the_table_with_one_line_and_after_space_is_freed_it_resumes(
    tmp_path: Path, small_disk: Any, mqtt_broker: tuple[str, int], how: str
) -> None:
    """``filled-in-a-round``: a roomy disk filled by another file while betting is open, then
    that file removed. ``a-1-MiB-disk``: the journal on 1 MiB, which play fills by itself
    wherever it happens to be; then the disk is made larger."""
    disk = small_disk(SMALL_DISK if how == "filled-in-a-round" else "1m")
    table = SimulatedTable(disk / "table", *mqtt_broker, "baccarat", rounds=1000, betting_s=1.0)
    # The log is not on the small disk: what the daemon says there must reach the test.
    table.daemon.log_path = tmp_path / "daemon.log"
    journal = disk / "table" / "t1.journal"
    try:
        table.daemon.start()
        table.bots.start()
        if how == "filled-in-a-round":
            wait_until(lambda: table.bots.rounds_settled >= 2, 90, "two rounds settled")
            # Betting is open: what the table journals next (betting closing) is in a round.
            wait_until(
                lambda: (table.viewer.state or {}).get("phase") == "BETTING", 30, "betting open"
            )
            filler = fill(disk)
        status = ended(table.daemon, 120, "the daemon to stop on the full disk")
        table.bots.stop()
        assert status != 0
        log = table.daemon.log()
        lines = storage_lines(log)
        assert len(lines) == 1, log[-3000:]
        assert "disk is full" in lines[0] and str(disk) in lines[0], lines
        for bad in ("Traceback", "internal error", "cannot rollback"):
            assert bad not in log, log[-3000:]
        wait_until(lambda: table.viewer.availability == "offline", 10, "availability offline")
        seen = {event["seq"]: event for event in table.viewer.events}
        answered = {
            f"{account}/{transaction}"
            for account in (table.platform.account.name, table.supervisor.account.name)
            for transaction, answer in responses(table, account).items()
            if answer["ok"]
        }
        assert answered, "the bots had commands taken before the disk filled"
        in_round = round_in_progress(journal)
        assert in_round or how != "filled-in-a-round"

        # Started again on the full disk: the same line, the same clean exit, every time.
        for attempt in range(2):
            before = len(table.daemon.log())
            table.daemon.start()
            assert ended(table.daemon, 30, f"restart {attempt + 1} on the full disk") != 0
            again = table.daemon.log()[before:]
            assert storage_lines(again) == lines, again[-3000:]
            for bad in ("Traceback", "internal error", "cannot rollback"):
                assert bad not in again, again[-3000:]

        # Space freed: the table resumes with all it acknowledged, a round paused.
        if how == "filled-in-a-round":
            filler.unlink()
        else:
            grow(disk, SMALL_DISK)
        rows_at_failure = rows(journal)
        before = len(table.daemon.log())
        table.daemon.start()
        wait_until(
            lambda: (
                table.viewer.availability == "online"
                and (table.viewer.state or {}).get("journal", {}).get("seq", 0) > rows_at_failure
            ),
            30,
            "the table back, its start journaled",
        )
        state = table.viewer.state
        assert state is not None and table.daemon.alive(), table.daemon.log()[before:][-3000:]
        if in_round:
            assert state["phase"] == "PAUSED" and state["pause"]["reason"] == "recovered", state
        held, _epochs = catch_up(table.supervisor)
        by_seq = {event["seq"]: event for event in held}
        assert [seq for seq in seen if by_seq.get(seq) != seen[seq]] == []
        with Journal(journal, read_only=True) as opened:
            taken = {
                entry.fields.get("command_id")
                for entry in opened.entries()
                if "command_id" in entry.fields
            }
        assert answered - taken == set(), "acknowledged commands missing from the journal"
        # And it plays on.
        settled = table.bots.rounds_settled
        table.bots.start()
        wait_until(lambda: table.bots.rounds_settled > settled, 60, "a round after the restart")
        assert table.daemon.stop() == 0
    finally:
        table.close()


def test_an_outbox_that_cannot_be_written_stops_the_table_and_the_next_start_repairs_it(
    tmp_path: Path,
) -> None:
    """The outbox fails after its journal row was committed (SQLite's own page limit stands
    for the full disk): the error names the outbox, not a failed rollback; the table takes
    nothing more; the next start writes that row's messages from the journal."""
    daemon = TableDaemon(outbox_config(tmp_path), shoe=False)
    runtime = daemon.runtime
    try:
        daemon.publications.live()
        daemon.assembled.start(at=99.0)
        runtime.handle(SupervisorCommanded("alice/1", "new_shoe", "alice", "supervisor", 100.0))
        (pages,) = daemon.outbox._db.execute("PRAGMA page_count").fetchone()
        daemon.outbox._db.execute(f"PRAGMA max_page_count = {pages}")
        for number in range(400):
            runtime.handle(
                SupervisorCommanded(
                    f"alice/p{number}", "pause", "alice", "supervisor", 101.0 + number, "again"
                )
            )
            if runtime.failure is not None:
                break
        failure = runtime.failure
        assert isinstance(failure, JournalWriteError), failure
        message = str(failure)
        assert str(outbox_path(tmp_path / "t1.journal")) in message and " free of " in message
        assert "rollback" not in message
        journal = daemon.assembled.table.journal
        rows_then = journal.last_seq
        assert daemon.outbox.last_journal_seq == rows_then - 1  # its messages not kept
        assert runtime.handle(CardDrawn(parse_card("KD"), None, 999.0)) == []
        assert journal.last_seq == rows_then  # nothing more taken
    finally:
        daemon.close()
    again = TableDaemon(outbox_config(tmp_path), shoe=False)
    try:
        assert again.outbox.last_journal_seq == rows_then
        assert again.publications.seq == again.outbox.last_seq
    finally:
        again.close()


# -- one daemon per journal ------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_daemon_on_the_same_journal_exits_at_once_and_the_first_never_drops(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    table = SimulatedTable(tmp_path / "table", *mqtt_broker, "baccarat", rounds=4)
    journal = tmp_path / "table" / "t1.journal"
    try:
        table.daemon.start()
        table.bots.start()
        wait_until(lambda: table.bots.rounds_settled >= 1, 60, "a round settled")
        second = DaemonProcess(table.config_path, tmp_path / "second.log")
        second.start()
        assert ended(second, 15, "the second daemon to give up") != 0
        lines = second.log().strip().splitlines()
        assert table.daemon.process is not None
        assert len(lines) == 1, lines
        assert f"pid {table.daemon.process.pid}" in lines[0] and str(journal) in lines[0], lines
        # The read-only tools read the journal the daemon holds.
        for args in (["verify", str(journal)], ["rounds", str(journal)]):
            result = journal_tool(*args)
            assert result.returncode == 0, result.stderr
        exported = journal_tool("export", str(journal), "--round", "1")
        assert exported.returncode == 0 and exported.stdout, exported.stderr
        wait_until(lambda: table.bots.done, 90, "the rounds played on")
        assert table.daemon.alive()
        log = table.daemon.log()
        assert log.count("connected to the broker") == 1, log[-3000:]
        assert "lost the broker" not in log
        assert not table.bots.errors, table.bots.errors[:5]
    finally:
        table.close()


# -- floods ----------------------------------------------------------------------------------


def _flood(table: SimulatedTable, client: Any, requests: list[tuple[str, dict[str, Any]]]) -> None:
    for number, (command, args) in enumerate(requests):
        client.send(command, transaction=f"flood-{number}", **args)


@pytest.mark.slow
def test_a_flood_of_refused_requests_adds_few_journal_rows_and_others_are_still_answered(
    tmp_path: Path, roomy_broker: tuple[str, int]
) -> None:
    table = SimulatedTable(tmp_path / "table", *roomy_broker, "baccarat", rounds=0)
    journal = tmp_path / "table" / "t1.journal"
    try:
        table.daemon.start()
        wait_until(lambda: table.viewer.state is not None, 30, "the table's state")
        assert table.supervisor.request("pause", reason="a flood comes")["ok"]
        before = rows(journal)
        # 10,000 open_round while paused: each one refused by the table.
        _flood(table, table.platform, [("open_round", {})] * FLOOD)
        # Meanwhile the other accounts are answered.
        assert table.viewer.request("status", timeout=20)["ok"]
        resumed = table.supervisor.request("resume", timeout=20)
        assert resumed["ok"], resumed
        wait_until(
            lambda: len(responses(table, "platform")) >= FLOOD,
            120,
            "an answer to every request of the flood",
        )
        answers = responses(table, "platform")
        codes = {answer.get("error", {}).get("code") for answer in answers.values()}
        assert "rate_limited" in codes, codes
        assert codes <= {None, "refused", "rate_limited", "unavailable"}, codes
        limited = next(
            a for a in answers.values() if a.get("error", {}).get("code") == "rate_limited"
        )
        validate_message("livetable/t1/response/platform", json.dumps(limited).encode())
        added = rows(journal) - before
        assert added <= FLOOD_ROWS_MAX, f"{added} journal rows for a flood of {FLOOD}"
        assert table.daemon.alive()
    finally:
        table.close()


@pytest.mark.slow
def test_a_flood_of_accepted_supervisor_commands_adds_few_journal_rows(
    tmp_path: Path, roomy_broker: tuple[str, int]
) -> None:
    table = SimulatedTable(tmp_path / "table", *roomy_broker, "baccarat", rounds=0)
    journal = tmp_path / "table" / "t1.journal"
    try:
        table.daemon.start()
        wait_until(lambda: table.viewer.state is not None, 30, "the table's state")
        before = rows(journal)
        # Pause, resume, pause, ...: every one of them one the table would take.
        requests = [("pause", {"reason": "again"}), ("resume", {})] * (FLOOD // 2)
        _flood(table, table.supervisor, requests)
        assert table.platform.request("status", timeout=20)["ok"]
        wait_until(
            lambda: len(responses(table, "alice")) >= FLOOD,
            120,
            "an answer to every request of the flood",
        )
        codes = {
            answer.get("error", {}).get("code") for answer in responses(table, "alice").values()
        }
        assert "rate_limited" in codes, codes
        added = rows(journal) - before
        assert added <= FLOOD_ROWS_MAX, f"{added} journal rows for a flood of {FLOOD}"
    finally:
        table.close()


@pytest.mark.slow
def test_with_the_shipped_acl_a_flood_from_the_platform_is_bounded_and_others_answered(
    tmp_path: Path, secure_mqtt_broker: BrokerProcess
) -> None:
    """The same flood against the locked-down broker (password file and the shipped ACL):
    the platform's own account, its own answers; a supervisor and a viewer beside it."""
    users = secure_mqtt_broker.users
    port = secure_mqtt_broker.port
    table = Table(tmp_path / "table", port, account=users["table"])
    platform = Peer(
        port,
        username=users["platform"][0],
        password=users["platform"][1],
        subscribe=(response_topic("platform"),),
    )
    supervisor = Peer(
        port,
        username=users["supervisor"][0],
        password=users["supervisor"][1],
        subscribe=(response_topic("alice"),),
    )
    viewer = Peer(
        port,
        username=users["viewer"][0],
        password=users["viewer"][1],
        subscribe=(f"{BASE}/state", f"{BASE}/availability", response_topic("viewer")),
    )
    try:
        for peer in (platform, supervisor, viewer):
            peer.wait_ready()
        table.daemon.start()
        wait_online(table, viewer)
        paused = supervisor.ask(
            request_topic("supervisor", "alice", "pause"),
            {"transaction": "p-1", "reason": "a flood comes"},
            answer_on=response_topic("alice"),
        ).json()
        assert paused["ok"], paused
        before = rows(table.journal_path)
        topic = request_topic("platform", "platform", "open_round")
        # In batches, each answered before the next: the broker's default queue for a
        # client (1000 messages) would drop answers the test must count.
        for start in range(0, FLOOD, 500):
            infos = [
                platform.client.publish(topic, json.dumps({"transaction": f"f-{n}"}), qos=1)
                for n in range(start, start + 500)
            ]
            for info in infos:
                info.wait_for_publish(30)
            platform.wait_for(
                lambda messages, n=start + 500: len(messages) >= n,
                f"answers to {start + 500} requests of the flood",
                60,
            )
            if start == FLOOD // 2:
                resumed = supervisor.ask(
                    request_topic("supervisor", "alice", "resume"),
                    {"transaction": "r-1"},
                    answer_on=response_topic("alice"),
                ).json()
                assert resumed["ok"], resumed
        answers = platform.received()
        assert len(answers) == FLOOD
        codes = {m.json().get("error", {}).get("code") for m in answers}
        assert "rate_limited" in codes and codes <= {None, "refused", "rate_limited"}, codes
        added = rows(table.journal_path) - before
        assert added <= FLOOD_ROWS_MAX, f"{added} journal rows for a flood of {FLOOD}"
        assert table.daemon.alive()
    finally:
        table.close()
        for peer in (platform, supervisor, viewer):
            peer.close()


# -- the epoch -------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_state_and_the_events_answer_carry_the_journals_epoch_which_a_new_journal_changes(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    table = SimulatedTable(tmp_path / "table", *mqtt_broker, "baccarat", rounds=2)
    journal = tmp_path / "table" / "t1.journal"
    try:
        table.daemon.start()
        table.bots.start()
        wait_until(lambda: table.bots.done, 90, "two rounds")
        table.bots.stop()
        with Journal(journal, read_only=True) as opened:
            first = opened.epoch
        wait_until(
            lambda: (table.viewer.state or {}).get("seq") == table.viewer.events[-1]["seq"],
            10,
            "the last state",
        )
        assert table.viewer.state is not None and table.viewer.state["epoch"] == first
        status = table.viewer.request("status")
        assert status["data"]["state"]["epoch"] == first
        events, epochs = catch_up(table.viewer)
        assert set(epochs) == {first} and events[0]["seq"] == 1
        old_last = events[-1]["seq"]
        assert table.daemon.stop() == 0

        # A new journal in its place (the old outbox left beside it): another epoch, and
        # the series start again at 1.
        for suffix in ("", "-wal", "-shm"):
            Path(f"{journal}{suffix}").unlink(missing_ok=True)
        assert outbox_path(journal).exists()
        table.daemon.start()
        wait_until(
            lambda: table.viewer.state is not None and table.viewer.state["epoch"] != first,
            30,
            "the state of the new journal",
        )
        second = table.viewer.state["epoch"]
        with Journal(journal, read_only=True) as opened:
            assert opened.epoch == second
        assert table.viewer.state["seq"] < old_last
        events, epochs = catch_up(table.viewer)
        assert set(epochs) == {second}
        assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
        assert len(events) < old_last
    finally:
        table.close()
