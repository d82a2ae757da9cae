"""Pauses nest (machine revision 5): a supervisor's pause holds until a supervisor lifts it
(``resume`` with nothing left to resolve, or ``cancel``/``end_shoe``, which end what was
paused); an anomaly that comes during it is shown beside it and resolved within it; a
supervisor may pause a table that is already paused; the state lists every pause in
effect. A journal of an older revision replays as it did. And a round that needs a card
from a shoe that has none left pauses (``shoe_empty``) instead of waiting for ever."""

from __future__ import annotations

import pytest

from controller.kernel.cards import parse_card
from controller.table.effects import LockShoe, TellDealer, UnlockShoe
from controller.table.machine import TableMachine
from controller.table.state import Phase
from tests.table.driver import Driver, config_for, shuffled_shoe

ALICE = ("alice", "supervisor")
BOB = ("bob", "supervisor")


def pauses(driver: Driver) -> list[tuple[str, str | None]]:
    """The pauses in effect, as the public state lists them: (reason, by)."""
    paused = driver.machine.public_state()["paused"]
    return [] if paused is None else [(p["reason"], p["by"]) for p in paused["pauses"]]


def test_a_card_drawn_during_a_supervisors_pause_is_burnt_and_the_pause_holds(
    dealing: Driver,
) -> None:
    assert dealing.command("pause", who=ALICE, reason="dealer change").ok
    dealing.draw("KC")
    assert dealing.phase is Phase.PAUSED
    # The headline is the latest (today's clients read it); the list keeps both.
    assert dealing.machine.state.pause.reason.value == "card_out_of_turn"
    assert pauses(dealing) == [("supervisor", "alice"), ("card_out_of_turn", None)]
    listed = dealing.machine.public_state()["paused"]["pauses"]
    assert "dealer change" in listed[0]["message"] and listed[0]["since"] < listed[1]["since"]

    answer = dealing.command("resume", who=BOB, resolution="burn")
    assert answer.ok and "alice" in answer.message and "dealer change" in answer.message
    assert dealing.phase is Phase.PAUSED
    pause = dealing.machine.state.pause
    assert (pause.reason.value, pause.by, pause.held) == ("supervisor", "alice", ())
    assert "dealer change" in pause.message and pause.resume_to is Phase.DEALING
    assert pauses(dealing) == [("supervisor", "alice")]
    assert dealing.published_events("cards_burned") == [{"count": 1}]
    assert not dealing.published_events("table_resumed")  # it did not resume
    assert not any(isinstance(e, UnlockShoe) for e in dealing.last)
    assert [e.action for e in dealing.last if isinstance(e, TellDealer)] == ["stop"]
    assert dealing.machine.state.shoe_locked and not dealing.machine.state.timers

    # Any supervisor lifts it; the round goes on where it stopped.
    assert dealing.command("resume", who=BOB).ok
    assert dealing.phase is Phase.DEALING and dealing.expected_position() == "player"
    resumed = dealing.published_events("table_resumed")[-1]
    assert (resumed["by"], resumed["reason"]) == ("bob", "supervisor")
    dealing.draw("KC", "3H")
    assert dealing.published_events("round_settled")[-1]["result"]["player"] == ["9S", "KC"]


def test_a_card_accepted_during_a_supervisors_pause_is_dealt_and_the_pause_holds(
    dealing: Driver,
) -> None:
    assert dealing.command("pause", who=ALICE, reason="dealer change").ok
    dealing.draw("KC")
    assert dealing.command("resume", who=BOB, resolution="accept").ok
    assert dealing.phase is Phase.PAUSED
    assert dealing.machine.state.round_log[-1][1:3] == ("player", parse_card("KC"))
    pause = dealing.machine.state.pause
    assert (pause.reason.value, pause.by, pause.resume_to) == ("supervisor", "alice", Phase.DEALING)
    assert not any(isinstance(e, UnlockShoe) for e in dealing.last)
    assert not [e for e in dealing.last if isinstance(e, TellDealer) and e.action == "deal"]
    assert dealing.command("resume", who=BOB).ok
    assert dealing.expected_position() == "banker"
    dealing.draw("3H")
    assert dealing.published_events("round_settled")[-1]["result"]["banker"] == ["TD", "3H"]


