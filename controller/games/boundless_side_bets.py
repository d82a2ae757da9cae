"""Boundless blackjack's four side bets: pay tables, patterns and when each may be placed.

docs/rules-blackjack.md, "Side bets", restates the rules and the pay tables. Each bet is
1 unit, settled as a net per unit: Pair, Bust Bonus, Lucky Trio, Poker Trio, each paying only
its highest pattern, each available in the first N rounds of a shoe. They depend on the cards
alone (the shared first two player cards and the dealer's hand), not on any player's
decisions, so the live round (:mod:`controller.games.blackjack`) settles them itself.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from controller.games.blackjack_hand import hand_total
from controller.kernel.cards import Card
from controller.kernel.errors import RulesError

PAIR: Final = "pair"
BUST_BONUS: Final = "bust_bonus"
LUCKY_TRIO: Final = "lucky_trio"
POKER_TRIO: Final = "poker_trio"
SIDE_BETS: Final = (PAIR, BUST_BONUS, LUCKY_TRIO, POKER_TRIO)

# "Maximum availability per round": the bet may be placed in rounds 1..N of a shoe only
# (docs/rules-blackjack.md, Side-bet limits).
SIDE_BET_LIMITS: Final[Mapping[str, int]] = {
    PAIR: 40,
    BUST_BONUS: 45,
    LUCKY_TRIO: 45,
    POKER_TRIO: 45,
}

# Pay tables: pattern -> payout per unit (a:b as a / b). Patterns are checked highest first.
PAIR_PAYS: Final[Mapping[str, float]] = {
    "perfect_pair": 30.0,
    "coloured_pair": 10.0,
    "mixed_pair": 5.0,
}
BUST_BONUS_PAYS: Final[Mapping[int, float]] = {3: 1.0, 4: 2.0, 5: 9.0, 6: 50.0, 7: 100.0}
BUST_BONUS_EIGHT_OR_MORE: Final = 250.0
LUCKY_TRIO_PAYS: Final[Mapping[str, float]] = {
    "suited_777": 200.0,
    "suited_678": 100.0,
    "777": 50.0,
    "678": 30.0,
    "suited_21": 10.0,
    "21": 3.0,
    "19_or_20": 2.0,
}
POKER_TRIO_PAYS: Final[Mapping[str, float]] = {
    "suited_three_of_a_kind": 100.0,
    "straight_flush": 40.0,
    "three_of_a_kind": 30.0,
    "straight": 10.0,
    "flush": 5.0,
}


def side_bet_available(bet: str, round_in_shoe: int) -> bool:
    """Whether ``bet`` may be placed in round ``round_in_shoe`` (1-based) of the shoe."""
    limit = SIDE_BET_LIMITS.get(bet)
    if limit is None:
        raise RulesError(f"unknown Boundless side bet {bet!r}: expected one of {SIDE_BETS}")
    if round_in_shoe < 1:
        raise RulesError(f"rounds in a shoe count from 1, not {round_in_shoe}")
    return round_in_shoe <= limit


def pair_pattern(first: Card, second: Card) -> str | None:
    """The player's first two cards: same rank, then by suit and colour; highest only."""
    if first.rank != second.rank:
        return None
    if first.suit == second.suit:
        return "perfect_pair"
    if first.is_red == second.is_red:
        return "coloured_pair"
    return "mixed_pair"


def bust_bonus_payout(dealer: Sequence[Card]) -> float | None:
    """Payout when the dealer's final hand busts, by its number of cards; else None."""
    if hand_total(dealer)[0] <= 21:
        return None
    count = len(dealer)
    if count >= 8:
        return BUST_BONUS_EIGHT_OR_MORE
    return BUST_BONUS_PAYS.get(count)


def _one_suit(cards: Sequence[Card]) -> bool:
    return cards[0].suit == cards[1].suit == cards[2].suit


def lucky_trio_pattern(first: Card, second: Card, up: Card) -> str | None:
    """Player's first two cards and the dealer's up card, highest pattern only."""
    cards = (first, second, up)
    suited = _one_suit(cards)
    ranks = sorted(card.rank for card in cards)
    if ranks == ["7", "7", "7"]:
        return "suited_777" if suited else "777"
    if ranks == ["6", "7", "8"]:
        return "suited_678" if suited else "678"
    total, _ = hand_total(cards)  # Decision: the best Ace, as in blackjack
    if total == 21:
        return "suited_21" if suited else "21"
    if total in (19, 20):
        return "19_or_20"
    return None


def _is_straight(cards: Sequence[Card]) -> bool:
    indexes = sorted(card.rank_index for card in cards)
    if len(set(indexes)) != 3:
        return False
    if indexes[2] - indexes[0] == 2:
        return True
    return indexes == [1, 12, 13]  # Q-K-A: the Ace high; K-A-2 does not wrap


def poker_trio_pattern(first: Card, second: Card, up: Card) -> str | None:
    """Player's first two cards and the dealer's up card as a 3-card poker hand."""
    cards = (first, second, up)
    suited = _one_suit(cards)
    if first.rank == second.rank == up.rank:
        return "suited_three_of_a_kind" if suited else "three_of_a_kind"
    if _is_straight(cards):
        return "straight_flush" if suited else "straight"
    if suited:
        return "flush"
    return None


def side_bet_results(player_first_two: Sequence[Card], dealer: Sequence[Card]) -> dict[str, float]:
    """Net per unit of each side bet, from the shared first two cards and the dealer's hand.

    ``dealer`` is the dealer's complete hand with the up card (dealt first in Boundless)
    at index 0.
    """
    if len(player_first_two) < 2 or len(dealer) < 2:
        raise RulesError("side bets need the player's first two cards and the dealer's hand")
    first, second = player_first_two[0], player_first_two[1]
    up = dealer[0]
    pair = pair_pattern(first, second)
    bust = bust_bonus_payout(dealer)
    trio = lucky_trio_pattern(first, second, up)
    poker = poker_trio_pattern(first, second, up)
    return {
        PAIR: PAIR_PAYS[pair] if pair else -1.0,
        BUST_BONUS: bust if bust is not None else -1.0,
        LUCKY_TRIO: LUCKY_TRIO_PAYS[trio] if trio else -1.0,
        POKER_TRIO: POKER_TRIO_PAYS[poker] if poker else -1.0,
    }
