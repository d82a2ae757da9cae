"""The exact main-game recursion against hand counts and against the live engine itself.

Small shoes only, so each case takes a moment: a shoe counted by hand; every distinct order
of an 8-card shoe dealt through the live round (in the game's own deal order, hole card in
its place) with the simulation's player; and the floating-point dealer against the exact
one. The 8-deck figures and their agreement with the simulation are in
docs/rules-blackjack.md (they take seconds to minutes each, too long for the suite).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from controller.games.blackjack_exact import (
    APPROXIMATE,
    EXACT,
    _Analysis,
    full_shoe,
    main_game,
    problems,
    shoe_of,
)
from controller.games.blackjack_hand import rules_for
from controller.games.blackjack_rtp import main_net, play_round
from controller.games.registry import BLACKJACK, games_in
from controller.games.strategy import BasicStrategy
from controller.kernel.cards import Card
from controller.kernel.errors import RulesError

GAMES = games_in(BLACKJACK)


@pytest.mark.parametrize("game", GAMES)
def test_a_shoe_counted_by_hand(game: str) -> None:
    # Ten, ten, ten, 9, 8: four of them are dealt, nobody draws (every two-card total is 17
    # or more; T-T is not split). Leave out the 8 or the 9 and the player holds the 9 (or
    # 8) half the time: lose 19-20 (18-20), else win 20-19 (20-18). Leave out a ten: T-T
    # wins 20-17 and 9-8 loses 17-20 (1/6 each), T-9 wins 19-18 and T-8 loses 18-19 (2/6
    # each). So: win 1/2, lose 1/2.
    result = main_game(game, shoe_of("TTT98"), exact=True)
    assert result.net == {1.0: Fraction(1, 2), -1.0: Fraction(1, 2)}
    par = result.main_par()
    assert par.rtp == 1
    assert par.hit_frequency == Fraction(1, 2)
    assert par.standard_deviation == 1.0


class _ListShoe:
    """A shoe dealing a fixed order of cards, as the simulation's shoe deals a shuffled one."""

    def __init__(self, cards: tuple[Card, ...]) -> None:
        self.cards = cards
        self.next_index = 0

    def draw(self) -> Card:
        card = self.cards[self.next_index]
        self.next_index += 1
        return card


# Eight cards: a round here never needs more (the smallest two-card total is 15), and
# 8-8 is split in every game (a resplit is not possible: there is no third 8).
SMALL_SHOE_VALUES = "ATTT9887"


def _every_order(game: str) -> Fraction:
    """Mean net over every order of SMALL_SHOE, each played by the live round.

    Suits change nothing in the main game and K, Q, T play alike: the 40,320 orders of the
    eight cards are the 3,360 orders of their values, each standing for 12 of them.
    """
    values = sorted({order for order in itertools.permutations(SMALL_SHOE_VALUES)})
    strategy = BasicStrategy(game)
    total = Fraction(0)
    for order in values:
        cards = tuple(Card(rank, "S") for rank in order)
        round_, resolver = play_round(game, _ListShoe(cards), strategy)  # type: ignore[arg-type]
        total += Fraction(main_net(round_, resolver))
    return total / len(values)


@pytest.mark.parametrize("game", GAMES)
def test_every_order_through_the_live_round_gives_the_exact_figure(game: str) -> None:
    result = main_game(game, shoe_of(SMALL_SHOE_VALUES), exact=True, splits=EXACT)
    expected = sum(probability * Fraction(net) for net, probability in result.net.items())
    assert expected == _every_order(game)
    assert problems(result) == []


@pytest.mark.parametrize("game", GAMES)
def test_approximate_splits_move_little_and_only_where_a_hand_splits(game: str) -> None:
    shoe = shoe_of("AT9887AT9887TT")
    exact = main_game(game, shoe, splits=EXACT).main_par()
    approximate = main_game(game, shoe, splits=APPROXIMATE).main_par()
    assert exact.lines != approximate.lines  # 8-8 is split here, from a shoe of 14 cards
    assert abs(exact.rtp - approximate.rtp) < 0.01
    no_pairs = shoe_of("A23456789TJQK")  # one card of each value: never a pair (but tens)
    assert (
        main_game(game, no_pairs, splits=EXACT).net
        == main_game(game, no_pairs, splits=APPROXIMATE).net
    )


def test_floating_point_dealer_agrees_with_the_exact_one() -> None:
    for game in GAMES:
        rules = rules_for(game)
        exact = _Analysis(rules, True, True, True)
        fast = _Analysis(rules, False, True, True)
        for shoe in (full_shoe(1), shoe_of("A2345TTTTT9")):
            for up in range(1, 11):
                reference = exact.dealer(shoe, up)
                floating = fast.dealer(shoe, up)
                assert set(reference) == set(floating)
                for outcome, probability in reference.items():
                    assert floating[outcome] == pytest.approx(float(probability), abs=1e-14)


def test_one_deck_rounds_sum_to_one_and_come_out_about_even() -> None:
    # One deck, S17, DAS, 3:2: published one-deck games with these rules are about even
    # (8 decks cost about half a percent); a wrong weight or a lost branch is not.
    result = main_game("blackjack-classic", full_shoe(1))
    assert problems(result) == []
    assert 0.995 < result.main_par().rtp < 1.005


def test_bad_shoes_and_methods() -> None:
    with pytest.raises(RulesError, match="at least 4 cards"):
        main_game("blackjack-classic", shoe_of("TT9"))
    with pytest.raises(RulesError, match="unknown rank"):
        shoe_of("TTX")
    with pytest.raises(RulesError, match="splits are"):
        main_game("blackjack-classic", shoe_of("TTT98"), splits="guess")
    with pytest.raises(RulesError, match="no Bust Bonus"):
        main_game("blackjack-classic", shoe_of("TTT98")).bust_bonus_par()
