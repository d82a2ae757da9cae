"""A restart of the table in the middle of a round, with cards drawn while it was down.

The shoe's scanner reports each card once; a card drawn while the daemon is down reaches
nobody unless the protocol resends it (native) or its numbering shows the gap with the next
card (Angel Eye, within one cycle of its SEQ). Machine revision 4: unless the shoe accounts
for every card (``ControllerStarted.gaps_visible``), a ``recovered`` pause needs the same
confirmation as a shoe outage, and a card that arrived after the restart is never dealt into
the place of one drawn before it.
"""

from __future__ import annotations

import pytest

from controller.kernel.cards import parse_card
from controller.table.events import CardsLost, ControllerStarted
from controller.table.machine import TableMachine
from controller.table.state import Phase
from tests.table.driver import Driver, config_for, table_for
from tests.table.test_anomalies import assert_paused, finish_round


def dealt(driver: Driver) -> list[tuple[str, str | None, str]]:
    return [
        (event["position"], event.get("card"), event["source"])
        for event in driver.published_events("card_dealt")
    ]


def test_a_restart_mid_deal_needs_a_confirmation_when_gaps_may_not_show(dealing: Driver) -> None:
    dealing.send(ControllerStarted(dealing.tick()))
    assert_paused(dealing, "recovered")
    pause = dealing.machine.state.pause
    assert pause.offline_gap
    assert pause.needs() == [
        "confirm no card left the shoe while the table was down (no_cards_drawn), or "
        "enter_card each card that did"
    ]
    answer = dealing.command("resume")
    assert not answer.ok and "no_cards_drawn" in answer.message
    assert dealing.command("resume", resolution="no_cards_drawn").ok
    finish_round(dealing)


def test_a_restart_mid_deal_with_a_shoe_that_accounts_for_every_card(dealing: Driver) -> None:
    dealing.send(ControllerStarted(dealing.tick(), gaps_visible=True))
    assert_paused(dealing, "recovered")
    assert not dealing.machine.state.pause.offline_gap
    assert dealing.command("resume").ok
    finish_round(dealing)


def test_the_card_after_a_lost_one_never_takes_its_place(dealing: Driver) -> None:
    """Player 9S and banker TD are out; 7C is drawn while the daemon is down (the player's
    second card) and never reported; 8H comes after the restart. 8H must not be the
    player's card: the supervisor enters 7C, then 8H goes to the banker."""
    dealing.send(ControllerStarted(dealing.tick()))
    dealing.draw("8H")  # held: it came after a restart that may have hidden a card
    pause = dealing.machine.state.pause
    assert pause.held == (parse_card("8H"),) and pause.offline_gap
    answer = dealing.command("resume", resolution="accept")
    assert not answer.ok and "enter_card" in answer.message, answer
    assert dealt(dealing)[-1][1] == "TD"  # nothing dealt by the refusal
    entered = dealing.command("resume", resolution="enter_card", card="7C")
    assert entered.ok, entered
    assert dealt(dealing)[-1] == ("player", "7C", "supervisor")
    assert dealing.phase is Phase.PAUSED  # the held card and the confirmation remain
    # Still the table's pause: entering a card is not a supervisor pausing it.
    assert dealing.machine.state.pause.by is None
    assert not dealing.command("resume", resolution="accept").ok  # still may hide a card
    assert dealing.command("resume", resolution="no_cards_drawn").ok
    assert dealing.phase is Phase.PAUSED
    assert dealing.command("resume", resolution="accept").ok
    assert dealt(dealing)[-1] == ("banker", "8H", "supervisor")
    # Player 9S 7C = 6, banker TD 8H = 8: a natural, the round is over.
    (settled,) = dealing.published_events("round_settled")
    assert settled["result"]["winner"] == "banker", settled
    assert dealing.phase is Phase.SHOE_READY


