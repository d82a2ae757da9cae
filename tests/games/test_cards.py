"""Card notation and the 8-deck shoe count (docs/rules-baccarat.md, Cards and notation)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.kernel.cards import ALL_FACES, Card, ShoeCount, parse_card, parse_cards
from controller.kernel.errors import RulesError


def test_there_are_52_distinct_faces() -> None:
    assert len(set(ALL_FACES)) == 52


@pytest.mark.parametrize("face", ALL_FACES, ids=str)
def test_notation_round_trips(face: Card) -> None:
    assert parse_card(str(face)) == face
    assert parse_card(str(face).lower()) == face


@pytest.mark.parametrize("suit", "SHDC")
def test_10_is_accepted_and_normalised_to_t(suit: str) -> None:
    assert str(parse_card("10" + suit)) == "T" + suit


@pytest.mark.parametrize("text", ["", "1S", "AX", "11D", "ASS", "T", "JOKER", "0H"])
def test_unknown_cards_are_refused(text: str) -> None:
    with pytest.raises(RulesError, match="unknown card"):
        parse_card(text)


def test_non_strings_are_refused() -> None:
    with pytest.raises(RulesError):
        parse_card(10)  # type: ignore[arg-type]


def test_point_values_per_game() -> None:
    cards = parse_cards(["AS", "2H", "9D", "TC", "JS", "QH", "KD"])
    assert [c.baccarat_value for c in cards] == [1, 2, 9, 0, 0, 0, 0]
    assert [c.blackjack_value for c in cards] == [1, 2, 9, 10, 10, 10, 10]
    assert [c.burn_value for c in cards] == [1, 2, 9, 10, 10, 10, 10]


def test_the_shoe_holds_eight_of_each_face_and_refuses_a_ninth() -> None:
    shoe = ShoeCount()
    queen = parse_card("QH")
    for _ in range(8):
        shoe.record(queen)
    assert shoe.remaining(queen) == 0
    with pytest.raises(RulesError, match="impossible card QH"):
        shoe.record(queen)
    assert shoe.seen[queen] == 8  # the refused card was not counted
    assert shoe.cards_left == 416 - 8


@settings(max_examples=50, deadline=None)
@given(st.permutations(list(ALL_FACES) * 8))
def test_a_whole_shuffled_shoe_is_accepted_and_nothing_more(order: list[Card]) -> None:
    shoe = ShoeCount()
    for card in order:
        shoe.record(card)
    assert shoe.cards_left == 0
    for face in ALL_FACES:
        with pytest.raises(RulesError):
            shoe.check(face)
