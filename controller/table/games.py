"""How the table makes a live round of its configured game: the rules engine, used as it is.

The table never plays a card itself: every round is a :class:`~controller.games.base.LiveRound`
from ``controller/games``. This module only picks the class and its arguments for the
configured game (the rules modules are imported lazily, so a baccarat table does not load
blackjack). ``boxes`` is the number of boxes or seats in play for boxed blackjack games.
"""

from __future__ import annotations

import importlib
from typing import Final

from controller.errors import ConfigurationError
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
    if game != "blackjack-boundless":
        return ["main"]
    boundless = importlib.import_module("controller.games.boundless_side_bets")
    return ["main"] + [
        bet for bet in boundless.SIDE_BETS if boundless.side_bet_available(bet, round_number)
    ]
