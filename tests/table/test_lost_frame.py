"""A card whose frame the shoe lost (a protocol that cannot send it again, such as Angel Eye):
the table only notices when the dealer idle deadline passes, or when the shoe's numbering
shows the gap with its next card. The supervisor enters the card lying on the felt at the
dealer-idle pause; the gap that card left is then accounted for and pauses nothing."""

from __future__ import annotations

from controller.table.events import CardsLost, TimerExpired
from controller.table.machine import TableMachine
from controller.table.state import Phase
from controller.table.views import public_state
from tests.table.driver import Driver, config_for
from tests.table.test_anomalies import assert_paused, finish_round


def test_a_dealer_idle_pause_while_a_card_is_due_takes_the_card_from_the_felt(
    dealing: Driver,
) -> None:
    dealing.expire("dealer_idle")
    assert_paused(dealing, "dealer_idle")
    pause = dealing.machine.state.pause
    assert pause.idle_gap and pause.needs() == []  # a plain resume would do too
    shown = public_state(dealing.machine.config, dealing.machine.state)["paused"]
    assert shown["idle_gap"] is True
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    assert dealing.phase is Phase.DEALING and dealing.expected_position() == "banker"
    entered = dealing.published_events("card_dealt")[-1]
    assert (entered["card"], entered["source"], entered["position"]) == (
        "KC",
        "supervisor",
        "player",
    )
    # The shoe's next card shows the gap of the lost frame first: news, not a pause.
    pauses = len(dealing.published_events("table_paused"))
    dealing.send(CardsLost((7,), dealing.tick()))
    assert dealing.phase is Phase.DEALING
    assert len(dealing.published_events("table_paused")) == pauses
    assert dealing.published_events("cards_lost")[-1] == {"count": 1}
    dealing.draw("3H")
    settled = dealing.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]


def test_a_gap_wider_than_the_cards_entered_still_pauses_for_the_rest(dealing: Driver) -> None:
    dealing.expire("dealer_idle")
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    dealing.send(CardsLost((7, 8), dealing.tick()))
    assert_paused(dealing, "cards_lost")
    assert dealing.machine.state.pause.held == (None,)  # one of the two is spoken for
    assert dealing.command("resume", resolution="burn").ok
    dealing.draw("3H")
    assert dealing.published_events("round_settled")


def test_a_card_the_shoe_announces_closes_the_window_for_an_entered_card(
    dealing: Driver,
) -> None:
    """The dealer was slow, not the shoe: the supervisor's card was the last one laid, and
    the shoe's next card comes without a gap. A gap later is a new loss, and pauses."""
    dealing.expire("dealer_idle")
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    dealing.draw("3H")  # the round settles
    assert dealing.request_round().ok
    dealing.expire("betting")
    dealing.send(CardsLost((9,), dealing.tick()))
    assert_paused(dealing, "cards_lost")


def test_a_plain_resume_still_does_when_no_card_was_drawn(dealing: Driver) -> None:
    dealing.expire("dealer_idle")
    assert dealing.command("resume").ok
    finish_round(dealing)


def test_a_dealer_idle_pause_with_no_card_due_takes_no_card(table: Driver) -> None:
    table.open_and_close_betting()
    table.draw("9S", "TD", "KC", "3H")  # settled: no card is due
    assert table.request_round().ok
    table.send(TimerExpired(10_000, table.tick()))  # no such timer: stale, nothing happens
    assert table.phase is Phase.BETTING
    table.expire("betting")
    table.expire("dealer_idle")
    assert table.machine.state.pause.idle_gap  # the round's first card is due
    answer = table.command("resume", resolution="enter_card")
    assert not answer.ok and "needs the card" in answer.message


def test_a_journal_of_machine_revision_2_replays_by_its_rules() -> None:
    """Before revision 3 a dealer-idle pause took no card, and any gap paused the table."""
    config = config_for("baccarat")
    old = Driver(TableMachine(config, None, revision=2))
    old.new_shoe()
    old.open_and_close_betting()
    old.draw("9S", "TD")
    old.expire("dealer_idle")
    assert not old.machine.state.pause.idle_gap
    answer = old.command("resume", resolution="enter_card", card="KC")
    assert not answer.ok and "no card is waiting" in answer.message
    assert old.command("resume").ok
    old.send(CardsLost((7,), old.tick()))
    assert_paused(old, "cards_lost")


def test_a_late_frame_of_the_card_entered_by_hand_is_held_not_dealt_again(
    dealing: Driver,
) -> None:
    """The supervisor entered the KC lying on the felt, but the shoe had only been slow: its
    KC comes after all, with no gap before it. Dealt, it would be the banker's card; the
    table holds it for the supervisor instead."""
    dealing.expire("dealer_idle")
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    dealing.draw("KC")
    assert_paused(dealing, "card_out_of_turn")
    assert "entered by hand" in dealing.machine.state.pause.message
    assert "KC" not in dealing.machine.state.pause.message
    assert dealing.command("resume", resolution="burn").ok
    dealing.draw("3H")
    settled = dealing.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]


def test_another_card_of_that_face_can_be_accepted(dealing: Driver) -> None:
    dealing.expire("dealer_idle")
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    dealing.draw("KC")  # a second king of clubs, drawn for the banker
    assert dealing.command("resume", resolution="accept").ok
    settled = dealing.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "KC"]


def test_after_the_gap_the_same_face_is_still_held(dealing: Driver) -> None:
    """A gap then a card of the entered face: the gap may be another card's (a frame lost
    earlier), so the table cannot tell this card from the entered one's late frame. It holds
    it; the supervisor, looking at the felt, accepts a second king of clubs."""
    dealing.expire("dealer_idle")
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    dealing.send(CardsLost((7,), dealing.tick()))  # a gap: accounted, nothing pauses
    assert dealing.phase is Phase.DEALING
    dealing.draw("KC")
    assert_paused(dealing, "card_out_of_turn")
    assert "KC" not in dealing.machine.state.pause.message  # it may be a hole card
    assert dealing.command("resume", resolution="accept").ok
    settled = dealing.published_events("round_settled")[-1]["result"]
    assert settled["banker"] == ["TD", "KC"]
