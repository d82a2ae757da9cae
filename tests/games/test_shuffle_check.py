"""A shoe that was never shuffled is caught from its first cards; a shuffled one is not.

The false-alarm bound is proved in ``controller/games/shuffle_check.py`` (the likelihood ratio
is a supermartingale under a shuffled shoe); these tests check the step that proof rests on,
exactly, and the detector's behaviour on the orders the shoe simulator deals. The rates over
a million shoes are measured by ``livetable bench shuffle``."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.shuffle_check import (
    ALARM_RATIO,
    RUN_CONTINUES,
    WATCHED_CARDS,
    ShuffleCheck,
    check_cards,
)
from controller.kernel.cards import ALL_FACES, Card, parse_cards
from controller.kernel.errors import ConfigurationError
from simulators.shoe.orders import factory_deck, factory_shoe, riffle, shoe_cards

FULL_SHOE = sorted(face for face in ALL_FACES for _ in range(8))


def test_factory_order_is_a_deck_of_each_face_once() -> None:
    deck = factory_deck()
    assert sorted(deck) == sorted(ALL_FACES)
    assert [str(card) for card in deck[:3]] == ["AS", "2S", "3S"]
    assert [str(card) for card in deck[-2:]] == ["2H", "AH"]


def test_every_cut_of_a_factory_shoe_alarms_within_six_cards() -> None:
    """Wherever a player's cut puts the first card, the alarm comes by the sixth card: before
    a first baccarat round settles even when an ace is revealed (reveal, one burn, four)."""
    shoe = factory_shoe(8)
    latest = 0
    for start in range(len(shoe)):
        cards = shoe[start:] + shoe[:start]
        _, alarmed_at = check_cards(cards[:12])
        assert alarmed_at is not None, f"not caught when the cut starts at {cards[0]}"
        latest = max(latest, alarmed_at)
    assert latest <= 6


def test_shuffled_shoes_raise_no_alarm_and_stay_far_below_it() -> None:
    rng = random.Random(20261206)
    highest = -math.inf
    for _ in range(3000):
        cards = shoe_cards("shuffled", 8, rng)
        check, alarmed_at = check_cards(cards[:WATCHED_CARDS])
        assert alarmed_at is None, cards[:WATCHED_CARDS]
        highest = max(highest, check.log_ratio)
    # Ville's bound allows one shoe in 1e8; in 3,000 the highest ratio is orders below it.
    assert highest < math.log(ALARM_RATIO) / 2


def test_most_decks_riffled_once_are_caught_within_the_watched_cards() -> None:
    """A single riffle leaves new-deck order at about half the cards: most such shoes are
    caught (some 85 % by ``livetable bench shuffle``), none is a false alarm to excuse."""
    rng = random.Random(7)
    caught = sum(
        check_cards(shoe_cards("riffle:1", 8, rng)[:WATCHED_CARDS])[1] is not None
        for _ in range(200)
    )
    assert caught >= 150


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(min_value=0, max_value=60))
def test_the_ratio_grows_by_at_most_one_on_average_under_a_shuffled_shoe(
    rng: random.Random, dealt: int
) -> None:
    """The step Ville's inequality rests on, computed exactly: from any state reached by a
    shuffled shoe, the ratio's expected factor at the next card, under the true chances of
    the cards left, is at most 1."""
    shoe = list(FULL_SHOE)
    rng.shuffle(shoe)
    check = ShuffleCheck(8)
    for card in shoe[:dealt]:
        check = check.seen_card(card)
    if not check.watching:
        return
    left = Counter(shoe[dealt:])
    total = sum(left.values())
    expected = sum(
        Fraction(count, total)
        * Fraction(math.exp(check.seen_card(face).log_ratio - check.log_ratio))
        for face, count in left.items()
    )
    assert expected <= 1 + Fraction(1, 10**9)


def test_a_run_multiplies_the_ratio_and_a_break_divides_it() -> None:
    check = ShuffleCheck(8).seen_card(Card("5", "H"))
    up = check.seen_card(Card("6", "H"))
    # Either neighbour continues the run while it has no direction: half the chance each.
    assert up.ratio == pytest.approx(1 - RUN_CONTINUES + RUN_CONTINUES / 2 * 415 / 8)
    assert up.direction == 1
    onward = up.seen_card(Card("7", "H"))
    assert onward.ratio / up.ratio == pytest.approx(1 - RUN_CONTINUES + RUN_CONTINUES * 414 / 8)
    backward = up.seen_card(Card("5", "H"))  # against the run's direction: a break
    assert backward.ratio / up.ratio == pytest.approx(1 - RUN_CONTINUES)
    assert backward.direction == 0


def test_the_check_stops_after_the_watched_cards() -> None:
    cards = shoe_cards("shuffled", 8, random.Random(3))
    check, _ = check_cards(cards[:WATCHED_CARDS])
    assert not check.watching
    assert check.seen_card(cards[WATCHED_CARDS]) == check


def test_a_riffle_keeps_every_card_and_interleaves_two_packets() -> None:
    deck = factory_deck()
    mixed = riffle(deck, random.Random(5))
    assert sorted(mixed) == sorted(deck) and mixed != deck
    # One riffle leaves at most two rising sequences of the original positions.
    where = [mixed.index(card) for card in deck]
    new_sequences = sum(later < earlier for earlier, later in itertools.pairwise(where))
    assert new_sequences <= 1


def test_a_file_order_must_hold_whole_decks(tmp_path: Path) -> None:
    good = tmp_path / "one.txt"
    good.write_text(" ".join(str(card) for card in factory_deck()))
    assert shoe_cards(str(good), 1, random.Random(0)) == factory_deck()
    short = tmp_path / "short.txt"
    short.write_text("AS 2S")
    with pytest.raises(ConfigurationError, match="2 cards that are not 1 whole decks"):
        shoe_cards(str(short), 1, random.Random(0))
    with pytest.raises(ConfigurationError, match="riffle:N needs N of 1 or more"):
        shoe_cards("riffle:0", 8, random.Random(0))
    with pytest.raises(ConfigurationError, match="is none of shuffled, factory"):
        shoe_cards("sorted", 8, random.Random(0))
    assert parse_cards(["AS"]) == [Card("A", "S")]
