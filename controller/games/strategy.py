"""Basic strategy for each blackjack game's rules (8 decks, dealer stands on soft 17).

The standard total-dependent basic strategy for an 8-deck S17 shoe with the dealer's hole
card checked for BJ (every game here ends the round on a dealer BJ before anyone plays, which
is the same as a peek), adjusted per :class:`~controller.games.blackjack_hand.BlackjackRules`:
pair splits with or without double after split, late surrender where it is allowed (Boundless:
never against an Ace or ten, which leaves only 16 against a 9), and the fallbacks when a
double, split or surrender is not among the legal options (a third card, a split hand in 21,
the two-hand cap). Insurance and even money are always declined (they cost the player at
any count-blind decision). Used by the RTP simulation and the benchmarks.

Pure code: tables and lookups only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from controller.games.blackjack_hand import (
    DOUBLE,
    HIT,
    NO,
    RANK_VALUE,
    SPLIT,
    STAND,
    SURRENDER,
    BlackjackRules,
    Hand,
    rules_for,
)
from controller.kernel.cards import Card

# Dealer up cards in table column order: 2 3 4 5 6 7 8 9 T A (A as 11).
_COLUMNS: Final = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11)

# Codes: H hit, S stand, D double else hit, X double else stand, P split,
# Q split with double after split else hit, R surrender else hit.
_HARD: Final[Mapping[int, str]] = {
    **dict.fromkeys(range(4, 9), "HHHHHHHHHH"),
    9: "HDDDDHHHHH",
    10: "DDDDDDDDHH",
    11: "DDDDDDDDDH",
    12: "HHSSSHHHHH",
    13: "SSSSSHHHHH",
    14: "SSSSSHHHHH",
    15: "SSSSSHHHRH",
    16: "SSSSSHHRRR",
    **dict.fromkeys(range(17, 22), "SSSSSSSSSS"),
}
_SOFT: Final[Mapping[int, str]] = {
    12: "HHHHHHHHHH",  # A+A when it cannot be split
    13: "HHHDDHHHHH",
    14: "HHHDDHHHHH",
    15: "HHDDDHHHHH",
    16: "HHDDDHHHHH",
    17: "HDDDDHHHHH",
    18: "SXXXXSSHHH",
    19: "SSSSSSSSSS",
    20: "SSSSSSSSSS",
    21: "SSSSSSSSSS",
}
# Pairs by card value (2..10, 1 for aces). 5-5 and ten pairs are played as totals.
_PAIRS: Final[Mapping[int, str]] = {
    1: "PPPPPPPPPP",
    2: "QQPPPPHHHH",
    3: "QQPPPPHHHH",
    4: "HHHQQHHHHH",
    6: "QPPPPHHHHH",
    7: "PPPPPPHHHH",
    8: "PPPPPPPPPP",
    9: "PPPPPSPPSS",
}


def _column(up: Card) -> int:
    value = RANK_VALUE[up.rank]
    return _COLUMNS.index(11 if value == 1 else value)


class BasicStrategy:
    """Basic strategy for one game's rules: :meth:`decide` picks among the legal options."""

    __slots__ = ("_cache", "double_after_split", "rules")

    def __init__(self, rules: BlackjackRules | str) -> None:
        self.rules = rules_for(rules)
        self.double_after_split = self.rules.double_after_split
        self._cache: dict[tuple[int, bool, int, int, frozenset[str]], str] = {}

    def decide(self, hand: Hand, up: Card, options: frozenset[str]) -> str:
        """The basic-strategy token for ``hand`` against the dealer's ``up`` card."""
        cards = hand.cards
        pair_value = 0
        if SPLIT in options and len(cards) == 2:
            first = RANK_VALUE[cards[0].rank]
            if first == RANK_VALUE[cards[1].rank]:
                pair_value = first
        key = (hand.hard, hand.has_ace, pair_value, RANK_VALUE[up.rank], options)
        token = self._cache.get(key)
        if token is None:
            token = self._cache[key] = self._decide(hand.total, hand.soft, pair_value, up, options)
        return token

    def __call__(self, hand: Hand, up: Card, options: frozenset[str], default: str) -> str:
        """The decider signature of :class:`~controller.games.boundless.PlayerResolver`."""
        return self.decide(hand, up, options)

    def insurance(self) -> str:
        """Insurance and even money: always declined."""
        return NO

    def _decide(
        self, total: int, soft: bool, pair_value: int, up: Card, options: frozenset[str]
    ) -> str:
        column = _column(up)
        if pair_value:
            row = _PAIRS.get(pair_value)
            if row is not None:
                code = row[column]
                if code == "P" or (code == "Q" and self.double_after_split):
                    return SPLIT
        code = (_SOFT if soft else _HARD)[total][column] if total <= 21 else "S"
        if code == "R":
            return SURRENDER if SURRENDER in options else HIT
        if code == "D":
            return DOUBLE if DOUBLE in options else HIT
        if code == "X":
            return DOUBLE if DOUBLE in options else STAND
        if code == "S":
            return STAND
        return HIT
