"""Whether a new shoe looks shuffled, judged card by card from its first cards.

Decks leave the factory in suit order (one suit ace to king, the next, some suits king to
ace); a shoe built from such decks and never shuffled deals long runs of one suit in rank
order, and a player who notices can bet on what comes next. In 2012 a casino in Atlantic
City dealt mini-baccarat from decks that arrived unshuffled and lost about $1.5 million
before anyone stopped the game.

The test is a sequential likelihood ratio. Under the hypothesis that the shoe is shuffled,
the next card is any card left, each face with probability at most ``decks / cards left``.
Under the alternative, with probability :data:`RUN_CONTINUES` the next card continues the
run of the card before it (same suit, the next rank up or down; in the run's direction once
it has one), and otherwise it is any card as in a shuffled shoe. The ratio of the two
probabilities of the cards seen is multiplied in card by card; the alarm is raised when it
reaches :data:`ALARM_RATIO`.

Why that bounds false alarms: the probabilities of a shuffled shoe are bounded above by
``decks / cards left`` (a face already dealt has fewer copies left), so the ratio's expected
factor at each card is at most 1; the ratio is then a nonnegative supermartingale, and by
Ville's inequality a shuffled shoe ever reaches ``ALARM_RATIO`` with probability at most
``1 / ALARM_RATIO``, however many cards are watched. A shoe in factory order multiplies the
ratio by some 26 at every card of a run, and reaches the alarm within seven or eight cards
wherever the cut put its first card.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final

from controller.kernel.cards import RANKS, Card

RUN_CONTINUES: Final = 0.5
"""Under the alternative: the probability that the next card continues the run. One half
catches decks riffled once (whose cards continue a run about half the time) as well as decks
in factory order; a larger value would catch factory order one card sooner and riffles less."""
ALARM_RATIO: Final = 1e8
"""The likelihood ratio that raises the alarm: a shuffled shoe reaches it with probability at
most 1e-8."""
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
        direction = 0
        if self.previous is not None and cards_left > 0:
            runs_on = _runs_on(self.previous, self.direction)
            if runs_on:
                factor = 1.0 - RUN_CONTINUES
                if (card.suit, card.rank) in runs_on:
                    # The chance of this face in a shuffled shoe is at most decks / cards_left.
                    factor += RUN_CONTINUES / len(runs_on) * cards_left / self.decks
                    direction = _step(self.previous, card)
        return replace(
            self,
            cards_seen=self.cards_seen + 1,
            log_ratio=self.log_ratio + math.log(factor),
            previous=card,
            direction=direction,
        )


def _step(previous: Card, card: Card) -> int:
    return 1 if card.rank_index > previous.rank_index else -1


def _runs_on(previous: Card, direction: int) -> frozenset[tuple[str, str]]:
    """The faces (suit, rank) that continue a run after ``previous``: the next rank in the
    run's direction, or either neighbour when the run has none yet."""
    index = previous.rank_index - 1
    steps = (direction,) if direction else (1, -1)
    return frozenset(
        (previous.suit, RANKS[index + step]) for step in steps if 0 <= index + step < len(RANKS)
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
