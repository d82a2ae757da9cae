"""Cards, their notation and an 8-deck shoe that counts what it has seen.

Notation everywhere (wire, logs, journal, tests): rank ``A 2 3 4 5 6 7 8 9 T J Q K`` then suit
``S H D C``: ``AS``, ``TD``, ``QH``. ``10D`` is accepted on input and normalised to ``TD``.
Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from controller.kernel.errors import RulesError

RANKS: Final = "A23456789TJQK"
SUITS: Final = "SHDC"
RED_SUITS: Final = frozenset("HD")
DECKS_PER_SHOE: Final = 8
CARDS_PER_DECK: Final = 52


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """One playing card. Compare and hash by rank and suit; ``str(card)`` is its notation."""

    rank: str
    suit: str

    def __post_init__(self) -> None:
        if self.rank not in RANKS or len(self.rank) != 1:
            raise RulesError(f"unknown rank {self.rank!r}")
        if self.suit not in SUITS or len(self.suit) != 1:
            raise RulesError(f"unknown suit {self.suit!r}")

    def __str__(self) -> str:
        return self.rank + self.suit

    @property
    def rank_index(self) -> int:
        """1 for an ace up to 13 for a king."""
        return RANKS.index(self.rank) + 1

    @property
    def is_red(self) -> bool:
        return self.suit in RED_SUITS

    @property
    def baccarat_value(self) -> int:
        """A = 1, 2-9 face value, T/J/Q/K = 0."""
        index = self.rank_index
        return index if index < 10 else 0

    @property
    def blackjack_value(self) -> int:
        """A = 1 (the hand decides whether it counts 11), 2-9 face value, T/J/Q/K = 10."""
        return min(self.rank_index, 10)

    @property
    def burn_value(self) -> int:
        """How many cards the burn procedure discards after this revealed card."""
        return min(self.rank_index, 10)


def _build_card_table() -> dict[str, Card]:
    table: dict[str, Card] = {}
    for rank in RANKS:
        for suit in SUITS:
            card = Card(rank, suit)
            table[rank + suit] = card
            if rank == "T":
                table["10" + suit] = card
    return table


_CARDS_BY_TEXT: Final = _build_card_table()
ALL_FACES: Final[tuple[Card, ...]] = tuple(Card(r, s) for s in SUITS for r in RANKS)


def parse_card(text: str) -> Card:
    """Parse ``"AS"``, ``"td"`` or ``"10D"`` into a :class:`Card`; raise :class:`RulesError`."""
    if not isinstance(text, str):
        raise RulesError(f"a card must be a string like 'AS', not {text!r}")
    card = _CARDS_BY_TEXT.get(text.strip().upper())
    if card is None:
        raise RulesError(f"unknown card {text!r}: expected rank A23456789TJQK and suit SHDC")
    return card


def parse_cards(texts: Iterable[str]) -> list[Card]:
    return [parse_card(text) for text in texts]


@dataclass(slots=True)
class ShoeCount:
    """What an 8-deck shoe has yielded so far; a ninth copy of a face is impossible.

    ``record`` raises before it counts, so a rejected card leaves the count unchanged.
    """

    decks: int = DECKS_PER_SHOE
    seen: Counter[Card] = field(default_factory=Counter)

    @property
    def cards_seen(self) -> int:
        return sum(self.seen.values())

    @property
    def cards_left(self) -> int:
        return self.decks * CARDS_PER_DECK - self.cards_seen

    def remaining(self, card: Card) -> int:
        return self.decks - self.seen[card]

    def check(self, card: Card) -> None:
        """Raise :class:`RulesError` if ``card`` cannot come out of this shoe any more."""
        if self.seen[card] >= self.decks:
            raise RulesError(
                f"impossible card {card}: all {self.decks} copies have already been drawn"
            )

    def record(self, card: Card) -> None:
        self.check(card)
        self.seen[card] += 1
