"""Shoe procedures shared by every game: the burn at a new shoe and the cut card.

docs/rules-baccarat.md, Cards and shoe (all games): at the start of every new shoe the dealer
reveals one card and then discards as many cards as its burn value (A = 1, 2-9 face value,
T/J/Q/K = 10); the revealed card is itself discarded. The plastic cut card marks the final
round: the round in progress when it appears, or the next round if it appears between rounds,
plus a per-table number of extra rounds (0 by default; some studios play one more).

Pure code: no I/O, no clock, no randomness. The table state machine feeds these helpers and
journals what they return; burn faces are never published.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.kernel.cards import Card
from controller.kernel.errors import RulesError


def burn_count(revealed: Card) -> int:
    """How many cards are discarded after ``revealed``: A = 1, 2-9 face value, T/J/Q/K = 10."""
    return revealed.burn_value


def check_burn_count(revealed: Card, burned: int) -> None:
    """RulesError unless exactly ``burn_count(revealed)`` cards were burned after it."""
    required = burn_count(revealed)
    if burned < required:
        raise RulesError(
            f"too few burn cards: {revealed} was revealed, so {required} must be burned, "
            f"not {burned}"
        )
    if burned > required:
        raise RulesError(
            f"too many burn cards: {revealed} was revealed, so {required} must be burned, "
            f"not {burned}"
        )


@dataclass(slots=True)
class BurnProcedure:
    """The burn at a new shoe, fed card by card: the first card is the revealed one.

    ``take`` refuses a card once the burn is complete (too many) and leaves the procedure
    unchanged; ``finish`` refuses to end it before enough cards were burned (too few).
    """

    revealed: Card | None = None
    burned: list[Card] = field(default_factory=list)

    @property
    def required(self) -> int | None:
        """Cards to burn after the revealed one; None until a card is revealed."""
        return None if self.revealed is None else burn_count(self.revealed)

    @property
    def remaining(self) -> int | None:
        """Cards still to burn; None until a card is revealed."""
        required = self.required
        return None if required is None else required - len(self.burned)

    @property
    def complete(self) -> bool:
        return self.remaining == 0

    def take(self, card: Card) -> str:
        """Feed the next card out of the shoe; ``"revealed"`` or ``"burned"``."""
        if not isinstance(card, Card):
            raise RulesError(f"not a card: {card!r}")
        if self.revealed is None:
            self.revealed = card
            return "revealed"
        if self.complete:
            raise RulesError(
                f"too many burn cards: {self.revealed} was revealed, so only "
                f"{self.required} are burned; {card} is one more"
            )
        self.burned.append(card)
        return "burned"

    def finish(self) -> tuple[Card, tuple[Card, ...]]:
        """The revealed card and the burned cards; RulesError if the burn is not complete."""
        if self.revealed is None:
            raise RulesError("the burn has not started: no card was revealed")
        check_burn_count(self.revealed, len(self.burned))
        return self.revealed, tuple(self.burned)


def final_round_number(cut_round: int, extra_rounds: int = 0) -> int:
    """The number of the shoe's final round.

    ``cut_round`` is the round in progress when the cut card appeared, or the next round if
    it appeared between rounds; ``extra_rounds`` is the per-table setting (0: that round is
    the last; 1: one more round is played).
    """
    if cut_round < 1:
        raise RulesError(f"round numbers start at 1, not {cut_round}")
    if extra_rounds < 0:
        raise RulesError(f"extra rounds after the cut card cannot be negative: {extra_rounds}")
    return cut_round + extra_rounds


@dataclass(slots=True)
class CutCard:
    """Whether the cut card has come out of this shoe, and which round is the final one."""

    extra_rounds: int = 0
    final_round: int | None = None

    def __post_init__(self) -> None:
        if self.extra_rounds < 0:
            raise RulesError(
                f"extra rounds after the cut card cannot be negative: {self.extra_rounds}"
            )

    @property
    def seen(self) -> bool:
        return self.final_round is not None

    def drawn(self, last_round: int, round_in_progress: bool) -> int:
        """Record the cut card; returns the final round's number.

        ``last_round`` is the number of the round in progress, or of the last round played
        (0 before the first) when the cut card appears between rounds. A second cut card in
        one shoe is an error and changes nothing.
        """
        if self.final_round is not None:
            raise RulesError(
                f"a second cut card in one shoe: the first already made round "
                f"{self.final_round} the final round"
            )
        cut_round = last_round if round_in_progress else last_round + 1
        self.final_round = final_round_number(cut_round, self.extra_rounds)
        return self.final_round

    def is_final_round(self, round_number: int) -> bool:
        return self.final_round is not None and round_number >= self.final_round

    def shoe_ends_after(self, round_number: int) -> bool:
        """Whether the shoe is reshuffled once round ``round_number`` has finished."""
        return self.is_final_round(round_number)