def test_the_last_card_accepted_settles_the_round_and_the_pause_holds_between_rounds(
    dealing: Driver,
) -> None:
    dealing.draw("KC")
    assert dealing.command("pause", who=ALICE, reason="dealer change").ok
    dealing.draw("3H")
    assert dealing.command("resume", resolution="accept").ok
    assert dealing.published_events("round_settled")  # resolved within the pause
    assert dealing.phase is Phase.PAUSED
    assert dealing.machine.state.pause.resume_to is Phase.SHOE_READY
    assert not dealing.request_round().ok  # held: no round starts
    assert dealing.command("resume").ok
    assert dealing.phase is Phase.SHOE_READY and dealing.request_round().ok


def test_a_supervisors_pause_during_an_anomaly_is_taken_and_outlasts_it(dealing: Driver) -> None:
    dealing.draw("KC", "3H", "7C")  # the round settled with 3H; 7C came after its last card
    assert dealing.phase is Phase.PAUSED
    assert dealing.machine.state.pause.reason.value == "card_out_of_turn"
    answer = dealing.command("pause", who=ALICE, reason="looking at the card")
    assert answer.ok, answer
    assert pauses(dealing) == [("card_out_of_turn", None), ("supervisor", "alice")]
    assert dealing.machine.state.pause.needs()  # the card still needs a resolution
    assert not dealing.command("resume").ok  # a plain resume lifts nothing while it does
    assert dealing.command("resume", who=BOB, resolution="burn").ok
    assert dealing.phase is Phase.PAUSED and pauses(dealing) == [("supervisor", "alice")]
    assert dealing.command("resume", who=BOB).ok
    assert dealing.phase is Phase.SHOE_READY


def test_two_supervisors_pauses_nest_and_one_resume_lifts_them(dealing: Driver) -> None:
    assert dealing.command("pause", who=ALICE, reason="dealer change").ok
    assert dealing.command("pause", who=BOB, reason="dispute at box 3").ok
    assert pauses(dealing) == [("supervisor", "alice"), ("supervisor", "bob")]
    assert dealing.machine.state.pause.by == "bob"
    assert dealing.command("resume", who=ALICE).ok
    assert dealing.phase is Phase.DEALING and pauses(dealing) == []


def test_a_supervisor_who_pauses_again_keeps_one_pause_with_the_reason_given_last(
    dealing: Driver,
) -> None:
    assert dealing.command("pause", reason="player dispute at box 3").ok
    since = dealing.machine.state.pause.since
    again = dealing.command("pause", reason="dispute at box 3 and 4")
    assert again.ok and any(isinstance(e, LockShoe) for e in dealing.last)
    [listed] = dealing.machine.public_state()["paused"]["pauses"]
    assert (listed["by"], listed["since"]) == ("sam", since)
    assert listed["message"].endswith("dispute at box 3 and 4")
    assert len(dealing.machine.state.holds) == 1


def test_many_cards_and_pauses_keep_the_list_as_short_as_the_reasons(dealing: Driver) -> None:
    faces = [rank + suit for suit in "SHDC" for rank in "A23456789TJQK"][:30]
    for number, face in enumerate(faces):
        assert dealing.command("pause", who=ALICE, reason=f"check {number}").ok
        dealing.draw(face)
    assert pauses(dealing) == [("supervisor", "alice"), ("card_out_of_turn", None)]
    assert len(dealing.machine.state.pause.held) == 30  # every card is still held


@pytest.mark.parametrize("ending", ["cancel", "end_shoe"])
def test_cancel_and_end_shoe_end_what_was_paused_and_lift_the_pause(
    table: Driver, ending: str
) -> None:
    if ending == "cancel":
        table.open_and_close_betting()
        table.draw("9S")
    assert table.command("pause", who=ALICE, reason="dealer change").ok
    table.draw("KC")
    assert table.command(ending, who=BOB, reason="void it").ok
    assert table.phase is (Phase.SHOE_READY if ending == "cancel" else Phase.AWAITING_SHUFFLE)
    assert table.machine.state.pause is None and pauses(table) == []


def test_a_restart_during_a_supervisors_pause_keeps_it() -> None:
    from controller.table.events import ControllerStarted

    driver = Driver.for_game("baccarat")
    driver.new_shoe()
    driver.open_and_close_betting()
    driver.draw("9S")
    assert driver.command("pause", who=ALICE, reason="dealer change").ok
    driver.send(ControllerStarted(driver.tick(), False))
    assert [reason for reason, _ in pauses(driver)] == ["supervisor", "recovered"]
    assert driver.command("resume", resolution="no_cards_drawn").ok
    assert driver.phase is Phase.PAUSED and pauses(driver) == [("supervisor", "alice")]