def test_a_gap_the_numbering_shows_after_a_restart_is_entered_by_hand(dealing: Driver) -> None:
    dealing.send(ControllerStarted(dealing.tick()))
    dealing.send(CardsLost((30,), dealing.tick()))  # the first frame after the restart
    assert dealing.published_events("cards_lost")[-1] == {"count": 1}
    dealing.draw("8H")
    assert dealing.command("resume", resolution="enter_card", card="7C").ok
    assert dealing.command("resume", resolution="no_cards_drawn").ok
    assert dealing.command("resume", resolution="accept").ok
    assert [card for _position, card, _source in dealt(dealing)] == ["9S", "TD", "7C", "8H"]


def test_a_restart_while_paused_mid_deal_adds_the_confirmation(dealing: Driver) -> None:
    assert dealing.command("pause", reason="check the felt").ok
    dealing.send(ControllerStarted(dealing.tick()))
    pause = dealing.machine.state.pause
    assert pause.reason.value == "recovered" and pause.offline_gap
    assert not dealing.command("resume").ok
    assert dealing.command("resume", resolution="no_cards_drawn").ok
    # The supervisor's pause the restart came in holds until a supervisor lifts it.
    assert dealing.phase is Phase.PAUSED
    assert dealing.machine.state.pause.reason.value == "supervisor"
    assert dealing.command("resume").ok
    finish_round(dealing)


def test_cards_held_before_the_restart_are_resolved_before_those_entered(dealing: Driver) -> None:
    """A card held out of turn before the daemon died came out before any drawn while it
    was down: it is accepted (or burnt) first, then the cards drawn while down entered."""
    dealing.command("pause", reason="check")
    dealing.draw("7C")  # held while paused
    dealing.send(ControllerStarted(dealing.tick()))
    pause = dealing.machine.state.pause
    assert pause.offline_gap and pause.held == (parse_card("7C"),)
    refused = dealing.command("resume", resolution="enter_card", card="8H")
    assert not refused.ok and "first" in refused.message
    assert dealing.command("resume", resolution="accept").ok
    assert dealt(dealing)[-1] == ("player", "7C", "supervisor")
    assert dealing.phase is Phase.PAUSED  # accepted; the confirmation is still needed
    assert dealing.command("resume", resolution="enter_card", card="8H").ok
    assert dealt(dealing)[-1] == ("banker", "8H", "supervisor")


def test_several_cards_resent_after_a_restart_are_accepted_in_order() -> None:
    """The native shoe resends what it drew while the daemon was down: they arrive while the
    table is paused, and ``accept`` deals them in the order they came."""
    classic = table_for("blackjack-classic")
    classic.open_and_close_betting(boxes=1)
    classic.draw("9S")  # box 1's first card
    classic.send(ControllerStarted(classic.tick(), gaps_visible=True))
    classic.draw("5D", "KH")  # resent: the dealer's first card, then box 1's second card
    assert classic.machine.state.pause.held == (parse_card("5D"), parse_card("KH"))
    assert classic.command("resume", resolution="accept").ok
    log = [(entry[1], str(entry[2])) for entry in classic.machine.state.round_log]
    assert log == [("box1", "9S"), ("dealer", "5D"), ("box1", "KH")]
    assert classic.phase is Phase.DEALING  # the dealer's second card is due


def test_accepting_more_cards_than_the_round_takes_changes_nothing(dealing: Driver) -> None:
    dealing.send(ControllerStarted(dealing.tick(), gaps_visible=True))
    dealing.draw("7C", "8H", "2S")  # a natural 8 for the banker ends the round after two
    before = dealing.machine.snapshot()
    answer = dealing.command("resume", resolution="accept")
    assert not answer.ok and "burn" in answer.message, answer
    assert dealing.machine.snapshot() == before


def test_revision_3_journals_keep_their_reading() -> None:
    driver = Driver(TableMachine(config_for("baccarat"), revision=3))
    driver.new_shoe()
    driver.open_and_close_betting()
    driver.draw("9S", "TD")
    driver.send(ControllerStarted(driver.tick()))
    assert not driver.machine.state.pause.offline_gap
    assert driver.command("resume").ok


@pytest.mark.parametrize("gaps_visible", [False, True])
def test_a_restart_between_rounds_still_does_not_pause(table: Driver, gaps_visible: bool) -> None:
    table.send(ControllerStarted(table.tick(), gaps_visible=gaps_visible))
    assert table.phase is Phase.SHOE_READY
