"""How the table makes a live round of its configured game: the rules engine, used as it is.

The table never plays a card itself: every round is a :class:`~controller.games.base.LiveRound`
from ``controller/games``. Which class, with which arguments, and which bets are open is the
game's :class:`~controller.games.registry.GameSpec`; these functions only look it up (its
entry points import the rules lazily, so a baccarat table does not load blackjack).
``boxes`` is the number of boxes or seats in play for boxed blackjack games.
"""

from __future__ import annotations

from controller.games.base import LiveRound
from controller.games.registry import GameSpec, find_game
from controller.kernel.errors import ConfigurationError


def _spec(game: str) -> GameSpec:
    spec = find_game(game)
    if spec is None:
        raise ConfigurationError(f"no rules for the game {game!r}")
    return spec


def new_round(
    game: str, round_number: int, boxes: int = 1, variant: str = "traditional"
) -> LiveRound:
    """A fresh live round of ``game``; RulesError if the rules refuse the arguments."""
    return _spec(game).new_round(round_number, boxes, variant)


def available_bets(game: str, round_number: int) -> list[str]:
    """The bets the platform may accept in round ``round_number`` of the shoe."""
    return _spec(game).available_bets(round_number)


def default_boxes(game: str) -> int:
    """Boxes (or seats) in a round whose request does not say how many."""
    return _spec(game).default_boxes


def variant(game: str, configured: str) -> str | None:
    """The rule variant a table of ``game`` plays with ``configured`` (its config's
    ``variant``), or None for a game without variants."""
    return configured if _spec(game).variants else None
