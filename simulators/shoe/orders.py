"""The orders a simulated shoe's cards can come in: shuffled, as decks leave the factory, or
riffled a few times from factory order, to test that the table notices a shoe that was
never shuffled (``livetable sim shoe --order``).

Factory order is the new-deck order of the best-known casino and retail decks: spades ace
to king, diamonds ace to king, clubs king to ace, hearts king to ace. A riffle is the
Gilbert-Shannon-Reeds model (Bayer and Diaconis, "Trailing the Dovetail Shuffle to its
Lair"): the pack is cut binomially and the cards drop from each half with a probability
proportional to the cards left in it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Final

from controller.kernel.cards import ALL_FACES, RANKS, Card, parse_cards
from controller.kernel.errors import ConfigurationError, RulesError

ORDERS: Final = "shuffled, factory, riffle:N (N riffles of factory order) or a file of cards"


def factory_deck() -> list[Card]:
    """One deck in new-deck order."""
    up, down = RANKS, RANKS[::-1]
    return [
        Card(rank, suit)
        for suit, ranks in (("S", up), ("D", up), ("C", down), ("H", down))
        for rank in ranks
    ]


def factory_shoe(decks: int) -> list[Card]:
    """``decks`` decks in new-deck order, one after another."""
    return [card for _ in range(decks) for card in factory_deck()]


def riffle(cards: list[Card], rng: random.Random) -> list[Card]:
    """One Gilbert-Shannon-Reeds riffle of ``cards``."""
    cut = sum(rng.random() < 0.5 for _ in cards)
    left, right = cards[:cut], cards[cut:]
    merged: list[Card] = []
    i = j = 0
    while i < len(left) or j < len(right):
        left_count, right_count = len(left) - i, len(right) - j
        if rng.random() * (left_count + right_count) < left_count:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    return merged


def cut(cards: list[Card], rng: random.Random) -> list[Card]:
    """The cut a player makes before the shoe is dealt: any card may come first."""
    at = rng.randrange(len(cards))
    return cards[at:] + cards[:at]


def shoe_cards(order: str, decks: int, rng: random.Random) -> list[Card]:
    """A new shoe's cards in ``order`` (see :data:`ORDERS`); ConfigurationError if it means
    nothing or a file of cards does not hold exactly ``decks`` decks."""
    if order == "shuffled":
        cards = [face for face in ALL_FACES for _ in range(decks)]
        rng.shuffle(cards)
        return cards
    if order == "factory":
        return cut(factory_shoe(decks), rng)
    if order.startswith("riffle:"):
        count_text = order.removeprefix("riffle:")
        if not count_text.isdigit() or int(count_text) < 1:
            raise ConfigurationError(f"--order {order!r}: riffle:N needs N of 1 or more")
        cards = factory_shoe(decks)
        for _ in range(int(count_text)):
            cards = riffle(cards, rng)
        return cut(cards, rng)
    return _cards_from_file(Path(order), decks)


def _cards_from_file(path: Path, decks: int) -> list[Card]:
    try:
        words = path.read_text(encoding="utf-8").split()
    except OSError as error:
        raise ConfigurationError(
            f"--order {str(path)!r} is none of {ORDERS}: {error.strerror or error}"
        ) from None
    try:
        cards = parse_cards(words)
    except RulesError as error:
        raise ConfigurationError(f"--order {path}: {error}") from None
    expected = sorted(face for face in ALL_FACES for _ in range(decks))
    if sorted(cards) != expected:
        raise ConfigurationError(
            f"--order {path}: {len(cards)} cards that are not {decks} whole decks"
        )
    return cards
