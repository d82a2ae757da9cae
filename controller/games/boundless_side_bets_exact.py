"""Exact return of Boundless blackjack's card-only side bets: Pair, Lucky Trio, Poker Trio.

PAR-sheet convention: the first round off the top of a freshly shuffled full shoe (8 decks,
416 cards). Pair depends on the shared hand's first two cards; Lucky Trio and Poker Trio on
those two and the dealer's up card. Every ordered draw of those cards is enumerated by *face*
(52 faces, ``decks`` copies of each), weighted by how many ordered draws of the physical cards
give it: 8 · 7 for two copies of one face, and so on. The weights are whole numbers over
416 · 415 (· 414), so every probability, RTP and hit frequency is an exact fraction.

Which draw is which position does not matter: the three cards are the first three off the
shoe in every deal order the games use (player, up, player), and the patterns are those of
:mod:`controller.games.boundless_side_bets` itself (no second copy of the pay rules).

Bust Bonus depends on the dealer's whole hand, hence on how many common cards the players
take first: it is computed with the main game in :mod:`controller.games.blackjack_exact`.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Final

from controller.games.boundless_side_bets import (
    LUCKY_TRIO,
    LUCKY_TRIO_PAYS,
    PAIR,
    PAIR_PAYS,
    POKER_TRIO,
    POKER_TRIO_PAYS,
    lucky_trio_pattern,
    pair_pattern,
    poker_trio_pattern,
)
from controller.games.par import BetPar, PayLine
from controller.kernel.cards import ALL_FACES, DECKS_PER_SHOE
from controller.kernel.errors import RulesError

NO_PATTERN: Final = "no pattern (loses)"
METHOD: Final = (
    "exact: every ordered draw of the {cards} first cards off a full {decks}-deck shoe, "
    "by face, weighted by its number of physical draws (whole numbers)"
)


def _check_decks(decks: int) -> None:
    if decks < 1:
        raise RulesError(f"a shoe has at least one deck, not {decks}")


@lru_cache(maxsize=8)
def pair_counts(decks: int = DECKS_PER_SHOE) -> tuple[tuple[str | None, int], ...]:
    """(pattern or None, number of ordered draws of the first two cards) for every pattern."""
    _check_decks(decks)
    counts: dict[str | None, int] = defaultdict(int)
    for first, second in itertools.product(ALL_FACES, repeat=2):
        weight = decks * (decks - (first == second))
        if weight:
            counts[pair_pattern(first, second)] += weight
    return tuple(counts.items())


@lru_cache(maxsize=8)
def trio_counts(decks: int = DECKS_PER_SHOE) -> tuple[tuple[str | None, str | None, int], ...]:
    """(Lucky Trio pattern, Poker Trio pattern, ordered draws of the three cards) per pair of
    patterns: both bets read the same three cards, so they share one enumeration."""
    _check_decks(decks)
    counts: dict[tuple[str | None, str | None], int] = defaultdict(int)
    for first, second, up in itertools.product(ALL_FACES, repeat=3):
        weight = decks * (decks - (first == second)) * (decks - (up == first) - (up == second))
        if weight > 0:
            patterns = (
                lucky_trio_pattern(first, second, up),
                poker_trio_pattern(first, second, up),
            )
            counts[patterns] += weight
    return tuple((lucky, poker, weight) for (lucky, poker), weight in counts.items())


def _par(
    bet: str,
    pays: Mapping[str, float],
    counts: Mapping[str | None, int],
    cards: int,
    decks: int,
) -> BetPar:
    total = sum(counts.values())
    lines = [
        PayLine(pattern, Fraction(repr(net)), Fraction(counts.get(pattern, 0), total))
        for pattern, net in pays.items()
    ]
    lines.append(PayLine(NO_PATTERN, Fraction(-1), Fraction(counts.get(None, 0), total)))
    return BetPar(bet, tuple(lines), METHOD.format(cards=cards, decks=decks)).check()


def pair_par(decks: int = DECKS_PER_SHOE) -> BetPar:
    counts: dict[str | None, int] = dict(pair_counts(decks))
    return _par(PAIR, PAIR_PAYS, counts, 2, decks)


def _trio_par(
    bet: str,
    pays: Mapping[str, float],
    pick: Callable[[str | None, str | None], str | None],
    decks: int,
) -> BetPar:
    counts: dict[str | None, int] = defaultdict(int)
    for lucky, poker, weight in trio_counts(decks):
        counts[pick(lucky, poker)] += weight
    return _par(bet, pays, counts, 3, decks)


def lucky_trio_par(decks: int = DECKS_PER_SHOE) -> BetPar:
    return _trio_par(LUCKY_TRIO, LUCKY_TRIO_PAYS, lambda lucky, _poker: lucky, decks)


def poker_trio_par(decks: int = DECKS_PER_SHOE) -> BetPar:
    return _trio_par(POKER_TRIO, POKER_TRIO_PAYS, lambda _lucky, poker: poker, decks)


def card_side_bets_par(decks: int = DECKS_PER_SHOE) -> dict[str, BetPar]:
    """Pair, Lucky Trio and Poker Trio, exactly, off the top of a full ``decks``-deck shoe."""
    return {par.bet: par for par in (pair_par(decks), lucky_trio_par(decks), poker_trio_par(decks))}
