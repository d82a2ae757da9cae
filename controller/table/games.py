"""How the table makes a live round of its configured game: the rules engine, used as it is.

The table never plays a card itself: every round is a :class:`~controller.games.base.LiveRound`
from ``controller/games``. This module only picks the class and its arguments for the
configured game (the rules modules are imported lazily, so a baccarat table does not load
blackjack). ``boxes`` is the number of boxes or seats in play for boxed blackjack games.
"""

from __future__ import annotations

import importlib
from typing import Final

from controller.errors import ConfigurationError, RulesError
from controller.games.base import LiveRound

BACCARAT: Final = "baccarat"
BLACKJACK_GAMES: Final = ("blackjack-boundless", "blackjack-classic", "blackjack-21")


def new_round(
    game: str, round_number: int, boxes: int = 1, baccarat_mode: str = "traditional"
) -> LiveRound:
    """A fresh live round of ``game``; RulesError if the rules refuse the arguments."""
    if game == BACCARAT:
        baccarat = importlib.import_module("controller.games.baccarat")
        return baccarat.BaccaratRound(baccarat_mode, round_number)
    if game in BLACKJACK_GAMES:
        blackjack = importlib.import_module("controller.games.blackjack")
        if game == "blackjack-boundless":
            boxes = 1  # one shared hand: the number of players does not change the cards
        return blackjack.BlackjackRound(game, boxes)
    raise ConfigurationError(f"no rules for the game {game!r}")


def available_bets(game: str, round_number: int) -> list[str]:
    """The bets the platform may accept in round ``round_number`` of the shoe."""
    if game == BACCARAT:
        baccarat = importlib.import_module("controller.games.baccarat")
        return list(baccarat.available_bets(round_number))
    if game in BLACKJACK_GAMES:
        return _blackjack_side_bets(game, round_number)
    raise ConfigurationError(f"no rules for the game {game!r}")


def _blackjack_side_bets(game: str, round_number: int) -> list[str]:
    bets = ["main"]
    try:
        boundless = importlib.import_module("controller.games.boundless")
    except ModuleNotFoundError:
        return bets
    limits = getattr(boundless, "SIDE_BET_LIMITS", None)
    if game != "blackjack-boundless" or not isinstance(limits, dict):
        return bets
    try:
        return bets + [bet for bet, limit in limits.items() if round_number <= limit]
    except TypeError as error:  # pragma: no cover - a rules-side shape change
        raise RulesError(f"unexpected side-bet limits {limits!r}") from error
