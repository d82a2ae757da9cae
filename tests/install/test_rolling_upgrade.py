"""A rolling upgrade of a studio, as docs/install.md's "Rolling upgrade of a studio" does it:
three tables on one broker, each upgraded in turn from this release's wheel to a wheel of the
same tree under the next version number, while the other tables, and the people around each,
keep playing.

The two releases: this tree's wheel (the ``release`` fixture, built once per test run) and
wheel B, built by ``python -m build`` from a copy of the tree whose pyproject.toml says the
next patch version. Each is installed alone into its own venv
(:func:`tests.support.release.install_alone`: ``--no-deps``, this venv's third-party packages
on its path, nothing of the repository), and a link stands for ``/opt/livetable/.venv``,
through which every table is started, as the unit starts it.

Three tables, t1 (baccarat), t2 (Dragon Tiger) and t3 (blackjack), ``livetable run`` through
the link to venv A, each with its own configuration, journal and simulated shoe on a real pty,
on one real mosquitto; around each the demo's people: the platform opens rounds and decides,
the supervisor declares the shoe, the dealer (:class:`simulators.dealer.DealerSimulator`,
signed in at the table) draws from the shoe. Then the link moves to venv B, and the tables
still run release A (the Python of venv A, which the ``livetable`` script names). Then each
table in turn, while its round is in play (t1's taking bets, t2's dealt, t3's awaiting a
player's decision): SIGTERM (``systemctl restart``), the round in play settles, the daemon
exits 0; it starts again through the link, so from venv B, on the same configuration and
journal, comes back without a pause, with its dealer still signed in, and opens its next round
while the other two play on.

At the end every table closes the same way, and each journal, read by release B, holds only
settled rounds with no pause, its hash chain intact through the head release A left
(``--expect-head``): the journal was carried on, not begun again.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.client.api_client import Account, ApiClient
from controller.games.registry import game_spec
from simulators.daemon_process import DaemonProcess
from simulators.dealer import DealerSimulator
from simulators.mqtt_bots import TableBots
from simulators.shoe.simulator import ShoeSimulator
from tests.support.daemon import unique_by_seq, write_config
from tests.support.release import (
    Installed,
    Release,
    build_wheel,
    install_alone,
    next_patch,
)
from tests.support.wait import wait_until

# The studio: each table's game, and the phase its round is in when it is moved (bets
# taken, cards dealt, a player's decision awaited: the round in play finishes from each).
TABLES = {
    "t1": ("baccarat", "BETTING"),
    "t2": ("dragon-tiger", "DEALING"),
    "t3": ("blackjack-classic", "DECIDING"),
}
# Generous for a loaded machine: a baccarat round here takes about a second.
ROUND_TIMEOUT_S = 60.0
# How long a stopping table may take to finish its round ([table] stop_timeout_s): far more
# than a round takes, so a drain that ends in time is one that let the round finish.
STOP_TIMEOUT_S = 60.0
# The rounds each table plays before its upgrade: enough that its rounds run when it stops.
ROUNDS_BEFORE = 1
# More rounds than the test plays: the people keep opening rounds until the table closes.
ENOUGH_ROUNDS = 10_000
# Events that say a round did not run its course, or the table stopped for a person.
NOT_PLAYED_THROUGH = ("round_voided", "table_paused")


@dataclass
class InstalledDaemon(DaemonProcess):
    """``livetable run`` as the unit runs it: ``program`` (the ``livetable`` of the venv the
    ``.venv`` link names when it starts), in an environment that names nothing of the
    repository (``env``), from a folder outside the repository (``cwd``)."""

    program: str = ""
    closing: bool = False

    def start(self) -> None:
        self.closing = False
        self.starts += 1
        with open(self.log_path, "ab") as log:
            self.start_offset = log.tell()
            self.process = subprocess.Popen(
                [self.program, "run", "--config", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=self.cwd,
                env=self.env,
            )

    def interpreter(self) -> str:
        """The Python the running process is (``systemctl status`` shows it first in the
        process's command line): its venv's, from the ``livetable`` script's first line."""
        assert self.process is not None
        cmdline = Path(f"/proc/{self.process.pid}/cmdline")
        # Empty for a moment after Popen returns: the exec is past its point of no return
        # (which Popen waits for) but has not laid out the new command line yet.
        arguments = wait_until(cmdline.read_bytes, 10, f"{self.config.stem}'s command line")
        return arguments.split(b"\0")[0].decode()

    def close(self) -> None:
        """SIGTERM, as ``systemctl stop``: the table closes between rounds."""
        assert self.process is not None
        if not self.closing:
            self.closing = True
            self.process.send_signal(signal.SIGTERM)

    def terminate(self) -> int:
        """:meth:`close` (once: a second SIGTERM would stop it at once), and its exit status
        once it exits."""
        assert self.process is not None
        self.close()
        return self.process.wait(STOP_TIMEOUT_S + 30)


class Table:
    """One table of the studio: its shoe, its daemon, and its people (a platform, a
    supervisor, a dealer signed in), with a viewer of its own that sees everything it
    publishes."""

    def __init__(self, table_id: str, seed: int, folder: Path, broker: tuple[str, int]) -> None:
        self.table_id = table_id
        game, self.moved_in = TABLES[table_id]
        self.staff_id = f"D-{seed}00"
        folder.mkdir()
        self.shoe = ShoeSimulator("angel-eye", folder / "shoe", seed=seed, cut_card_depth=60)
        self.shoe.start()
        self.config = write_config(
            folder / f"{table_id}.toml",
            table_id=table_id,
            game=game,
            variant=game_spec(game).default_variant,
            # Long enough that the moment of SIGTERM finds the round in that phase, and
            # that a loaded machine's slow step is no dealer-idle or decision timeout.
            betting_s=1.0,
            decision_s=30.0,
            dealer_idle_s=30.0,
            shoe_port=folder / "shoe",
            broker_port=broker[1],
            stop_timeout_s=STOP_TIMEOUT_S,
        )
        self.journal = folder / f"{table_id}.journal"
        self.daemon = InstalledDaemon(self.config, folder / "daemon.log")
        self.clients = [
            ApiClient(*broker, table_id, Account(role, name))
            for role, name in (
                ("viewer", "watcher"),
                ("platform", "platform"),
                ("supervisor", "alice"),
                ("dealer", f"dealer-{table_id}"),
            )
        ]
        self.viewer, platform, supervisor, self.dealer_station = self.clients
        for client in self.clients:
            assert client.wait_connected(), f"the broker refused a client: {client.refused}"
        self.bots = TableBots(
            platform,
            supervisor,
            rounds=ENOUGH_ROUNDS,
            seed=seed,
            dealer=DealerSimulator(self.shoe, pace_s=0.01),
        )

    def start(self, link: Path, installed: Installed) -> None:
        """Start the daemon through the ``.venv`` link (``link``), which names the venv of
        ``installed`` now: the process runs that release."""
        assert link.resolve() == installed.venv.resolve(), (link, installed.venv)
        self.daemon.program = str(link / "bin" / "livetable")
        self.daemon.cwd, self.daemon.env = installed.cwd, installed.env
        self.daemon.start()
        running = self.daemon.interpreter()
        assert running == str(installed.venv / "bin" / "python"), running

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        seen = unique_by_seq(list(self.viewer.events))
        return [e for e in seen if kind is None or e["type"] == kind]

    def rounds(self, kind: str) -> list[int]:
        return [event["data"]["round_id"] for event in self.events(kind)]

    def state(self) -> dict[str, Any]:
        assert self.daemon.alive(), f"table {self.table_id}: {self.daemon.why()}"
        return self.viewer.state or {}

    def wait_offline(self) -> None:
        """Until the viewer has seen the stopped daemon's last word (``offline``, published
        after its last event)."""
        wait_until(lambda: self.viewer.availability == "offline", 10, f"{self.table_id} offline")

    def close(self) -> None:
        self.bots.stop()
        self.daemon.stop()
        for client in self.clients:
            client.close()
        self.shoe.stop()


@pytest.fixture(scope="module")
def next_wheel(tmp_path_factory: pytest.TempPathFactory, release: Release) -> Path:
    """Wheel B: the same tree, released under the next patch version."""
    return build_wheel(tmp_path_factory.mktemp("next-release"), next_patch(release.version))


@pytest.fixture
def studio(tmp_path: Path, mqtt_broker: tuple[str, int]) -> Iterator[list[Table]]:
    tables: list[Table] = []
    try:
        for seed, table_id in enumerate(TABLES, start=1):
            tables.append(Table(table_id, seed, tmp_path / table_id, mqtt_broker))
        yield tables
    finally:
        for table in tables:
            table.close()


def test_each_table_moves_to_the_next_release_between_two_rounds(
    release: Release, next_wheel: Path, studio: list[Table], tmp_path: Path
) -> None:
    old = install_alone(release.wheel, tmp_path / "release-a")
    new = install_alone(next_wheel, tmp_path / "release-b")
    old_version = old.livetable("--version").splitlines()[0]
    new_version = new.livetable("--version").splitlines()[0]
    assert old_version == f"livetable {release.version}", old_version
    assert new_version == f"livetable {next_patch(release.version)}", new_version
    # /opt/livetable/.venv: a link to the venv of the release the tables run.
    link = tmp_path / "opt" / ".venv"
    link.parent.mkdir()
    link.symlink_to(old.venv)

    # The studio plays on release A, each table with its dealer signed in.
    for table in studio:
        table.start(link, old)
    for table in studio:
        wait_until(lambda t=table: t.state().get("phase"), 30, f"{table.table_id}'s first state")
        signed = table.dealer_station.request("dealer_sign_in", 10, staff_id=table.staff_id)
        assert signed["ok"], signed
        table.bots.start()
    for table in studio:
        wait_until(
            lambda t=table: len(t.rounds("round_settled")) >= ROUNDS_BEFORE,
            ROUND_TIMEOUT_S,
            f"{ROUNDS_BEFORE} rounds settled at {table.table_id}",
        )

    # Release B installed, the link moves to it (``ln -sfn``): nothing running changes.
    moved = link.with_name(".venv.new")
    moved.symlink_to(new.venv)
    moved.replace(link)
    # Each table in turn moves to release B while its round is in play; the others play on.
    heads = {}
    for index, table in enumerate(studio):
        for other in studio[index + 1 :]:
            assert other.daemon.interpreter() == str(old.venv / "bin" / "python")
        others = [t for t in studio if t is not table]
        heads[table.table_id] = move(table, others, link, old, new)

    # Closing time: each table lets its round finish and stops.
    for table in studio:
        table.daemon.close()
    for table in studio:
        assert table.daemon.terminate() == 0, table.daemon.log_of_this_start()[-3000:]
        table.wait_offline()
        table.bots.stop()
        assert not table.bots.errors, (table.table_id, table.bots.errors[:5])

    for table in studio:
        opened, settled = table.rounds("round_opened"), table.rounds("round_settled")
        assert opened and sorted(opened) == sorted(settled), (table.table_id, opened, settled)
        stopped = [e for e in table.events() if e["type"] in NOT_PLAYED_THROUGH]
        assert stopped == [], (table.table_id, stopped)
        # The journal, as release B reads it: every round settled, none paused, and its
        # chain intact from the first row through the head release A left to the last.
        listed = new.livetable("journal", "rounds", "--json", str(table.journal))
        rounds = [json.loads(line) for line in listed.splitlines()]
        assert [r["round_id"] for r in rounds] == sorted(opened), (rounds, opened)
        assert all(r["outcome"] == "settled" and r["pauses"] == [] for r in rounds), rounds
        head = heads[table.table_id]
        said = new.livetable("journal", "verify", "--expect-head", head, str(table.journal))
        assert "hash chain intact" in said and "row(s) after it" in said, said
        # At the default level: the two lines of each start, the line of each close, and
        # at the start on release B, the warning that the table carries on its journal.
        log = table.daemon.log()
        warned = [line for line in log.splitlines() if " WARNING " in line or " ERROR " in line]
        assert len(warned) == 1 and "carries on the journal" in warned[0], log[-3000:]


def move(table: Table, others: list[Table], link: Path, old: Installed, new: Installed) -> str:
    """Move ``table`` from release ``old`` to ``new`` (the venv ``link`` names now) while a
    round of it is in play, as ``systemctl restart`` does, and see it deal on; the head of its
    journal that ``old`` left (``SEQ:HASH``)."""
    settled_elsewhere = {t.table_id: len(t.rounds("round_settled")) for t in others}
    wait_until(
        lambda t=table: t.state().get("phase") == t.moved_in,
        ROUND_TIMEOUT_S,
        f"{table.table_id}'s round in {table.moved_in}",
    )
    in_play = table.state()["round"]["id"]
    assert table.daemon.terminate() == 0, table.daemon.log_of_this_start()[-3000:]
    table.wait_offline()
    assert in_play in table.rounds("round_settled"), (in_play, table.rounds("round_settled"))
    # The head release A left: release B's verify must still reach it at the end.
    verified = json.loads(old.livetable("journal", "verify", "--json", str(table.journal)))
    head = f"{verified['journal']['seq']}:{verified['journal']['hash']}"
    seen = len(table.events())
    table.start(link, new)
    wait_until(
        lambda t=table: any(e["type"] == "round_opened" for e in t.events()[seen:]),
        ROUND_TIMEOUT_S,
        f"{table.table_id}'s next round, on release B",
    )
    state = table.state()
    assert state["pause"] is None and state["holds"] == [], state
    assert (state.get("dealer") or {}).get("staff_id") == table.staff_id, state["dealer"]
    opened = table.events("round_opened")[-1]["data"]
    assert opened["round_id"] > in_play and opened["dealer"] == table.staff_id, opened
    # The other tables played on meanwhile.
    for other in others:
        wait_until(
            lambda t=other: len(t.rounds("round_settled")) > settled_elsewhere[t.table_id],
            ROUND_TIMEOUT_S,
            f"{other.table_id} playing on while {table.table_id} moved",
        )
    return head
