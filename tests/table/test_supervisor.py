"""Supervisor commands: only supervisors, checked against the state, answered, recorded."""

from __future__ import annotations

import pytest

from controller.table.effects import CommandAnswered
from controller.table.events import SupervisorCommanded
from controller.table.state import Phase
from tests.table.driver import Driver


@pytest.mark.parametrize("command", ["pause", "resume", "cancel", "end_shoe", "new_shoe"])
@pytest.mark.parametrize("role", ["dealer", "platform", "viewer", ""])
def test_only_a_supervisor_may_command(dealing: Driver, command: str, role: str) -> None:
    before = dealing.machine.snapshot()
    answer = dealing.command(command, who=("dana", role), reason="because")
    assert not answer.ok
    assert "only a supervisor" in answer.message and answer.by == "dana"
    assert dealing.machine.snapshot() == before


def test_a_command_must_say_who_gave_it(dealing: Driver) -> None:
    before = dealing.machine.snapshot()
    answer = dealing.command("pause", who=("  ", "supervisor"), reason="x")
    assert not answer.ok and "who" in answer.message
    assert dealing.machine.snapshot() == before


def test_unknown_command(dealing: Driver) -> None:
    before = dealing.machine.snapshot()
    answer = dealing.command("shuffle")
    assert not answer.ok and "unknown command" in answer.message
    assert dealing.machine.snapshot() == before


@pytest.mark.parametrize(
    ("command", "kwargs", "phrase"),
    [
        ("pause", {"reason": ""}, "reason"),
        ("resume", {}, "not paused"),
        ("new_shoe", {}, "end this one"),
        ("end_shoe", {}, "not possible"),
    ],
)
def test_invalid_commands_change_nothing(
    dealing: Driver, command: str, kwargs: dict, phrase: str
) -> None:
    before = dealing.machine.snapshot()
    answer = dealing.command(command, **kwargs)
    assert not answer.ok and phrase in answer.message, answer
    assert dealing.machine.snapshot() == before


def test_pause_records_who_and_why_and_nests_a_second(dealing: Driver) -> None:
    answer = dealing.command("pause", reason="player dispute at box 3")
    assert answer.ok and answer.command == "pause" and answer.by == "sam"
    pause = dealing.machine.state.pause
    assert pause.by == "sam" and "player dispute" in pause.message
    assert pause.resume_to is Phase.DEALING
    state = dealing.machine.public_state()
    assert state["paused"]["by"] == "sam" and state["paused"]["reason"] == "supervisor"
    second = dealing.command("pause", who=("kim", "supervisor"), reason="again")
    assert second.ok, second  # nested (refused "already paused" before machine revision 5)
    listed = dealing.machine.public_state()["paused"]["pauses"]
    assert [(p["by"], p["reason"]) for p in listed] == [
        ("sam", "supervisor"),
        ("kim", "supervisor"),
    ]
    assert "player dispute" in listed[0]["message"] and "again" in listed[1]["message"]


def test_pause_between_rounds_and_resume(dealing: Driver) -> None:
    dealing.draw("KC", "3H")
    assert dealing.command("pause", reason="break").ok
    assert not dealing.request_round().ok
    assert not dealing.command("cancel").ok
    assert dealing.command("resume").ok
    assert dealing.phase is Phase.SHOE_READY
    assert dealing.request_round().ok


@pytest.mark.parametrize(
    ("resolution", "card", "phrase"),
    [
        ("accept", None, "nothing to accept"),
        ("burn", None, "nothing to burn"),
        ("enter_card", "KC", "no card is waiting"),
        ("shred", None, "unknown resolution"),
    ],
)
def test_resolutions_that_do_not_fit_are_refused(
    dealing: Driver, resolution: str, card: str | None, phrase: str
) -> None:
    dealing.command("pause", reason="check")
    before = dealing.machine.snapshot()
    answer = dealing.command("resume", resolution=resolution, card=card)
    assert not answer.ok and phrase in answer.message, answer
    assert dealing.machine.snapshot() == before


def test_entering_an_impossible_card_by_hand_is_refused() -> None:
    driver = Driver.for_game("baccarat")
    driver.command("new_shoe")
    driver.draw("8S", *["QH"] * 8)
    driver.open_and_close_betting()
    driver.misread()
    driver.camera("player", None)
    before = driver.machine.snapshot()
    answer = driver.command("resume", resolution="enter_card", card="QH")
    assert not answer.ok and "all 8 copies" in answer.message
    assert driver.machine.snapshot() == before
    assert driver.command("resume", resolution="enter_card", card="QS").ok


def test_end_shoe_between_rounds_and_new_shoe(dealing: Driver) -> None:
    dealing.draw("KC", "3H")
    answer = dealing.command("end_shoe")
    assert answer.ok
    assert dealing.phase is Phase.AWAITING_SHUFFLE
    assert dealing.published_events("shoe_ended")[-1]["shoe_id"] == 1
    assert dealing.command("new_shoe").ok
    assert dealing.phase is Phase.BURN_REVEAL
    assert dealing.machine.state.shoe_id == 2
    assert dealing.machine.state.count.cards_seen == 0


def test_new_shoe_between_rounds_ends_the_old_one(dealing: Driver) -> None:
    dealing.draw("KC", "3H")
    assert dealing.command("new_shoe").ok
    assert [p["shoe_id"] for p in dealing.published_events("shoe_ended")] == [1]
    assert dealing.machine.state.shoe_id == 2


def test_end_shoe_refused_while_a_round_is_paused(dealing: Driver) -> None:
    dealing.command("pause", reason="x")
    answer = dealing.command("end_shoe")
    assert not answer.ok and "cancel it" in answer.message
    assert dealing.command("cancel").ok
    assert dealing.command("end_shoe").ok


def test_every_answer_echoes_the_command_id(dealing: Driver) -> None:
    effects = dealing.send(
        SupervisorCommanded("console-42", "pause", "sam", "supervisor", dealing.tick(), "x")
    )
    answers = [effect for effect in effects if isinstance(effect, CommandAnswered)]
    assert answers[0].command_id == "console-42" and answers[0].ok
