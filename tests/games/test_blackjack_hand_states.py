"""Every hand of a finished blackjack round says how it ended: ``playing`` is the state of a
hand that may still take a card or a decision (docs/mqtt-api.md, ``round.view``), never of a
hand in a settled round, a dealer blackjack included (docs/rules-blackjack.md, Order of a
round: the round ends at once and every hand stands as dealt)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.games.blackjack import BlackjackRound
from controller.games.cards import ALL_FACES, Card, parse_card
from tests.games.test_blackjack_properties import PROPERTY_SETTINGS, drive_randomly

CLASSIC = "blackjack-classic"
TWENTY_ONE = "blackjack-21"

# The initial deal of three boxes, in each game's deal order, the dealer holding A + K:
# box 1 a 16, box 2 a blackjack, box 3 a 20.
BOXES = (("9S", "7D"), ("AC", "QH"), ("TC", "KD"))
DEAL_ORDERS = {
    # each box's first card, the hole card, each box's second card, the up card
    CLASSIC: [b[0] for b in BOXES] + ["{hole}"] + [b[1] for b in BOXES] + ["{up}"],
    # each seat's first card, the up card, each seat's second card, the hole card
    TWENTY_ONE: [b[0] for b in BOXES] + ["{up}"] + [b[1] for b in BOXES] + ["{hole}"],
}


def dealt(game: str, up: str, hole: str) -> BlackjackRound:
    round_ = BlackjackRound(game, len(BOXES))
    for face in DEAL_ORDERS[game]:
        round_.deal(parse_card(face.format(up=up, hole=hole)))
    return round_


def hand_states(view: Any) -> list[list[str]]:
    return [[hand["state"] for hand in box["hands"]] for box in view["boxes"]]


@pytest.mark.parametrize("game", [CLASSIC, TWENTY_ONE])
def test_a_dealer_blackjack_under_a_ten_leaves_no_hand_playing(game: str) -> None:
    round_ = dealt(game, up="KH", hole="AH")
    assert round_.complete and round_.dealer_blackjack  # the peek: no decision asked
    expected = [["stood"], ["blackjack"], ["stood"]]
    assert hand_states(round_.public_view()) == expected
    settlement = round_.settlement()
    assert hand_states(settlement) == expected
    # The nets are those of a dealer blackjack: a player BJ pushes, every other hand loses.
    results = [[(h["net"], h["result"]) for h in box["hands"]] for box in settlement["boxes"]]
    assert results == [[(-1.0, "lose")], [(0.0, "push")], [(-1.0, "lose")]]


def test_a_classic_dealer_blackjack_under_an_ace_after_the_offers() -> None:
    round_ = dealt(CLASSIC, up="AH", hole="KH")
    # Insurance for box 1, even money for box 2's blackjack, insurance for box 3.
    for box, token in ((1, "Y"), (2, "Y"), (3, "N")):
        step = round_.next_step()
        assert step is not None and getattr(step, "box", None) == box
        round_.decide(box, 1, token)
    assert round_.complete
    assert hand_states(round_.settlement()) == [["stood"], ["even_money"], ["stood"]]
    assert [round_.box_net(box) for box in (1, 2, 3)] == [0.0, 1.0, -1.0]


def test_twenty_one_insures_every_seat_and_a_dealer_blackjack_ends_all_hands() -> None:
    round_ = dealt(TWENTY_ONE, up="AH", hole="KH")
    for box in (1, 2, 3):
        round_.decide(box, 1, "N")
    assert round_.complete
    assert hand_states(round_.settlement()) == [["stood"], ["blackjack"], ["stood"]]


@PROPERTY_SETTINGS
@given(
    game=st.sampled_from((CLASSIC, TWENTY_ONE)),
    boxes=st.integers(1, 5),
    cards=st.lists(st.sampled_from(ALL_FACES), min_size=60, max_size=60),
    seed=st.integers(0, 2**32),
)
def test_no_hand_of_a_complete_round_is_playing(
    game: str, boxes: int, cards: list[Card], seed: int
) -> None:
    round_ = BlackjackRound(game, boxes)
    drive_randomly(round_, cards, random.Random(seed))
    assert round_.complete
    for view in (round_.public_view(), round_.settlement()):
        states = {state for box in hand_states(view) for state in box}
        assert "playing" not in states, (round_.dealer, view)
