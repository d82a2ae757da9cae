"""Return to player of every baccarat bet: exact enumeration of the 8-deck shoe, and simulation.

**Exact** (:func:`exact_rtp`): the first round off a freshly shuffled 8-deck shoe, every
ordering of its first six cards weighted by how many ordered card draws produce it, in whole
numbers, so the result is an exact fraction. It does not enumerate 416^6 card sequences:

* The first four cards (Player, Banker, Player, Banker) are enumerated by *rank*
  (13^4 sequences, weighted by 32·31·... draws per rank): the pair bets need ranks.
* Perfect Pair needs suits only where two cards share a rank; the share of those draws that
  also share a suit is counted in closed form (e.g. 7 of the 31 other cards of a rank have
  the first card's suit), exact because the draws of one rank are exchangeable.
* Third cards matter only by point value (ten classes: 128 zero-value cards, 32 of each
  other value), and which third cards are drawn depends only on the two two-card totals.
  That drawing tree is obtained from the live :class:`~controller.games.baccarat.BaccaratRound`
  itself, once per pair of totals; every bet is settled by the engine's
  :func:`~controller.games.baccarat.settle_bets`. There is no second copy of the rules.

**Simulation** (:func:`simulate`): whole shoes shuffled with a seeded generator, the burn
procedure, the cut card, and every round played card by card through ``BaccaratRound``; a
side bet counts only in the rounds where it may be placed (its "limit").

The RTP of a bet is the expected amount returned per unit staked: 1 + the mean net result.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Final

from controller.games.baccarat import (
    BET_IDS,
    BET_LIMITS,
    MODES,
    BaccaratRound,
    Outcome,
    available_bets,
    settle_bets,
)
from controller.games.shoe import BurnProcedure, CutCard
from controller.kernel.cards import ALL_FACES, DECKS_PER_SHOE, RANKS, Card
from controller.kernel.errors import RulesError

SHOE_SIZE: Final = DECKS_PER_SHOE * 52
COPIES_PER_RANK: Final = DECKS_PER_SHOE * 4  # 32
COPIES_PER_FACE: Final = DECKS_PER_SHOE  # 8
# Point value of each rank, by index into RANKS ("A23456789TJQK").
_RANK_VALUES: Final = tuple(index + 1 if index < 9 else 0 for index in range(len(RANKS)))
# Cards of each point value in a full shoe: 4 zero-value ranks, one rank for each other value.
_SHOE_BY_VALUE: Final = tuple(COPIES_PER_RANK * _RANK_VALUES.count(value) for value in range(10))
# A representative rank for each point value, to drive the live engine.
_RANK_FOR_VALUE: Final = {value: RANKS[_RANK_VALUES.index(value)] for value in range(10)}
# All weights are over the ordered draws of the first six cards.
EXACT_DENOMINATOR: Final = math.perm(SHOE_SIZE, 6)

# Where the cut card sits in a simulated shoe: this many cards before the end (a common
# placement in live baccarat; the rules leave it to the studio).
CUT_CARD_FROM_END: Final = 14


def _drawing_tree() -> dict[
    tuple[int, int], list[tuple[tuple[int, ...], tuple[int, int, int, int]]]
]:
    """For each (Player, Banker) two-card total: every sequence of third-card values the
    engine asks for, and the (player total, banker total, player cards, banker cards)."""
    tree: dict[tuple[int, int], list[tuple[tuple[int, ...], tuple[int, int, int, int]]]] = {}
    for player_total, banker_total in itertools.product(range(10), repeat=2):
        # The two-card hands: the total's card plus a king (0 points).
        first_four = [
            Card(_RANK_FOR_VALUE[player_total], "S"),
            Card(_RANK_FOR_VALUE[banker_total], "H"),
            Card("K", "D"),
            Card("K", "C"),
        ]
        paths: list[tuple[tuple[int, ...], tuple[int, int, int, int]]] = []
        pending: list[tuple[int, ...]] = [()]
        while pending:
            thirds = pending.pop()
            round_ = BaccaratRound()
            for card in first_four:
                round_.deal(card)
            for value in thirds:
                round_.deal(Card(_RANK_FOR_VALUE[value], "S"))
            if round_.complete:
                outcome = round_.outcome()
                paths.append(
                    (
                        thirds,
                        (
                            outcome.player_total,
                            outcome.banker_total,
                            outcome.player_cards,
                            outcome.banker_cards,
                        ),
                    )
                )
            else:
                pending.extend((*thirds, value) for value in range(10))
        tree[player_total, banker_total] = paths
    return tree


def _perfect_pair_share(ranks: tuple[int, int, int, int]) -> Fraction:
    """Of the suit assignments to first four cards of these ranks (Player 1, Banker 1,
    Player 2, Banker 2), the share in which either hand is a perfect pair."""
    player_pair = ranks[0] == ranks[2]
    banker_pair = ranks[1] == ranks[3]
    # Any two draws of one rank share a suit with chance 7/31: after one card of the rank,
    # 7 of the 31 others of that rank have its suit (8 decks), whatever came between.
    one = Fraction(COPIES_PER_FACE - 1, COPIES_PER_RANK - 1)
    if player_pair and banker_pair:
        if ranks[0] != ranks[1]:
            return 1 - (1 - one) ** 2
        # All four of one rank: after a suited Player pair, 30 cards of the rank remain, 6
        # of that suit and 8 of each other suit.
        left = COPIES_PER_RANK - 2
        both = one * Fraction(
            (COPIES_PER_FACE - 2) * (COPIES_PER_FACE - 3)
            + 3 * COPIES_PER_FACE * (COPIES_PER_FACE - 1),
            left * (left - 1),
        )
        return 2 * one - both
    if player_pair or banker_pair:
        return one
    return Fraction(0)


def exact_outcomes() -> dict[Outcome, int]:
    """Every outcome of a first round off a full 8-deck shoe, with its weight: the number of
    ordered draws of the first six cards that produce it (they sum to EXACT_DENOMINATOR)."""
    return dict(_exact_outcomes())


@lru_cache(maxsize=1)
def _exact_outcomes() -> tuple[tuple[Outcome, int], ...]:
    # Computed once per process (about a second): both modes and every caller share it.
    # Step 1: the first four cards by rank -> weight per (values, player pair, banker pair,
    # perfect pair), each weight counted over the ordered draws of those four cards.
    first_four: dict[tuple[int, int, int, int], dict[tuple[bool, bool, bool], int]] = defaultdict(
        lambda: defaultdict(int)
    )
    rank_count = range(len(RANKS))
    for ranks in itertools.product(rank_count, repeat=4):
        weight = 1
        drawn: dict[int, int] = {}
        for rank in ranks:
            already = drawn.get(rank, 0)
            weight *= COPIES_PER_RANK - already
            drawn[rank] = already + 1
        values = (
            _RANK_VALUES[ranks[0]],
            _RANK_VALUES[ranks[1]],
            _RANK_VALUES[ranks[2]],
            _RANK_VALUES[ranks[3]],
        )
        pairs = (ranks[0] == ranks[2], ranks[1] == ranks[3])
        share = _perfect_pair_share(ranks)
        perfect = weight * share
        # The share is exact over these draws: the weight holds the factor 31 it divides by.
        assert perfect.denominator == 1
        by_pairs = first_four[values]
        if perfect:
            by_pairs[(*pairs, True)] += int(perfect)
        if weight - perfect:
            by_pairs[(*pairs, False)] += int(weight - perfect)

    # Step 2: third cards by point value, following the engine's drawing tree.
    tree = _drawing_tree()
    outcomes: dict[Outcome, int] = defaultdict(int)
    left_after_four = SHOE_SIZE - 4
    for values, by_pairs in first_four.items():
        remaining = list(_SHOE_BY_VALUE)
        for value in values:
            remaining[value] -= 1
        player_total = (values[0] + values[2]) % 10
        banker_total = (values[1] + values[3]) % 10
        hands: dict[tuple[int, int, int, int], int] = defaultdict(int)
        for thirds, hand in tree[player_total, banker_total]:
            # Every path is weighted over the same six draws: unused draws are free.
            if not thirds:
                weight = left_after_four * (left_after_four - 1)
            elif len(thirds) == 1:
                weight = remaining[thirds[0]] * (left_after_four - 1)
            else:
                first, second = thirds
                weight = remaining[first] * (remaining[second] - (first == second))
            hands[hand] += weight
        for (player_pair, banker_pair, perfect), pair_weight in by_pairs.items():
            for (p_total, b_total, p_cards, b_cards), hand_weight in hands.items():
                outcome = Outcome(
                    p_total, b_total, p_cards, b_cards, player_pair, banker_pair, perfect
                )
                outcomes[outcome] += pair_weight * hand_weight
    return tuple(outcomes.items())


def exact_rtp(mode: str = "traditional") -> dict[str, Fraction]:
    """The exact RTP (as a fraction) of all 18 bets for the first round off a full shoe."""
    if mode not in MODES:
        raise RulesError(f"unknown baccarat mode {mode!r}: expected one of {', '.join(MODES)}")
    outcomes = exact_outcomes()
    total = sum(outcomes.values())
    if total != EXACT_DENOMINATOR:  # pragma: no cover - a broken enumeration must not report
        raise RulesError(f"enumeration covers {total} of {EXACT_DENOMINATOR} draws")
    returned = dict.fromkeys(BET_IDS, Fraction(0))
    # Nets are floats like 0.95; as decimal fractions they are exact.
    for outcome, weight in outcomes.items():
        for bet, net in settle_bets(outcome, mode).items():
            returned[bet] += weight * Fraction(repr(net))
    return {bet: 1 + net / total for bet, net in returned.items()}


Progress = Callable[[int], None]


def _new_shoe(rng: random.Random) -> list[Card]:
    cards = list(ALL_FACES) * DECKS_PER_SHOE
    rng.shuffle(cards)
    return cards


def simulate(
    mode: str, rounds: int, seed: int, progress: Progress | None = None
) -> dict[str, tuple[float, float, float]]:
    """RTP of every bet from ``rounds`` simulated rounds: bet -> (rtp, ci_low, ci_high).

    The interval is the 95 % normal interval of the mean. Shoes are shuffled by
    ``random.Random(seed)``, so a seed always gives the same figures. ``progress`` is called
    with the number of rounds played so far, now and then.
    """
    if mode not in MODES:
        raise RulesError(f"unknown baccarat mode {mode!r}: expected one of {', '.join(MODES)}")
    if rounds < 1:
        raise RulesError(f"at least one round must be simulated, not {rounds}")
    rng = random.Random(seed)
    # How often each (outcome, set of placeable bets) occurred: one increment per round
    # instead of 18 running sums; the sums are taken once at the end, exactly the same.
    tally: dict[tuple[Outcome, tuple[str, ...]], int] = defaultdict(int)
    placeable = {number: available_bets(number) for number in range(1, _LAST_LIMIT + 2)}
    report_every = max(1, min(10_000, rounds // 100))
    played = 0
    while played < rounds:
        shoe = _new_shoe(rng)
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
            live = BaccaratRound(mode, round_number)
            while not live.complete:
                if position == cut_position:
                    # Betting on this round has closed: it is the round in progress.
                    cut.drawn(round_number, round_in_progress=True)
                live.deal(shoe[position])
                position += 1
            tally[live.outcome(), placeable[min(round_number, _LAST_LIMIT + 1)]] += 1
            played += 1
            if progress is not None and played % report_every == 0:
                progress(played)
    if progress is not None:
        progress(played)
    sums = dict.fromkeys(BET_IDS, 0.0)
    squares = dict.fromkeys(BET_IDS, 0.0)
    counts = dict.fromkeys(BET_IDS, 0)
    for (outcome, bets), times in tally.items():
        nets = settle_bets(outcome, mode)
        for bet in bets:
            net = nets[bet]
            sums[bet] += times * net
            squares[bet] += times * net * net
            counts[bet] += times
    return {bet: _mean_interval(sums[bet], squares[bet], counts[bet]) for bet in BET_IDS}


# Past this round number no side bet is placeable any more.
_LAST_LIMIT: Final = max(limit for limit in BET_LIMITS.values() if limit is not None)


def _mean_interval(total: float, squares: float, count: int) -> tuple[float, float, float]:
    """1 + mean net, with its 95 % normal confidence interval."""
    if count == 0:
        return (math.nan, math.nan, math.nan)
    mean = total / count
    variance = max(0.0, squares / count - mean * mean) * count / max(1, count - 1)
    half_width = 1.959964 * math.sqrt(variance / count)
    return (1 + mean, 1 + mean - half_width, 1 + mean + half_width)


def as_percentages(rtps: Mapping[str, Fraction]) -> dict[str, float]:
    return {bet: float(value) * 100 for bet, value in rtps.items()}


def play_dealt(cards: Sequence[Card], start: int, rounds: int) -> int:
    """Play ``rounds`` live rounds dealing from ``cards[start:]`` (wrapping), each settled;
    the next index. `livetable bench rules` times it: the rounds are driven exactly as the
    table drives them (``next_step()``, ``deal(card)`` until complete, then every bet)."""
    position = start
    limit = len(cards) - 6  # a round needs at most six cards
    for _ in range(rounds):
        if position > limit:
            position = 0
        round_ = BaccaratRound()
        while round_.next_step() is not None:
            round_.deal(cards[position])
            position += 1
        round_.result()
    return position
