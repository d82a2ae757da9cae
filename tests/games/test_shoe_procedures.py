"""The burn at a new shoe and the cut card (docs/rules-baccarat.md, Cards and shoe)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.shoe import (
    BurnProcedure,
    CutCard,
    burn_count,
    check_burn_count,
    final_round_number,
)
from controller.kernel.cards import ALL_FACES, RANKS, Card, parse_card, parse_cards
from controller.kernel.errors import RulesError

# docs/rules-baccarat.md, Burn at a new shoe: A = 1, 2-9 face value, T/J/Q/K = 10.
EXPECTED_BURN = {"A": 1, **{str(v): v for v in range(2, 10)}, "T": 10, "J": 10, "Q": 10, "K": 10}


@pytest.mark.parametrize("rank", RANKS)
def test_burn_value_of_every_rank(rank: str) -> None:
    for suit in "SHDC":
        assert burn_count(Card(rank, suit)) == EXPECTED_BURN[rank]


@settings(max_examples=100, deadline=None)
@given(revealed=st.sampled_from(ALL_FACES), rest=st.lists(st.sampled_from(ALL_FACES), max_size=12))
def test_burn_procedure_counts_exactly_the_burn_value(revealed: Card, rest: list[Card]) -> None:
    burn = BurnProcedure()
    assert burn.required is None
    assert burn.take(revealed) == "revealed"
    required = EXPECTED_BURN[revealed.rank]
    for index, card in enumerate(rest):
        if index < required:
            assert burn.take(card) == "burned"
        else:
            before = list(burn.burned)
            with pytest.raises(RulesError, match="too many"):
                burn.take(card)
            assert burn.burned == before  # a refused card changes nothing
    if len(rest) >= required:
        assert burn.complete
        assert burn.finish() == (revealed, tuple(rest[:required]))
    else:
        assert burn.remaining == required - len(rest)
        with pytest.raises(RulesError, match="too few"):
            burn.finish()


def test_the_revealed_card_is_not_counted_as_a_burn_card() -> None:
    burn = BurnProcedure()
    burn.take(parse_card("3H"))
    for card in parse_cards(["KS", "QS", "JS"]):
        burn.take(card)
    revealed, burned = burn.finish()
    assert revealed == parse_card("3H")
    assert [str(c) for c in burned] == ["KS", "QS", "JS"]


def test_finish_before_anything_was_revealed() -> None:
    with pytest.raises(RulesError, match="not started"):
        BurnProcedure().finish()


def test_take_refuses_what_is_not_a_card() -> None:
    with pytest.raises(RulesError):
        BurnProcedure().take("AS")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("revealed", "burned", "problem"),
    [("AS", 0, "too few"), ("AS", 2, "too many"), ("KD", 9, "too few"), ("KD", 11, "too many")],
)
def test_check_burn_count(revealed: str, burned: int, problem: str) -> None:
    with pytest.raises(RulesError, match=problem):
        check_burn_count(parse_card(revealed), burned)


def test_check_burn_count_accepts_the_exact_count() -> None:
    check_burn_count(parse_card("KD"), 10)
    check_burn_count(parse_card("7C"), 7)


def test_cut_card_during_a_round_makes_that_round_final() -> None:
    cut = CutCard()
    assert not cut.seen
    assert cut.drawn(last_round=31, round_in_progress=True) == 31
    assert not cut.is_final_round(30)
    assert cut.is_final_round(31)
    assert cut.shoe_ends_after(31)


def test_cut_card_between_rounds_makes_the_next_round_final() -> None:
    cut = CutCard()
    assert cut.drawn(last_round=31, round_in_progress=False) == 32
    assert not cut.shoe_ends_after(31)
    assert cut.shoe_ends_after(32)


def test_cut_card_before_the_first_round() -> None:
    assert CutCard().drawn(last_round=0, round_in_progress=False) == 1


def test_one_more_round_after_the_cut_card_is_a_table_setting() -> None:
    cut = CutCard(extra_rounds=1)
    assert cut.drawn(last_round=40, round_in_progress=True) == 41
    assert not cut.shoe_ends_after(40)
    assert cut.shoe_ends_after(41)


def test_a_second_cut_card_is_refused_and_changes_nothing() -> None:
    cut = CutCard()
    cut.drawn(last_round=5, round_in_progress=True)
    with pytest.raises(RulesError, match="second cut card"):
        cut.drawn(last_round=6, round_in_progress=True)
    assert cut.final_round == 5


def test_negative_extra_rounds_are_refused() -> None:
    with pytest.raises(RulesError):
        CutCard(extra_rounds=-1)
    with pytest.raises(RulesError):
        final_round_number(3, -1)
    with pytest.raises(RulesError):
        final_round_number(0)
