"""The dealers on duty and the holds between rounds (machine revision 6).

A dealer signs in with a staff id and out; the state publishes who deals, and each round's
``round_opened`` and ``round_settled`` name the round's dealer. A hold between rounds
(a supervisor's ``dealer_change`` or ``drain``, the process's ``ControllerStopping``) lets the
round in play finish and opens no round until it is lifted: the next dealer's sign-in lifts
a dealer change, ``resume_rounds`` any hold, a start the process's own. A journal of an older
revision takes none of it and replays as it did."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.service.journaled_table import JournaledTable
from controller.table.effects import CommandAnswered, TellDealer
from controller.table.events import (
    ControllerStarted,
    ControllerStopping,
    DealerSignedOut,
)
from controller.table.machine import TableMachine
from controller.table.state import Phase
from controller.tools.cli import main
from tests.table.driver import Driver, config_for, play_rounds, sign_in

ALICE = ("alice", "supervisor")


def sign_out(driver: Driver, by: str = "dealer7", role: str = "dealer") -> CommandAnswered:
    driver.commands += 1
    return driver.answer(
        driver.send(DealerSignedOut(f"o{driver.commands}", by, role, driver.tick()))
    )


def holds(driver: Driver) -> list[tuple[str, str | None]]:
    return [(hold["reason"], hold["by"]) for hold in driver.machine.public_state()["round_holds"]]


def test_a_table_runs_with_nobody_signed_in(table: Driver) -> None:
    assert table.machine.public_state()["dealer"] is None
    table.open_and_close_betting()
    table.draw("9S", "TD", "KC", "3H")
    assert table.published_events("round_opened")[-1]["dealer"] is None
    assert table.published_events("round_settled")[-1]["dealer"] is None


def test_the_dealer_signed_in_is_in_the_state_and_names_each_round(table: Driver) -> None:
    answer = sign_in(table, "D-1043")
    assert answer.ok and answer.command == "dealer_sign_in" and "D-1043" in answer.message
    since = table.now
    assert table.machine.public_state()["dealer"] == {"staff_id": "D-1043", "since": since}
    assert table.published_events("dealer_signed_in") == [
        {"staff_id": "D-1043", "since": since, "by": "dealer7"}
    ]
    for _ in range(2):
        table.open_and_close_betting()
        table.draw("9S", "TD", "KC", "3H")
    assert [e["dealer"] for e in table.published_events("round_opened")] == ["D-1043"] * 2
    assert [e["dealer"] for e in table.published_events("round_settled")] == ["D-1043"] * 2

    # A supervisor signs the dealer out; the next round is dealt by nobody known.
    out = sign_out(table, by="alice", role="supervisor")
    assert out.ok and table.machine.public_state()["dealer"] is None
    assert table.published_events("dealer_signed_out") == [{"staff_id": "D-1043", "by": "alice"}]
    assert not sign_out(table).ok  # nobody is signed in: refused, nothing changes


def test_a_sign_in_from_another_role_or_without_a_staff_id_is_refused(table: Driver) -> None:
    before = table.machine.snapshot()
    assert not sign_in(table, "D-1043", by="platform", role="platform").ok
    assert not sign_in(table, "  ").ok
    assert table.machine.snapshot() == before


def test_a_dealer_change_lets_the_round_finish_and_opens_none_until_the_next_dealer(
    dealing: Driver,
) -> None:
    sign_in(dealing, "D-1043")
    answer = dealing.command("dealer_change", who=ALICE)
    assert answer.ok and "after this round" in answer.message
    assert holds(dealing) == [("dealer_change", "alice")]
    assert dealing.phase is Phase.DEALING  # the round goes on, timers and all
    dealing.draw("KC", "3H")
    settled = dealing.published_events("round_settled")[-1]
    assert settled["dealer"] == "D-1043"
    assert dealing.phase is Phase.SHOE_READY
    lines = [line for line in dealing.dealer_lines()]
    assert [line.action for line in lines] == ["hold"] and "dealer change" in lines[0].message

    refused = dealing.request_round()
    assert not refused.ok and "dealer_change" in refused.message
    assert dealing.phase is Phase.SHOE_READY

    sign_out(dealing)
    assert holds(dealing) == [("dealer_change", "alice")]  # a sign-out alone is no change
    assert sign_in(dealing, "D-2001").ok
    assert holds(dealing) == []
    assert [line.action for line in dealing.dealer_lines()] == ["wait"]
    assert dealing.request_round().ok
    assert dealing.published_events("round_opened")[-1]["dealer"] == "D-2001"


def test_a_drain_holds_until_a_supervisor_lifts_it(table: Driver) -> None:
    answer = table.command("drain", who=ALICE)
    assert answer.ok and "now" in answer.message
    assert holds(table) == [("closing", "alice")]
    assert [line.action for line in table.dealer_lines()] == ["hold"]
    assert not table.request_round().ok
    assert table.command("drain", who=ALICE).ok  # once per reason
    assert holds(table) == [("closing", "alice")]
    assert table.command("resume_rounds", who=ALICE).ok
    assert holds(table) == [] and table.request_round().ok
    assert not table.command("resume_rounds", who=ALICE).ok  # nothing to lift


def test_a_stop_holds_the_table_and_the_next_start_lifts_only_its_own_hold(
    dealing: Driver,
) -> None:
    dealing.send(ControllerStopping(dealing.tick()))
    assert holds(dealing) == [("closing", None)] and dealing.phase is Phase.DEALING
    dealing.draw("KC", "3H")
    assert dealing.phase is Phase.SHOE_READY and not dealing.request_round().ok
    dealing.send(ControllerStarted(dealing.tick()))
    assert holds(dealing) == []  # the process's hold went with it
    assert dealing.request_round().ok

    # A supervisor's drain stays across a stop and a start, whichever came first.
    dealing.command("cancel", who=ALICE)
    dealing.send(ControllerStopping(dealing.tick()))
    dealing.command("drain", who=ALICE)
    assert holds(dealing) == [("closing", "alice")]
    dealing.send(ControllerStopping(dealing.tick()))
    dealing.send(ControllerStarted(dealing.tick()))
    assert holds(dealing) == [("closing", "alice")]


def test_an_older_revision_takes_no_dealer_and_no_hold() -> None:
    driver = Driver(TableMachine(config_for("baccarat"), revision=5))
    driver.new_shoe()
    before = driver.machine.snapshot()
    assert not sign_in(driver, "D-1043").ok
    assert not driver.command("dealer_change", who=ALICE).ok
    driver.send(ControllerStopping(driver.tick()))
    assert driver.machine.snapshot() == before
    assert driver.request_round().ok
    assert "dealer" not in driver.published_events("round_opened")[-1]
    assert not any(isinstance(e, TellDealer) and e.action == "hold" for e in driver.effects)


def test_the_export_of_a_round_names_its_dealer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t1.journal"
    table, _ = JournaledTable.open(config_for("baccarat", tmp_path), at=1.0, path=path)
    try:
        driver = Driver(table)
        assert sign_in(driver, "D-1043").ok
        play_rounds(driver, 1)
    finally:
        table.close()
    assert main(["journal", "export", str(path), "--round", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if "round_opened" in line and "dealer D-1043" in line]
    assert [line for line in lines if "round_settled" in line and "dealer D-1043" in line]


def test_ctl_status_shows_the_dealer_and_the_holds(dealing: Driver) -> None:
    from controller.service.wire import state_message
    from controller.tools.ctl_text import describe

    def status() -> str:
        public = dealing.machine.public_state()
        message = state_message(1, public, dealing.now, (1, "0" * 64), epoch="0" * 32)
        return describe("t1", "online", message)

    assert "dealer: nobody signed in" in status() and "HELD" not in status()
    sign_in(dealing, "D-1043")
    dealing.command("dealer_change", who=ALICE)
    dealing.send(ControllerStopping(dealing.tick()))
    lines = status().splitlines()
    assert any(line.startswith("  dealer D-1043 (since ") for line in lines), lines
    held = [line for line in lines if line.startswith("  HELD between rounds: ")]
    assert len(held) == 2 and "dealer_change" in held[0] and "by alice" in held[0], held
    assert "closing" in held[1] and "by the table process, stopping" in held[1], held
