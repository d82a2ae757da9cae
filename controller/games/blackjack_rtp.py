"""Simulated return to player of the blackjack games, through the live round.

Every round is a :class:`~controller.games.blackjack.BlackjackRound` driven step by step from
a shuffled 8-deck shoe, exactly as the table drives it: no second copy of the rules. One box
(one seated Boundless player) bets 1 unit and plays :class:`~controller.games.strategy.
BasicStrategy` for the game's rules; Boundless also bets 1 unit on each side bet in the rounds
where it is available (its "limit").

Shoe procedure (docs/rules-baccarat.md, Cards and shoe): 8 decks shuffled with
``random.Random(seed)``, the burn procedure at every new shoe (the revealed card is discarded,
then as many cards as its burn value), a cut card :data:`CUT_CARD_FROM_END` cards from the end;
the round in progress when it comes out is the last of the shoe. The random generator is a
parameter, so the simulation is reproducible and the rules stay free of global random state.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Final

from controller.games.base import CardNeeded
from controller.games.blackjack import BlackjackRound
from controller.games.blackjack_hand import (
    BOUNDLESS,
    MORE_CARDS,
    NO,
    PLAY,
    YES,
    rules_for,
)
from controller.games.boundless import PlayerResolver
from controller.games.boundless_side_bets import (
    SIDE_BETS,
    side_bet_available,
    side_bet_results,
)
from controller.games.strategy import BasicStrategy
from controller.kernel.cards import ALL_FACES, DECKS_PER_SHOE, Card
from controller.kernel.errors import RulesError

MAIN: Final = "main"
# Decision: the cut card sits 1.5 decks (78 cards) from the end, a common live-dealer
# penetration of about 81 %; the rules fix 8 decks and a cut card but not its place
# (docs/rules-baccarat.md, Cut card).
CUT_CARD_FROM_END: Final = 78
Z_95: Final = 1.959963984540054
PROGRESS_EVERY: Final = 10_000


class SimulatedShoe:
    """An 8-deck shoe shuffled by ``rng``, with the burn procedure and a cut card."""

    __slots__ = ("cards", "cut_at", "next_index", "rng", "round_in_shoe", "shoes")

    def __init__(self, rng: random.Random, decks: int = DECKS_PER_SHOE) -> None:
        self.rng = rng
        self.cards: list[Card] = list(ALL_FACES) * decks
        self.cut_at = len(self.cards) - CUT_CARD_FROM_END
        self.next_index = 0
        self.round_in_shoe = 0
        self.shoes = 0
        self.shuffle()

    def shuffle(self) -> None:
        """A new shoe: shuffle, then the burn procedure."""
        self.rng.shuffle(self.cards)
        revealed = self.cards[0]
        self.next_index = 1 + revealed.burn_value
        self.round_in_shoe = 0
        self.shoes += 1

    def start_round(self) -> int:
        """Count a new round; reshuffle first if the cut card came out in the last one."""
        if self.next_index >= self.cut_at:
            self.shuffle()
        self.round_in_shoe += 1
        return self.round_in_shoe

    def draw(self) -> Card:
        if self.next_index >= len(self.cards):
            raise RulesError("the simulated shoe ran out of cards in a round")
        card = self.cards[self.next_index]
        self.next_index += 1
        return card


class _Stat:
    """Running mean and variance of one bet's net per unit (Welford's, in float64)."""

    __slots__ = ("count", "m2", "mean")

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (value - self.mean)

    def rtp(self) -> tuple[float, float, float]:
        if self.count == 0:
            return (math.nan, math.nan, math.nan)
        if self.count > 1:
            half = Z_95 * math.sqrt(self.m2 / (self.count - 1) / self.count)
        else:
            half = math.inf
        rtp = 1.0 + self.mean
        return (rtp, rtp - half, rtp + half)


def play_round(
    game: str,
    shoe: SimulatedShoe,
    strategy: BasicStrategy | None,
) -> tuple[BlackjackRound, PlayerResolver | None]:
    """One round with one box from ``shoe`` through the live engine.

    ``strategy`` None plays every decision by its timeout auto-play default (the cheapest
    possible player, for the benchmark). Returns the completed round and, for Boundless, the
    seated player's resolver.
    """
    round_ = BlackjackRound(game, 1)
    resolver: PlayerResolver | None = None
    draw = shoe.draw
    while True:
        step = round_.next_step()
        if step is None:
            return round_, resolver
        if step.__class__ is CardNeeded:
            round_.deal(draw())
            continue
        kind = step.kind  # type: ignore[union-attr]
        if kind == PLAY:
            if strategy is None:
                token = step.default  # type: ignore[union-attr]
            else:
                play = round_.plays[0]
                token = strategy.decide(play.hands[play.current], round_.up_card, step.options)  # type: ignore[arg-type, union-attr]
            round_.decide(1, step.hand, token)  # type: ignore[union-attr]
        elif kind == MORE_CARDS:
            if resolver is None:
                decider = strategy if strategy is not None else _auto_play
                resolver = PlayerResolver(
                    round_.common[:2],
                    round_.up_card,  # type: ignore[arg-type]
                    decider,
                    rules=round_.rules,
                )
            round_.decide(1, 1, YES if resolver.advance(round_.common) else NO)
        else:  # insurance / even money: basic strategy and auto-play both decline
            round_.decide(step.box, step.hand, NO)  # type: ignore[union-attr]


def _auto_play(hand: object, up: object, options: frozenset[str], default: str) -> str:
    return default


def _seated_player(round_: BlackjackRound, resolver: PlayerResolver | None) -> PlayerResolver:
    if resolver is None:
        # The round ended on a dealer BJ, or the shared hand was a BJ: nobody was asked.
        resolver = PlayerResolver(round_.common[:2], round_.up_card, (), rules=round_.rules)  # type: ignore[arg-type]
    return resolver


def main_net(round_: BlackjackRound, resolver: PlayerResolver | None) -> float:
    """The one box's (the seated Boundless player's) net of a round from :func:`play_round`."""
    if round_.rules.game == BOUNDLESS:
        return _seated_player(round_, resolver).net(round_.dealer)
    return round_.box_net(1)


def simulate(
    game: str,
    rounds: int,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> dict[str, tuple[float, float, float]]:
    """RTP of each bet of ``game`` over ``rounds`` simulated rounds: bet id -> (rtp, low, high).

    Fractions (0.9946 is 99.46 %) with the 95 % confidence interval of the mean. ``main`` is
    the box's main bet per unit of initial stake (doubles and splits count in its net);
    Boundless adds ``pair``, ``bust_bonus``, ``lucky_trio`` and ``poker_trio`` over the rounds
    where each is available. ``progress`` is called with the rounds done so far.
    """
    rules = rules_for(game)
    if rounds < 1:
        raise RulesError(f"simulate at least one round, not {rounds}")
    shoe = SimulatedShoe(random.Random(seed))
    strategy = BasicStrategy(rules)
    stats = {MAIN: _Stat()}
    boundless = rules.game == BOUNDLESS
    if boundless:
        for bet in SIDE_BETS:
            stats[bet] = _Stat()
    main = stats[MAIN]
    for done in range(1, rounds + 1):
        round_in_shoe = shoe.start_round()
        round_, resolver = play_round(rules.game, shoe, strategy)
        if boundless:
            player = _seated_player(round_, resolver)
            main.add(player.net(round_.dealer))
            results = side_bet_results(round_.common[:2], round_.dealer)
            for bet in SIDE_BETS:
                if side_bet_available(bet, round_in_shoe):
                    stats[bet].add(results[bet])
        else:
            main.add(round_.box_net(1))
        if progress is not None and done % PROGRESS_EVERY == 0:
            progress(done)
    if progress is not None and rounds % PROGRESS_EVERY:
        progress(rounds)
    return {bet: stat.rtp() for bet, stat in stats.items()}


def play_rounds(game: str, rounds: int, seed: int = 0, strategy: bool = True) -> int:
    """Play ``rounds`` one-box rounds through the live engine and return how many: the bench.

    ``strategy`` False answers every decision with its auto-play default, which measures
    the engine alone.
    """
    rules = rules_for(game)
    shoe = SimulatedShoe(random.Random(seed))
    player = BasicStrategy(rules) if strategy else None
    played = 0
    for _ in range(rounds):
        shoe.start_round()
        round_, resolver = play_round(rules.game, shoe, player)
        if rules.game == BOUNDLESS:
            _seated_player(round_, resolver).net(round_.dealer)
        else:
            round_.box_net(1)
        played += 1
    return played
