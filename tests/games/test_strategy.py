"""Basic strategy per game rules: the cells where the three games differ, and fallbacks."""

from __future__ import annotations

import pytest

from controller.games.blackjack_hand import Hand
from controller.games.strategy import BasicStrategy
from controller.kernel.cards import parse_card, parse_cards

CLASSIC = "blackjack-classic"
TWENTY_ONE = "blackjack-21"
BOUNDLESS = "blackjack-boundless"
ALL = frozenset("HSDPR")
NO_SURRENDER = frozenset("HSDP")
HIT_STAND = frozenset("HS")


def choose(game: str, hand: str, up: str, options: frozenset[str] = ALL) -> str:
    return BasicStrategy(game).decide(Hand(parse_cards(hand.split())), parse_card(up), options)


@pytest.mark.parametrize(
    ("hand", "up", "token"),
    [
        ("TS 6D", "TC", "H"),
        ("TS 6D", "6C", "S"),
        ("TS 2D", "3C", "H"),
        ("TS 2D", "4C", "S"),
        ("6S 5D", "TC", "D"),
        ("6S 5D", "AC", "H"),  # S17: 11 against an Ace hits
        ("5S 4D", "2C", "H"),
        ("5S 4D", "3C", "D"),
        ("5S 5D", "9C", "D"),  # 5-5 is a hard 10, never split
        ("AS 7D", "3C", "D"),
        ("AS 7D", "7C", "S"),
        ("AS 7D", "9C", "H"),
        ("AS 6D", "2C", "H"),
        ("AS 2D", "5C", "D"),
        ("AS 8D", "6C", "S"),
        ("9S 9D", "7C", "S"),
        ("9S 9D", "8C", "P"),
        ("TS KD", "6C", "S"),
        ("AS AD", "AC", "P"),
        ("8S 8D", "TC", "P"),
        ("7S 7D", "8C", "H"),
    ],
)
def test_common_cells_in_every_game(hand: str, up: str, token: str) -> None:
    for game in (CLASSIC, TWENTY_ONE, BOUNDLESS):
        assert choose(game, hand, up, NO_SURRENDER) == token, game


@pytest.mark.parametrize(
    ("hand", "up", "with_das", "without_das"),
    [
        ("4S 4D", "5C", "P", "H"),
        ("6S 6D", "2C", "P", "H"),
        ("6S 6D", "3C", "P", "P"),
        ("2S 2D", "3C", "P", "H"),
        ("2S 2D", "4C", "P", "P"),
        ("3S 3D", "2C", "P", "H"),
    ],
)
def test_pair_splits_depend_on_double_after_split(
    hand: str, up: str, with_das: str, without_das: str
) -> None:
    assert choose(CLASSIC, hand, up, NO_SURRENDER) == with_das
    assert choose(BOUNDLESS, hand, up, ALL) == with_das
    assert choose(TWENTY_ONE, hand, up, NO_SURRENDER) == without_das


def test_surrender_only_where_legal() -> None:
    assert choose(BOUNDLESS, "TS 6D", "9C", ALL) == "R"
    assert choose(BOUNDLESS, "TS 6D", "9C", NO_SURRENDER) == "H"
    assert choose(CLASSIC, "TS 6D", "9C", NO_SURRENDER) == "H"
    assert choose(BOUNDLESS, "TS 5D", "TC", NO_SURRENDER) == "H"


def test_fallbacks_when_double_or_split_is_not_offered() -> None:
    assert choose(CLASSIC, "6S 5D", "TC", HIT_STAND) == "H"  # D -> H
    assert choose(CLASSIC, "AS 7D", "3C", HIT_STAND) == "S"  # soft 18 double -> S
    assert choose(CLASSIC, "8S 8D", "TC", HIT_STAND) == "H"  # 16 vs T when split is spent
    assert choose(CLASSIC, "AS AD", "6C", HIT_STAND) == "H"
    assert choose(CLASSIC, "AS 2D 4C", "6C", HIT_STAND) == "H"  # soft 17 on three cards
    assert choose(CLASSIC, "TS 2D 5C", "6C", HIT_STAND) == "S"


def test_strategy_declines_insurance() -> None:
    assert BasicStrategy(CLASSIC).insurance() == "N"
