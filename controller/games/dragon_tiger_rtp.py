"""Return to player of every Dragon Tiger bet: exact enumeration of the 8-deck shoe, and
simulation.

**Exact** (:func:`exact_rtp`): the first round off a freshly shuffled 8-deck shoe. A round is
two cards, the Dragon's then the Tiger's, so every ordered pair of faces is enumerated
(52 x 52), weighted by the ordered draws that give it (8 x 8 copies, 8 x 7 for the same face
twice), 416 x 415 draws in all, in whole numbers: the result is an exact fraction. Every
pair is settled by the rules' own :func:`~controller.games.dragon_tiger.settle_bets`.

**Simulation** (:func:`simulate`): whole shoes shuffled with a seeded generator, the burn
procedure, the cut card, and every round played card by card through ``DragonTigerRound``.

The RTP of a bet is the expected amount returned per unit staked: 1 + the mean net result.
"""

from __future__ import annotations

import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Final

from controller.games.dragon_tiger import BET_IDS, GAME, PAYS, DragonTigerRound, settle_bets
from controller.games.par_sheets import GamePar, bets_by_net
from controller.games.shoe import BurnProcedure, CutCard
from controller.kernel.cards import ALL_FACES, DECKS_PER_SHOE, Card
from controller.kernel.errors import RulesError

SHOE_SIZE: Final = DECKS_PER_SHOE * 52
EXACT_DENOMINATOR: Final = math.perm(SHOE_SIZE, 2)
# Where the cut card sits in a simulated shoe: this many cards before the end, as in
# baccarat (the rules leave it to the studio).
CUT_CARD_FROM_END: Final = 14

Progress = Callable[[int], None]


def exact_outcomes() -> dict[tuple[Card, Card], int]:
    """(Dragon card, Tiger card) -> the ordered draws off a full shoe that deal it."""
    return {
        (dragon, tiger): DECKS_PER_SHOE * (DECKS_PER_SHOE - (dragon == tiger))
        for dragon in ALL_FACES
        for tiger in ALL_FACES
    }


def exact_rtp(variant: str = "") -> dict[str, Fraction]:
    """The exact RTP (as a fraction) of every bet for the first round off a full shoe
    (``variant``: the game has none)."""
    outcomes = exact_outcomes()
    total = sum(outcomes.values())
    if total != EXACT_DENOMINATOR:  # pragma: no cover - a broken enumeration must not report
        raise RulesError(f"enumeration covers {total} of {EXACT_DENOMINATOR} draws")
    returned = dict.fromkeys(BET_IDS, Fraction(0))
    for (dragon, tiger), weight in outcomes.items():
        for bet, net in settle_bets(dragon, tiger).items():
            returned[bet] += weight * Fraction(repr(net))
    return {bet: 1 + net / total for bet, net in returned.items()}


def par_sheet(variant: str = "") -> GamePar:
    """The game's PAR sheet: every bet's pay lines by net result, off the same enumeration
    as :func:`exact_rtp`, weighted in whole numbers (``variant``: the game has none)."""
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    method = (
        "exact: every ordered draw of the Dragon's and the Tiger's card off a full 8-deck "
        "shoe (whole-number weights), each settled by the rules"
    )
    settled = (
        (weight, settle_bets(dragon, tiger)) for (dragon, tiger), weight in exact_outcomes().items()
    )
    bets = bets_by_net(settled, BET_IDS, method)
    seconds["enumeration of the round's two cards"] = time.perf_counter() - started
    rules = (
        f"{DECKS_PER_SHOE} decks; the higher rank wins, ace low, king high; suits do not rank",
        f"Dragon and Tiger pay {PAYS[BET_IDS[0]]:g}:1; on a tie half of each is lost",
        f"Tie pays {PAYS[BET_IDS[2]]:g}:1, Suited Tie {PAYS[BET_IDS[3]]:g}:1",
    )
    return GamePar(GAME, None, rules, bets, seconds)


def simulate(
    variant: str, rounds: int, seed: int, progress: Progress | None = None
) -> dict[str, tuple[float, float, float]]:
    """RTP of every bet from ``rounds`` simulated rounds: bet -> (rtp, ci_low, ci_high), the
    95 % normal interval of the mean. ``random.Random(seed)`` shuffles the shoes, so a seed
    always gives the same figures; ``progress`` is called with the rounds played so far."""
    if rounds < 1:
        raise RulesError(f"at least one round must be simulated, not {rounds}")
    rng = random.Random(seed)
    tally: dict[tuple[Card, Card], int] = defaultdict(int)
    report_every = max(1, min(10_000, rounds // 100))
    played = 0
    while played < rounds:
        shoe = list(ALL_FACES) * DECKS_PER_SHOE
        rng.shuffle(shoe)
        position = 0
        burn = BurnProcedure()
        while not burn.complete:
            burn.take(shoe[position])
            position += 1
        cut_position = len(shoe) - CUT_CARD_FROM_END
        cut = CutCard()
        round_number = 0
        while played < rounds and not cut.shoe_ends_after(round_number):
            round_number += 1
            live = DragonTigerRound(round_number)
            dealt: list[Card] = []
            while not live.complete:
                if position == cut_position:
                    cut.drawn(round_number, round_in_progress=True)
                live.deal(shoe[position])
                dealt.append(shoe[position])
                position += 1
            tally[dealt[0], dealt[1]] += 1
            played += 1
            if progress is not None and played % report_every == 0:
                progress(played)
    if progress is not None:
        progress(played)
    return {bet: _interval(tally, bet) for bet in BET_IDS}


def _interval(tally: Mapping[tuple[Card, Card], int], bet: str) -> tuple[float, float, float]:
    """1 + mean net of ``bet``, with its 95 % normal confidence interval."""
    count = sum(tally.values())
    total = squares = 0.0
    for (dragon, tiger), times in tally.items():
        net = settle_bets(dragon, tiger)[bet]
        total += times * net
        squares += times * net * net
    mean = total / count
    variance = max(0.0, squares / count - mean * mean) * count / max(1, count - 1)
    half_width = 1.959964 * math.sqrt(variance / count)
    return (1 + mean, 1 + mean - half_width, 1 + mean + half_width)
