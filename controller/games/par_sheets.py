"""The PAR sheet of each game: the rules in force and every bet's exact figures.

One :class:`GamePar` per game: the rules the figures are for (in words), each bet's
:class:`~controller.games.par.BetPar` (pay lines with probability and contribution, RTP, hit
frequency, standard deviation, how computed) and how long each computation took (a
benchmark figure, reported and never asserted). `livetable rtp --exact` prints it, writes it
as JSON or as a printable HTML sheet.

* baccarat: the exact enumeration of :mod:`controller.games.baccarat_rtp`, every outcome
  settled by the engine's ``settle_bets``, grouped by net result;
* blackjack: :mod:`controller.games.blackjack_exact` (main game, Bust Bonus) and
  :mod:`controller.games.boundless_side_bets_exact` (Pair, Lucky Trio, Poker Trio).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from controller.games.par import BetPar, lines_by_net
from controller.kernel.cards import DECKS_PER_SHOE
from controller.kernel.errors import RulesError

CONVENTION: Final = (
    f"first round off the top of a freshly shuffled full {DECKS_PER_SHOE}-deck shoe "
    f"({DECKS_PER_SHOE * 52} cards), one unit on each bet"
)


@dataclass(frozen=True, slots=True)
class GamePar:
    """One game's PAR sheet."""

    game: str
    variant: str | None
    rules: tuple[str, ...]
    bets: Mapping[str, BetPar]
    seconds: Mapping[str, float]
    """What each exact computation took, by what it computed (wall-clock seconds)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "game": self.game,
            "mode": self.variant,
            "method": "exact",
            "convention": CONVENTION,
            "rules": list(self.rules),
            "seconds": round(sum(self.seconds.values()), 3),
            "timings": {name: round(value, 3) for name, value in self.seconds.items()},
            "bets": {bet: par.as_json() for bet, par in self.bets.items()},
        }


def _timed(seconds: dict[str, float], name: str, work: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = work()
    seconds[name] = time.perf_counter() - started
    return result


def bets_by_net(
    settled: Iterable[tuple[int, Mapping[str, float]]], bet_ids: Iterable[str], method: str
) -> dict[str, BetPar]:
    """Every bet's PAR lines from whole-number weighted outcomes, each given as its weight
    and the net result of every bet (the rules' own settlement), grouped by net."""
    weights: dict[str, dict[Fraction, int]] = {bet: defaultdict(int) for bet in bet_ids}
    for weight, nets in settled:
        for bet, net in nets.items():
            weights[bet][Fraction(repr(net))] += weight
    return {bet: lines_by_net(bet, by_net, method).check() for bet, by_net in weights.items()}


# -- baccarat ---------------------------------------------------------------------------------


def baccarat_par(mode: str = "traditional") -> GamePar:
    from controller.games.baccarat import BET_IDS, MODES, settle_bets
    from controller.games.baccarat_rtp import exact_outcomes

    if mode not in MODES:
        raise RulesError(f"unknown baccarat mode {mode!r}: expected one of {', '.join(MODES)}")
    seconds: dict[str, float] = {}
    outcomes = _timed(seconds, "enumeration of the first six cards", exact_outcomes)
    started = time.perf_counter()
    method = (
        "exact: every draw of the first six cards off a full 8-deck shoe (whole-number "
        "weights), each outcome settled by the live engine"
    )
    settled = ((weight, settle_bets(outcome, mode)) for outcome, weight in outcomes.items())
    bets = bets_by_net(settled, BET_IDS, method)
    seconds["settling every outcome"] = time.perf_counter() - started
    rules = (
        f"{DECKS_PER_SHOE} decks; the third-card rules of the live engine",
        "banker wins pay 0.95:1 (5 % commission)"
        if mode == "traditional"
        else "no commission: banker wins pay 1:1, a banker win on 6 pays 1:2",
        "side bets settled by the live engine's pay tables (docs/rules-baccarat.md)",
    )
    return GamePar("baccarat", mode, rules, bets, seconds)


# -- blackjack --------------------------------------------------------------------------------


def blackjack_rules_in_words(game: str) -> tuple[str, ...]:
    """The rules a blackjack game's figures are for, one line each."""
    from controller.games.blackjack_hand import rules_for

    rules = rules_for(game)
    hands = {2: "split once (two hands)", 3: "resplit once (three hands)"}.get(
        rules.max_hands, f"up to {rules.max_hands} hands"
    )
    return (
        f"{DECKS_PER_SHOE} decks; dealer stands on soft 17; blackjack pays 3:2",
        "a dealer blackjack ends the round before anyone plays (peek on an ace or a ten)",
        "double on any first two cards"
        + (", after a split too" if rules.double_after_split else "; no double after split"),
        f"split two cards of one value, {hands}; split aces take one card each",
        "late surrender, not against an ace or a ten" if rules.surrender else "no surrender",
        "one shared initial hand (one seated player here)"
        if rules.shared_hand
        else "one box here (the figures are per box)",
        "player: the table's basic strategy (strategy.py); insurance and even money declined",
    )


def blackjack_par(game: str) -> GamePar:
    from controller.games.blackjack_exact import main_game
    from controller.games.blackjack_hand import rules_for
    from controller.games.boundless_side_bets_exact import card_side_bets_par

    rules = rules_for(game)
    seconds: dict[str, float] = {}
    result = _timed(seconds, "main game recursion", lambda: main_game(game))
    bets: dict[str, BetPar] = {"main": result.main_par().check(1e-9)}
    if rules.shared_hand:
        side = _timed(seconds, "pair and trio enumeration", card_side_bets_par)
        bets.update(
            {
                "pair": side["pair"],
                "bust_bonus": result.bust_bonus_par().check(1e-9),
                "lucky_trio": side["lucky_trio"],
                "poker_trio": side["poker_trio"],
            }
        )
    return GamePar(game, None, blackjack_rules_in_words(game), bets, seconds)
