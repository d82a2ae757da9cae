"""The simulated dealer lays the round's cards on the camera simulator's felt, slot by slot,
as the table's display and published events say: face down when told, split hands moved
apart (a resplit renumbering the hands after it, as the rules do), the hole card turned
over, everything collected at the round's end. The shoe is the real simulator on a pty."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.kernel.cards import parse_card
from controller.table.effects import PublishEvent, PublishState, TellDealer
from controller.table.machine import TableMachine
from simulators.camera import SimulatedCamera
from simulators.dealer import FACE_DOWN, DealerSimulator
from simulators.shoe.simulator import ShoeSimulator
from tests.support.wait import wait_until
from tests.table.driver import Driver, config_for

# The dealer works in its own thread; generous, as a loaded machine may be slow to run it.
TIMEOUT_S = 10.0


@pytest.fixture
def shoe(tmp_path: Path) -> Iterator[ShoeSimulator]:
    with ShoeSimulator("angel-eye", tmp_path / "shoe", seed=4, cut_card_depth=0) as simulator:
        yield simulator


def deal(position: str, face_down: bool = False) -> TellDealer:
    how = "face down" if face_down else "face up"
    return TellDealer("deal", f"next card to {position}, {how}", position=position)


def split(box: int, hand: int) -> PublishEvent:
    payload = {"round_id": 1, "kind": "play", "box": box, "hand": hand, "decision": "P"}
    return PublishEvent("decision_taken", payload)


def drawn_cards(shoe: ShoeSimulator) -> list[str]:
    return [e.card for e in shoe.truth if e.event in ("card", "misread") and e.card]


def test_cards_go_to_their_slots_and_follow_a_split_and_a_resplit(shoe: ShoeSimulator) -> None:
    felt = SimulatedCamera("blackjack-21", "kde-standard", seed=1)
    with DealerSimulator(shoe, pace_s=0.0, felt=felt) as dealer:
        for instruction in (deal("box1"), deal("dealer"), deal("box1"), deal("dealer", True)):
            dealer.tell(instruction)
        wait_until(lambda: dealer.cards_drawn == 4, TIMEOUT_S, "the dealer's card 4")
        first, up, second, hole = (parse_card(c) for c in drawn_cards(shoe))
        wait_until(lambda: len(felt.dealt()) == 4, TIMEOUT_S, "4 cards on the felt")
        assert felt.dealt() == {
            "box1.hand1.card1": first,
            "dealer.card1": up,
            "box1.hand1.card2": second,
            "dealer.card2": hole,
        }
        assert dealer.on_felt["dealer.card2"] == (hole, True)
        dealer.observe(split(1, 1))  # hand 1: first; hand 2: second
        dealer.tell(deal("box1.hand1"))  # hand 1's second card
        wait_until(lambda: dealer.cards_drawn == 5, TIMEOUT_S, "the dealer's card 5")
        third = parse_card(drawn_cards(shoe)[-1])
        dealer.observe(split(1, 1))  # a resplit: the new hand 2 takes third, hand 2 -> 3
        dealer.tell(deal("box1.hand2"))
        wait_until(lambda: dealer.cards_drawn == 6, TIMEOUT_S, "the dealer's card 6")
        fourth = parse_card(drawn_cards(shoe)[-1])
        wait_until(lambda: "box1.hand2.card2" in felt.dealt(), TIMEOUT_S, "box1.hand2.card2")
        on_felt = felt.dealt()
        assert {slot: on_felt[slot] for slot in on_felt if slot.startswith("box1")} == {
            "box1.hand1.card1": first,
            "box1.hand2.card1": third,
            "box1.hand2.card2": fourth,
            "box1.hand3.card1": second,
        }


def test_the_hole_card_is_turned_over_when_the_rules_show_it_and_collected_at_the_end(
    shoe: ShoeSimulator,
) -> None:
    felt = SimulatedCamera("blackjack-classic", "kde-standard", seed=1)
    with DealerSimulator(shoe, pace_s=0.0, felt=felt) as dealer:
        dealer.tell(deal("dealer", face_down=True))  # classic: the hole card comes first
        # The state published as the next card is asked for shows no hidden card yet:
        # it must not turn over the card just laid face down.
        dealer.observe(PublishState({"round": {"dealer": {"cards": []}}}))
        dealer.tell(deal("dealer"))
        dealer.observe(PublishState({"round": {"dealer": {"cards": [None]}}}))
        wait_until(lambda: dealer.cards_drawn == 2, TIMEOUT_S, "the dealer's card 2")
        hole, up = (parse_card(c) for c in drawn_cards(shoe))
        dealer.observe(PublishState({"round": {"dealer": {"cards": [None, str(up)]}}}))
        dealer.observe(PublishState({"round": {"dealer": {"cards": [str(up)]}}}))  # stale
        dealer.tell(deal("box1"))  # once it is drawn, everything before has been seen to
        wait_until(lambda: dealer.cards_drawn == 3, TIMEOUT_S, "the dealer's card 3")
        assert dealer.on_felt["dealer.card1"] == (hole, True)
        dealer.observe(PublishState({"round": {"dealer": {"cards": [str(hole), str(up)]}}}))
        wait_until(
            lambda: dealer.on_felt["dealer.card1"] == (hole, False),
            TIMEOUT_S,
            "the hole card face up",
        )
        dealer.observe(PublishEvent("round_settled", {"round_id": 1}))
        wait_until(lambda: not felt.dealt(), TIMEOUT_S, "the felt cleared")
        assert dealer.on_felt == {}


def test_reveal_turns_a_face_down_card_over_and_otherwise_draws_the_first_card(
    shoe: ShoeSimulator,
) -> None:
    with DealerSimulator(shoe, pace_s=0.0) as dealer:  # no felt: the dealer still knows
        dealer.tell(TellDealer("reveal", "draw the first card of the shoe and reveal it"))
        wait_until(lambda: dealer.cards_drawn == 1, TIMEOUT_S, "the dealer's card 1")
        dealer.tell(deal("dealer", face_down=True))
        wait_until(lambda: dealer.cards_drawn == 2, TIMEOUT_S, "the dealer's card 2")
        dealer.tell(TellDealer("reveal", "turn the hole card over for the camera"))
        wait_until(
            lambda: not any(down for _card, down in dealer.on_felt.values()),
            TIMEOUT_S,
            "every card face up",
        )
        assert dealer.cards_drawn == 2  # turned over, not drawn


def test_misreads_only_among_round_cards(shoe: ShoeSimulator) -> None:
    with DealerSimulator(shoe, pace_s=0.0, misread_rate=1.0) as dealer:
        dealer.tell(TellDealer("burn", "burn 3 card(s) face down", count=3))
        dealer.tell(deal("player"))
        wait_until(lambda: dealer.cards_drawn == 4, TIMEOUT_S, "the dealer's card 4")
    assert [e.event for e in shoe.truth if e.event in ("card", "misread")] == [
        "card",
        "card",
        "card",
        "misread",
    ]
    assert shoe.faults.unreadable_rate == 0.0  # the shoe's own plan is put back


def test_the_table_marks_the_hole_card_as_the_dealer_reads_it() -> None:
    # The dealer knows a card goes face down from the display's words: keep them in step.
    driver = Driver(TableMachine(config_for("blackjack-classic")))
    driver.new_shoe()
    driver.open_and_close_betting(boxes=1)
    driver.draw("TS")
    (line,) = [effect for effect in driver.last if isinstance(effect, TellDealer)]
    assert line.position == "dealer" and line.message.endswith(FACE_DOWN)
    driver.misread()
    (line,) = [effect for effect in driver.last if isinstance(effect, TellDealer)]
    assert line.position == "box1" and not line.message.endswith(FACE_DOWN)
