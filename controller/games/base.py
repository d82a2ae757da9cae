"""The contract between the game rules and the live table controller.

A round of any game is driven step by step: the table asks ``next_step()``; the answer is
either a card to be dealt to a named position, a decision to be taken, or ``None`` when the
round is complete. The table feeds each card with ``deal`` and each decision with
``decide``; both raise :class:`~controller.kernel.errors.RulesError` and change nothing when the
round does not accept them. The same objects run `livetable rules replay`, `livetable rtp`
and the benchmarks: there is no second copy of the rules.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from controller.kernel.cards import Card


@dataclass(frozen=True, slots=True)
class CardNeeded:
    """The next card out of the shoe goes to ``position``.

    ``position`` is what the dealer is told, e.g. ``"player"``, ``"banker"``,
    ``"dealer"``, ``"box2"`` or ``"box2.hand1"``. ``face_down`` marks the dealer's hole card:
    the table must not publish its face until the rules reveal it.
    """

    position: str
    face_down: bool = False


@dataclass(frozen=True, slots=True)
class DecisionNeeded:
    """A decision must be taken before the next card.

    ``kind`` is ``"play"`` (options among H S D P R), ``"insurance"``, ``"even_money"`` or
    ``"more_cards"`` (Boundless: one more player card, yes or no). ``box`` and ``hand`` are
    1-based; ``options`` are the tokens the rules accept now. ``default`` is what the
    timeout auto-play rule takes if no answer arrives in time.
    """

    kind: str
    box: int
    hand: int
    options: frozenset[str]
    default: str


Step = CardNeeded | DecisionNeeded | None


class LiveRound(Protocol):
    """One round of one game, driven card by card and decision by decision."""

    game: str

    def next_step(self) -> Step:
        """What the round needs now; ``None`` once the round is complete."""
        ...

    def deal(self, card: Card) -> None:
        """Put ``card`` where ``next_step()`` said; RulesError if no card is expected."""
        ...

    def decide(self, box: int, hand: int, token: str) -> None:
        """Take the decision ``next_step()`` asked for; RulesError if it is not legal now."""
        ...

    @property
    def complete(self) -> bool: ...

    def public_view(self) -> Mapping[str, Any]:
        """JSON-ready state of the round with every face-down card still hidden."""
        ...

    def cards_held(self, position: str) -> int:
        """How many cards the hand at ``position`` (a name :class:`CardNeeded` gives) holds
        now, a face-down card included; RulesError for a position this round has not.

        The table numbers a card's slot in its hand with it (the camera's region): only the
        rules know which hand a position names after a split or a resplit."""
        ...

    def settlement(self) -> Mapping[str, Any]:
        """JSON-ready result of every bet (net per unit staked); only once complete."""
        ...
