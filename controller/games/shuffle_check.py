"""Whether a new shoe looks shuffled, judged card by card from its first cards.

Decks leave the factory in suit order (one suit ace to king, the next, some suits king to
ace); a shoe built from such decks and never shuffled deals long runs of one suit in rank
order, and a player who notices can bet on what comes next. In 2012 a casino in Atlantic
City dealt mini-baccarat from decks that arrived unshuffled and lost about $1.5 million
before anyone stopped the game.

The test is a sequential likelihood ratio. Under the hypothesis that the shoe is shuffled,
the next card is any card left, each face with probability at most ``decks / cards left``.
Under the alternative, with probability :data:`RUN_CONTINUES` the next card continues the
order of new decks from the card before it (the next rank of its suit, in the run's
direction once it has one; at a suit's end, an ace or king of another suit, where the next
suit starts), and otherwise it is any card as in a shuffled shoe. The ratio of the two
probabilities of the cards seen is multiplied in card by card; the alarm is raised when it
reaches :data:`ALARM_RATIO`.

Why that bounds false alarms: the probabilities of a shuffled shoe are bounded above by
``decks / cards left`` (a face already dealt has fewer copies left), so the ratio's expected
factor at each card is at most 1; the ratio is then a nonnegative supermartingale, and by
Ville's inequality a shuffled shoe ever reaches ``ALARM_RATIO`` with probability at most
``1 / ALARM_RATIO``, however many cards are watched. A shoe in factory order multiplies the
ratio by some 47 at every card of a run, and reaches the alarm within six cards wherever the
cut put its first card: before the first baccarat round settles even after an ace revealed
(the reveal, one burn card, four cards of the round).

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final

from controller.kernel.cards import RANKS, SUITS, Card

RUN_CONTINUES: Final = 0.9
"""Under the alternative: the probability that the next card continues new-deck order. High,
so that six cards in that order suffice (decks in factory order continue it at nearly every
card); decks riffled once, whose cards continue it about half the time, are caught less
surely (``livetable bench shuffle`` measures both)."""
ALARM_RATIO: Final = 1e7
"""The likelihood ratio that raises the alarm: a shuffled shoe reaches it with probability at
most 1e-7 (Ville's bound; far less in fact, see ``livetable bench shuffle``)."""
WATCHED_CARDS: Final = 52
"""The first cards of a shoe the test watches (the reveal and the burn included): a deck's
worth, enough for decks riffled once; after them the shoe has shown it was shuffled."""

_LOG_ALARM: Final = math.log(ALARM_RATIO)


@dataclass(frozen=True, slots=True)
class ShuffleCheck:
    """The test's state after the cards seen so far of one shoe; :meth:`seen_card` gives the
    next state. ``decks`` is the shoe's size in decks."""

    decks: int = 8
    cards_seen: int = 0
    log_ratio: float = 0.0
    previous: Card | None = None
    direction: int = 0
    """+1 or -1 when the last two cards were a run going up or down in rank; 0 when not."""
    suit_start: bool = False
    """The last card came after the end of a run, as the first card of a new suit does."""

    @property
    def alarmed(self) -> bool:
        """The shoe does not look shuffled."""
        return self.log_ratio >= _LOG_ALARM

    @property
    def watching(self) -> bool:
        return self.cards_seen < WATCHED_CARDS and not self.alarmed

    @property
    def ratio(self) -> float:
        """The likelihood ratio of the cards seen (unshuffled against shuffled)."""
        return math.exp(self.log_ratio)

    def seen_card(self, card: Card) -> ShuffleCheck:
        """The state after ``card``, dealt next from the shoe. Once the shoe has alarmed, or
        after :data:`WATCHED_CARDS`, the state no longer changes."""
        if not self.watching:
            return self
        cards_left = self.decks * 52 - self.cards_seen
        factor = 1.0
        direction, suit_start = 0, False
        if self.previous is not None and cards_left > 0:
            in_suit, across = _next_in_order(self.previous, self.direction, self.suit_start)
            weight = in_suit.get((card.suit, card.rank), 0.0) + across.get(
                (card.suit, card.rank), 0.0
            )
            # The chance of any one face in a shuffled shoe is at most decks / cards_left.
            factor = 1.0 - RUN_CONTINUES + RUN_CONTINUES * weight * cards_left / self.decks
            if (card.suit, card.rank) in in_suit:
                direction = 1 if card.rank_index > self.previous.rank_index else -1
            suit_start = (card.suit, card.rank) in across
        return replace(
            self,
            cards_seen=self.cards_seen + 1,
            log_ratio=self.log_ratio + math.log(factor),
            previous=card,
            direction=direction,
            suit_start=suit_start,
        )


Face = tuple[str, str]


def _next_in_order(
    previous: Card, direction: int, suit_start: bool
) -> tuple[dict[Face, float], dict[Face, float]]:
    """Under the alternative, where the card after ``previous`` goes when it continues the
    order of new decks: the faces of its suit that continue the run and those that start
    another suit, each with its share of :data:`RUN_CONTINUES` (the shares sum to 1).

    In a new deck each suit runs from one end rank (ace or king) to the other and the next
    suit starts at an end rank: a run in a known direction continues by one rank, or, at
    its end, to an ace or king of another suit; the first card of a suit continues to its
    neighbour; any other card continues to either neighbour, an ace or king possibly to
    another suit's first card instead."""
    index = previous.rank_index - 1
    end = index in (0, len(RANKS) - 1)
    ends_elsewhere = [
        (suit, rank) for suit in SUITS if suit != previous.suit for rank in (RANKS[0], RANKS[-1])
    ]
    steps = (direction,) if direction else (1, -1)
    neighbours = [
        (previous.suit, RANKS[index + step]) for step in steps if 0 <= index + step < len(RANKS)
    ]
    if not neighbours:  # a run at its end: the next suit starts
        return {}, {face: 1 / len(ends_elsewhere) for face in ends_elsewhere}
    if direction or suit_start or not end:
        return {face: 1 / len(neighbours) for face in neighbours}, {}
    # An ace or king that started no known run: its neighbour, or another suit's start.
    return (
        {face: 0.5 / len(neighbours) for face in neighbours},
        {face: 0.5 / len(ends_elsewhere) for face in ends_elsewhere},
    )


def check_cards(cards: list[Card], decks: int = 8) -> tuple[ShuffleCheck, int | None]:
    """The test run over ``cards`` (the first of a shoe first): its final state and the
    number of cards after which it alarmed, or None."""
    check = ShuffleCheck(decks)
    for count, card in enumerate(cards, start=1):
        check = check.seen_card(card)
        if check.alarmed:
            return check, count
    return check, None