# -- a journal of revision 4 replays as it did ------------------------------------------------


def revision_4_table() -> Driver:
    driver = Driver(TableMachine(config_for("baccarat"), revision=4))
    driver.new_shoe()
    driver.open_and_close_betting()
    driver.draw("9S", "TD")
    return driver


def test_under_revision_4_a_burn_lifts_the_supervisors_pause() -> None:
    driver = revision_4_table()
    assert driver.command("pause", who=ALICE, reason="dealer change").ok
    driver.draw("KC")
    assert driver.command("resume", resolution="burn").ok
    assert driver.phase is Phase.DEALING


def test_under_revision_4_a_second_pause_is_refused_and_changes_nothing() -> None:
    driver = revision_4_table()
    assert driver.command("pause", reason="player dispute at box 3").ok
    before = driver.machine.snapshot()
    second = driver.command("pause", reason="again")
    assert not second.ok and second.message == "the table is already paused"
    assert driver.machine.snapshot() == before


# -- a shoe that runs dry ---------------------------------------------------------------------


def play_the_shoe_dry(driver: Driver, seed: int) -> None:
    """Deal rounds from one shuffled 8-deck shoe whose cut card comes out with 3 cards
    left (a round after it is played), until every card is out and the table waits for
    one, pauses, or ends the shoe."""
    cards = shuffled_shoe(seed)
    driver.new_shoe(str(cards[0]), tuple(str(c) for c in cards[1 : 1 + _burn(cards[0])]))
    cards = cards[1 + _burn(cards[0]) :]
    while True:
        if len(cards) == 3 and driver.machine.state.final_round is None:
            driver.cut_card()
        if driver.phase is Phase.SHOE_READY:
            driver.open_and_close_betting()
        elif driver.phase is Phase.DEALING and cards:
            driver.draw(cards.pop(0))
        elif driver.phase is Phase.DECIDING:
            driver.expire("decision")
        else:
            return


def _burn(card: object) -> int:
    from controller.games.shoe import burn_count

    return burn_count(card)  # type: ignore[arg-type]


# Seeds whose shoe runs dry in its final round (the one after the cut card's).
@pytest.mark.parametrize(("game", "seed"), [("baccarat", 1), ("blackjack-classic", 7)])
def test_a_shoe_that_runs_dry_in_its_final_round_pauses_for_a_supervisor(
    game: str, seed: int
) -> None:
    driver = Driver.for_game(game, decision_s=8.0, rounds_after_cut_card=1)
    play_the_shoe_dry(driver, seed)
    state = driver.machine.public_state()
    assert state["cards_left"] == 0 and state["final_round"] == state["round_number"]
    assert driver.phase is Phase.PAUSED, driver.phase
    pause = driver.machine.state.pause
    assert pause.reason.value == "shoe_empty" and pause.resume_to is Phase.DEALING
    assert "cancel" in " ".join(pause.needs())
    assert driver.published_events("table_paused")[-1]["reason"] == "shoe_empty"
    refused = driver.command("resume")
    assert not refused.ok and "cancel" in refused.message
    assert driver.command("cancel", reason="the shoe ran dry").ok
    # Nothing more can be dealt from it: the shoe ends.
    assert driver.phase is Phase.AWAITING_SHUFFLE
    assert driver.published_events("shoe_ended")[-1]["shoe_id"] == 1


def test_under_revision_4_a_dry_shoe_waits_as_it_did() -> None:
    config = config_for("baccarat", rounds_after_cut_card=1)
    driver = Driver(TableMachine(config, revision=4))
    play_the_shoe_dry(driver, 1)
    assert driver.phase is Phase.DEALING
    assert driver.machine.public_state()["cards_left"] == 0


def test_a_round_that_takes_the_shoes_last_card_ends_the_shoe() -> None:
    driver = Driver.for_game("baccarat", rounds_after_cut_card=1)
    play_the_shoe_dry(driver, 7)  # this shoe's last card settles the round before the final
    assert driver.published_events("round_settled")
    assert driver.phase is Phase.AWAITING_SHUFFLE
    assert driver.published_events("shoe_ended")[-1]["why"] == "every card of the shoe is out"
