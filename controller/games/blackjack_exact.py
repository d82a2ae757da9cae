"""Exact return of the blackjack games' main bet (and Boundless' Bust Bonus) by recursion.

PAR-sheet convention: one box (one seated Boundless player) plays the first round off the top
of a full shoe with the table's own :class:`~controller.games.strategy.BasicStrategy` for the
game's rules (the strategy the RTP simulation plays), declining insurance and even money.

**How.** Every first deal (player's two cards, dealer's up card; by value, the tens as one
value) is weighted by its number of physical draws. The player's hand is then played through
the live :class:`~controller.games.blackjack_hand.BoxPlay` (the one copy of the hand rules:
doubling, splitting and resplitting, surrender, split aces) with the strategy's decisions;
wherever the hand needs a card the recursion branches on every value still in the shoe,
weighted by its count in the shoe as it is *then* (the composition after every card the
round has used). At each end of the player's play the dealer's hand is drawn from the shoe
that is left, again card by card (S17), memoised on the shoe's value counts and the dealer's
hand; every finished hand is settled by :func:`~controller.games.blackjack_hand.hand_net`.

The dealer's hole card is dealt before the player's later cards, but cards dealt from a
shuffled shoe are exchangeable: the chance of any assignment of values to positions is the
same in any order. The recursion therefore draws the hole card after the player's cards, as
the dealer's first draw, refused where it would make a dealer BJ (the round ends before play:
that case is settled at once, a player BJ pushing); the player's decisions never depend on
the hole card. The tests check this against every order of a small shoe dealt through the
live round in the game's own deal order.

**What is exact, what is approximated.** Every round without a split is exact: the player's
cards and the dealer's are drawn from the shoe as the round leaves it. Splits have two
methods (``splits``):

* ``"exact"``: the split hands are played out card by card from the one shoe, hand 1 then
  hand 2 (then 3), and the dealer draws from what they left. Exact, but the states multiply:
  use it on small shoes (the tests do).
* ``"approximate"`` (the default, as published combinatorial calculators do): each split
  hand is played alone from the shoe without the pair and the up card, never seeing the
  other hand's cards; the dealer's outcome for it is drawn from that shoe less that hand's
  cards; the hands are combined as independent given the dealer's outcome. In 21 a split
  hand whose second card matches is split again (three hands at most): hand 1 matches with
  the chance of that card, else hand 2 does. The approximation touches only split rounds
  (a few per cent of rounds). Measured against ``"exact"`` on 14- and 25-card shoes: the
  RTP of the split-once games agrees to 1e-6 points (their net distributions differ a
  little); 21's resplit is off by 0.2 points on a 14-card shoe holding four 8s.

Arithmetic: floating point (rounding about 1e-15; the dealer's outcomes come from a table of
every multiset the dealer can draw, summed with numpy), or with ``exact=True`` every
probability a :class:`~fractions.Fraction` and the dealer recursing card by card (small shoes:
the tests count cases by hand with it, and check the two dealers agree).

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from typing import Final

import numpy as np

from controller.games.blackjack_hand import (
    BUSTED,
    DEALER_STANDS_ON,
    PLAYING,
    RANK_VALUE,
    SPLIT,
    SURRENDERED,
    BlackjackRules,
    BoxPlay,
    Hand,
    hand_net,
    rules_for,
)
from controller.games.boundless_side_bets import (
    BUST_BONUS,
    BUST_BONUS_EIGHT_OR_MORE,
    BUST_BONUS_PAYS,
)
from controller.games.par import BetPar, PayLine, lines_by_net
from controller.games.strategy import BasicStrategy
from controller.kernel.cards import DECKS_PER_SHOE, Card
from controller.kernel.errors import RulesError

MAIN: Final = "main"
VALUES: Final = tuple(range(1, 11))  # 1 is an Ace, 10 every ten-value card
# One card per value to drive the live rules: they read ranks and values, never suits here.
_CARD: Final = {value: Card("A23456789T"[value - 1], "S") for value in VALUES}
BUST: Final = 22  # the dealer's "total" once busted
DEALER_BJ: Final = 0  # the dealer's "total" for a blackjack
BUST_CARDS_CAP: Final = 8  # Bust Bonus pays alike for 8 cards or more
EXACT: Final = "exact"
APPROXIMATE: Final = "approximate"
SPLIT_METHODS: Final = (EXACT, APPROXIMATE)
"""How splits are played: out card by card, both hands from one shoe (exact, slow past a few
dozen cards), or each split hand alone (the published calculators' approximation)."""

Shoe = tuple[int, ...]
"""Cards left of each value, index 0 for Aces to index 9 for ten-value cards."""
Number = Fraction | float
# Dealer outcome: (final total, 17..21 or BUST or DEALER_BJ; cards in the hand, capped).
Outcome = tuple[int, int]
Joint = tuple[Number, Outcome]
"""A hand's net and the dealer's outcome."""


def full_shoe(decks: int = DECKS_PER_SHOE) -> Shoe:
    """Value counts of ``decks`` full decks: 4 of each value per deck, 16 tens."""
    if decks < 1:
        raise RulesError(f"a shoe has at least one deck, not {decks}")
    return tuple(4 * decks if value < 10 else 16 * decks for value in VALUES)


def shoe_of(cards: str) -> Shoe:
    """Value counts of a shoe written as ranks, e.g. ``"A2T9"`` (J, Q, K count as T)."""
    counts = [0] * 10
    for rank in cards:
        if rank not in "A23456789TJQK":
            raise RulesError(f"unknown rank {rank!r} in a shoe")
        counts[min("A23456789TJQK".index(rank), 9)] += 1
    return tuple(counts)


@dataclass(frozen=True, slots=True)
class MainGameResult:
    """The main bet's net distribution, and the dealer's outcomes over the same rounds."""

    rules: BlackjackRules
    shoe: Shoe
    splits: str
    net: dict[Number, Number]
    """Net per unit of initial stake (doubles and splits included) -> probability."""
    dealer: dict[Outcome, Number]
    """Dealer's (final total, cards) -> probability, when the dealer plays out every round."""

    def main_par(self) -> BetPar:
        return lines_by_net(MAIN, self.net, method_words(self.rules, self.shoe, self.splits))

    def bust_bonus_par(self) -> BetPar:
        """Boundless' Bust Bonus from the dealer's outcomes (the dealer always plays there)."""
        if not self.rules.dealer_always_plays:
            raise RulesError(f"{self.rules.game} has no Bust Bonus")
        by_cards: dict[int, Number] = defaultdict(int)
        losing: Number = 0
        for (total, cards), probability in self.dealer.items():
            if total == BUST and cards >= 3:
                by_cards[min(cards, BUST_CARDS_CAP)] += probability
            else:
                losing += probability
        pays = {**BUST_BONUS_PAYS, BUST_CARDS_CAP: BUST_BONUS_EIGHT_OR_MORE}
        lines = [
            PayLine(
                f"dealer busts with {cards}{'+' if cards == BUST_CARDS_CAP else ''} cards",
                _number(net, self.net),
                by_cards.get(cards, 0 * losing),
            )
            for cards, net in sorted(pays.items(), reverse=True)
        ]
        lines.append(PayLine("dealer does not bust (loses)", _number(-1.0, self.net), losing))
        method = (
            method_words(self.rules, self.shoe, self.splits)
            + "; the dealer's whole hand, every round"
        )
        return BetPar(BUST_BONUS, tuple(lines), method)


def _number(value: float, like: dict[Number, Number]) -> Number:
    exact = any(isinstance(probability, Fraction) for probability in like.values())
    return Fraction(value) if exact else value


def method_words(rules: BlackjackRules, shoe: Shoe, splits: str = "approximate") -> str:
    how = (
        "split hands played out card by card"
        if splits == EXACT
        else "split hands each played alone from the shoe less the pair (approximation)"
    )
    return (
        f"recursion over the shoe's composition ({sum(shoe)} cards), one box playing the "
        f"table's basic strategy for {rules.game}, insurance declined; exact without a "
        f"split, {how}"
    )


class _Analysis:
    """One analysis: the rules, the strategy, the arithmetic and the dealer's memo."""

    def __init__(
        self, rules: BlackjackRules, exact: bool, dealer_cards: bool, approximate_splits: bool
    ) -> None:
        self.rules = rules
        self.strategy = BasicStrategy(rules)
        self.ratio: Callable[[int, int], Number] = Fraction if exact else _float_ratio
        self.zero: Number = Fraction(0) if exact else 0.0
        self.one: Number = Fraction(1) if exact else 1.0
        # The dealer's card count matters to Bust Bonus only: elsewhere it is left out of the
        # outcomes, which makes the memo far smaller.
        self.dealer_cards = dealer_cards
        self.dealer_always_plays = rules.dealer_always_plays
        self.memo: dict[tuple[Shoe, int, bool, int, int], dict[Outcome, Number]] = {}
        self.exact = exact
        self.approximate_splits = approximate_splits
        # A split hand played alone: the rules with no split left to make.
        self.lone_rules = replace(rules, max_hands=1)
        self.joint_memo: dict[tuple[Shoe, tuple[object, ...]], dict[Joint, Number]] = {}
        self.dealer_memo: dict[tuple[Shoe, int], dict[Outcome, Number]] = {}
        self.player_memo: dict[
            tuple[Shoe, tuple[object, ...]],
            tuple[dict[Number, Number], dict[Outcome, Number]],
        ] = {}

    # -- the dealer ---------------------------------------------------------------------

    def dealer(self, shoe: Shoe, up: int) -> dict[Outcome, Number]:
        """The dealer's final outcomes from ``shoe``, up card ``up`` already out, joint with
        "no dealer BJ" (the hole card that would make one is never drawn here)."""
        key = (shoe, up)
        known = self.dealer_memo.get(key)
        if known is not None:
            return known
        if self.exact:
            banned = 10 if up == 1 else 1 if up == 10 else 0
            result = self._dealer_from(shoe, up, up == 1, 1, banned)
        else:
            result = _dealer_table(up, self.dealer_cards).outcomes(shoe)
        self.dealer_memo[key] = result
        return result

    def _dealer_from(
        self, shoe: Shoe, hard: int, ace: bool, cards: int, banned: int
    ) -> dict[Outcome, Number]:
        key = (shoe, hard, ace, cards if self.dealer_cards else 0, banned)
        known = self.memo.get(key)
        if known is not None:
            return known
        total = hard + 10 if ace and hard <= 11 else hard
        if total >= DEALER_STANDS_ON:
            final = BUST if total > 21 else total
            result = {(final, min(cards, BUST_CARDS_CAP) if self.dealer_cards else 0): self.one}
            self.memo[key] = result
            return result
        left = sum(shoe)
        outcomes: dict[Outcome, Number] = defaultdict(lambda: self.zero)
        for index, count in enumerate(shoe):
            value = index + 1
            if not count or value == banned:
                continue
            chance = self.ratio(count, left)
            after = (*shoe[:index], count - 1, *shoe[index + 1 :])
            for outcome, probability in self._dealer_from(
                after, hard + value, ace or value == 1, cards + 1, 0
            ).items():
                outcomes[outcome] += chance * probability
        result = dict(outcomes)
        self.memo[key] = result
        return result

    # -- the player ---------------------------------------------------------------------

    def round_from(
        self,
        shoe: Shoe,
        first: int,
        second: int,
        up: int,
        weight: Number,
        net: dict[Number, Number],
        dealer: dict[Outcome, Number],
    ) -> None:
        """Add the round after this first deal (``shoe`` without its three cards)."""
        hand = Hand((_CARD[first], _CARD[second]))
        player_bj = hand.is_blackjack
        left = sum(shoe)
        bj_hole = 10 if up == 1 else 1 if up == 10 else 0
        dealer_bj = self.ratio(shoe[bj_hole - 1], left) if bj_hole else self.zero
        if dealer_bj:
            # Any dealer BJ ends the round before play; insurance is declined.
            net[0.0 if player_bj else -1.0] += weight * dealer_bj
            if self.dealer_cards:
                dealer[DEALER_BJ, 2] += weight * dealer_bj
        if player_bj:
            net[1.5] += weight * (self.one - dealer_bj)
            if self.dealer_cards:
                for outcome, chance in self.dealer(shoe, up).items():
                    dealer[outcome] += weight * chance
            return
        play = BoxPlay(self.rules, hand, _CARD[up])
        if self.approximate_splits and self._splits(play):
            for (value, outcome), chance in self._split_value(first, up, shoe).items():
                net[value] += weight * chance
                if self.dealer_cards:
                    dealer[outcome] += weight * chance
            return
        nets, outcomes = self._value(play, shoe)
        for value, chance in nets.items():
            net[value] += weight * chance
        for outcome, chance in outcomes.items():
            dealer[outcome] += weight * chance

    def _splits(self, play: BoxPlay) -> bool:
        """Whether the strategy splits the initial hand of ``play`` (its first decision)."""
        options = play.options()
        if SPLIT not in options or play.finished:
            return False
        hand = play.hands[play.current]
        return self.strategy.decide(hand, _CARD[play.up_value], options) == SPLIT

    # -- splits, approximated -------------------------------------------------------------

    def _split_value(self, pair: int, up: int, shoe: Shoe) -> dict[Joint, Number]:
        """The split of a pair of ``pair`` against ``up``, ``shoe`` without both pair cards
        and the up card: each split hand is played out alone from that shoe (never seeing
        the other hand's cards), and the hands are combined as independent given the
        dealer's outcome (the usual approximation of published calculators)."""
        lone = self._split_hand(pair, up, shoe)
        by_dealer = _dealer_marginal(lone)
        if not self._resplits(pair, up):
            return _combine(by_dealer, [(self.one, (lone, lone))])
        # 21: a split hand whose second card matches is split again, up to three hands;
        # hand 1 is dealt first, so: hand 1 matches (three hands); else hand 2 matches (a
        # non-matching hand 1 and two hands); else two non-matching hands.
        left = sum(shoe)
        match = self.ratio(shoe[pair - 1], left)
        matched = self._split_hand(pair, up, shoe, second=pair)
        unmatched = {key: value - matched.get(key, self.zero) for key, value in lone.items()}
        if match == 1:
            unmatched = {}
        else:
            unmatched = {key: value / (1 - match) for key, value in unmatched.items()}
        return _combine(
            by_dealer,
            [
                (match, (lone, lone, lone)),
                ((1 - match) * match, (unmatched, lone, lone)),
                ((1 - match) * (1 - match), (unmatched, unmatched)),
            ],
        )

    def _resplits(self, pair: int, up: int) -> bool:
        """Whether the rules allow a split hand to be split again and the strategy does."""
        if self.rules.max_hands < 3:
            return False
        play = BoxPlay(self.rules, Hand((_CARD[pair], _CARD[pair])), _CARD[up])
        play.decide(SPLIT)
        play.add_card(_CARD[pair])
        return self._splits(play)

    def _split_hand(self, pair: int, up: int, shoe: Shoe, second: int = 0) -> dict[Joint, Number]:
        """One split hand, never split again: (net, dealer outcome) -> probability.
        ``second``: only the branch where that value is its second card (with its chance)."""
        hand = Hand((_CARD[pair],), from_split=True)
        hand.split_aces = pair == 1
        play = BoxPlay(self.lone_rules, hand, _CARD[up])
        play.acted = True
        if not second:
            return self._joint(play, shoe)
        count = shoe[second - 1]
        if not count:
            return {}
        play.add_card(_CARD[second])
        after = (*shoe[: second - 1], count - 1, *shoe[second:])
        chance = self.ratio(count, sum(shoe))
        return {key: chance * value for key, value in self._joint(play, after).items()}

    def _joint(self, play: BoxPlay, shoe: Shoe) -> dict[Joint, Number]:
        """As :meth:`_value` for one hand, but joint with the dealer's outcome (busted
        hands too: the other split hands still meet the dealer)."""
        up_card = _CARD[play.up_value]
        while not play.finished and not play.needs_card:
            hand = play.hands[play.current]
            play.decide(self.strategy.decide(hand, up_card, play.options()))
        key = (shoe, _signature(play))
        known = self.joint_memo.get(key)
        if known is not None:
            return known
        joint: dict[Joint, Number] = defaultdict(lambda: self.zero)
        if play.finished:
            (hand,) = play.hands
            for outcome, chance in self.dealer(shoe, play.up_value).items():
                joint[hand_net(hand, outcome[0], False)[0], outcome] += chance
        else:
            left = sum(shoe)
            for index, count in enumerate(shoe):
                if not count:
                    continue
                branch = _clone(play)
                branch.add_card(_CARD[index + 1])
                after = (*shoe[:index], count - 1, *shoe[index + 1 :])
                chance = self.ratio(count, left)
                for pair_key, probability in self._joint(branch, after).items():
                    joint[pair_key] += chance * probability
        result = dict(joint)
        self.joint_memo[key] = result
        return result

    def _value(
        self, play: BoxPlay, shoe: Shoe
    ) -> tuple[dict[Number, Number], dict[Outcome, Number]]:
        """The rest of the round from here: net -> probability and dealer outcome ->
        probability, both joint with "no dealer BJ". Memoised on the shoe and every part
        of the hands the rules and the strategy read (never the order the cards came in)."""
        up_card = _CARD[play.up_value]
        while not play.finished and not play.needs_card:
            hand = play.hands[play.current]
            play.decide(self.strategy.decide(hand, up_card, play.options()))
        key = (shoe, _signature(play))
        known = self.player_memo.get(key)
        if known is not None:
            return known
        if play.finished:
            result = self._settle(play, shoe)
        else:
            zero = self.zero
            nets: dict[Number, Number] = defaultdict(lambda: zero)
            outcomes: dict[Outcome, Number] = defaultdict(lambda: zero)
            left = sum(shoe)
            for index, count in enumerate(shoe):
                if not count:
                    continue
                branch = _clone(play)
                branch.add_card(_CARD[index + 1])
                after = (*shoe[:index], count - 1, *shoe[index + 1 :])
                chance = self.ratio(count, left)
                sub_nets, sub_outcomes = self._value(branch, after)
                for value, probability in sub_nets.items():
                    nets[value] += chance * probability
                for outcome, probability in sub_outcomes.items():
                    outcomes[outcome] += chance * probability
            result = (dict(nets), dict(outcomes))
        self.player_memo[key] = result
        return result

    def _settle(
        self, play: BoxPlay, shoe: Shoe
    ) -> tuple[dict[Number, Number], dict[Outcome, Number]]:
        hands = play.hands
        waiting = any(hand.state not in (BUSTED, SURRENDERED) for hand in hands)
        if not waiting and not self.dealer_cards:
            # Every hand is decided whatever the dealer draws: only "no dealer BJ" is left.
            no_bj = sum(self.dealer(shoe, play.up_value).values(), self.zero)
            return {sum(hand_net(hand, 0, False)[0] for hand in hands): no_bj}, {}
        nets: dict[Number, Number] = defaultdict(lambda: self.zero)
        outcomes: dict[Outcome, Number] = {}
        for outcome, chance in self.dealer(shoe, play.up_value).items():
            nets[sum(hand_net(hand, outcome[0], False)[0] for hand in hands)] += chance
        if self.dealer_cards:
            outcomes = self.dealer(shoe, play.up_value)
        return dict(nets), outcomes


def _signature(play: BoxPlay) -> tuple[object, ...]:
    """Everything of ``play`` that the rules, the strategy and settlement still read: a
    finished hand is settled on its state, stake and total alone."""
    return (
        play.up_value,
        play.current,
        play.acted,
        play.needs_card,
        tuple(_hand_signature(hand) for hand in play.hands),
    )


def _hand_signature(hand: Hand) -> tuple[object, ...]:
    state = hand.state
    if state in (BUSTED, SURRENDERED):
        return (state, hand.bet)
    if state != PLAYING:
        return (state, hand.bet, hand.total)
    cards = hand.cards
    return (
        hand.hard,
        hand.has_ace,
        hand.bet,
        hand.from_split,
        hand.split_aces,
        # Two cards or fewer: which values (pairs split, a BJ); more: only how many.
        tuple(sorted(RANK_VALUE[card.rank] for card in cards)) if len(cards) <= 2 else 3,
    )


class _DealerTable:
    """Every way the dealer's hand can end from one up card, for any shoe: the floating-point
    dealer of :class:`_Analysis` (the exact one recurses card by card instead).

    A dealer's hand that ends is a multiset of drawn values (hole card first, then hits); all
    its valid orders end alike (same total, same number of cards) and each order of ``k``
    cards has the same chance, Π falling(count, drawn) / falling(cards left, k), in any shoe.
    So the hands are listed once per up card, by multiset with its number of valid orders
    (those whose first card would not make a dealer BJ), and a shoe's outcomes are one
    vectorised sum over at most about 2,000 multisets.
    """

    def __init__(self, up: int, dealer_cards: bool) -> None:
        banned = 10 if up == 1 else 1 if up == 10 else 0
        orders: dict[tuple[int, ...], int] = defaultdict(int)
        ends: dict[tuple[int, ...], Outcome] = {}
        counts = [0] * 10

        def draw(hard: int, ace: bool, cards: int) -> None:
            total = hard + 10 if ace and hard <= 11 else hard
            if total >= DEALER_STANDS_ON:
                key = tuple(counts)
                orders[key] += 1
                final = BUST if total > 21 else total
                ends[key] = (final, min(cards, BUST_CARDS_CAP) if dealer_cards else 0)
                return
            for value in VALUES:
                if cards == 1 and value == banned:
                    continue
                counts[value - 1] += 1
                draw(hard + value, ace or value == 1, cards + 1)
                counts[value - 1] -= 1

        draw(up, up == 1, 1)
        keys = list(orders)
        self.drawn = np.array(keys, dtype=np.int64)
        self.sizes = self.drawn.sum(axis=1)
        self.orders = np.array([orders[key] for key in keys], dtype=np.float64)
        self.keys = sorted(set(ends.values()))
        index = {outcome: number for number, outcome in enumerate(self.keys)}
        self.outcome_index = np.array([index[ends[key]] for key in keys], dtype=np.int64)
        self.most = int(self.drawn.max())

    def outcomes(self, shoe: Shoe) -> dict[Outcome, Number]:
        product = self.orders.copy()
        for index, count in enumerate(shoe):
            product *= _falling(count, self.most)[self.drawn[:, index]]
        below = _falling(sum(shoe), int(self.sizes.max()))[self.sizes]
        # A hand of more cards than the shoe holds already has a product of 0.
        product /= np.where(below > 0, below, 1.0)
        sums = np.bincount(self.outcome_index, weights=product, minlength=len(self.keys))
        return {key: float(value) for key, value in zip(self.keys, sums, strict=True) if value}


def _falling(count: int, most: int) -> np.ndarray:
    """count · (count - 1) · ... (j factors) for j = 0..most, 0 once j exceeds count."""
    factors = np.maximum(count - np.arange(most), 0).astype(np.float64)
    return np.concatenate(([1.0], np.cumprod(factors)))


@lru_cache(maxsize=32)
def _dealer_table(up: int, dealer_cards: bool) -> _DealerTable:
    return _DealerTable(up, dealer_cards)


def _dealer_marginal(joint: dict[Joint, Number]) -> dict[Outcome, Number]:
    marginal: dict[Outcome, Number] = defaultdict(int)
    for (_net, outcome), probability in joint.items():
        marginal[outcome] += probability
    return dict(marginal)


def _combine(
    by_dealer: dict[Outcome, Number],
    mixture: list[tuple[Number, tuple[dict[Joint, Number], ...]]],
) -> dict[Joint, Number]:
    """Split hands combined as independent given the dealer's outcome, weighted by the
    chance of each way the split goes: (round's net, dealer outcome) -> probability."""
    result: dict[Joint, Number] = defaultdict(int)
    for chance, hands in mixture:
        if not chance:
            continue
        given = [_given_dealer(hand, by_dealer) for hand in hands]
        for outcome, probability in by_dealer.items():
            totals: dict[Number, Number] = {0.0: chance * probability}
            for conditional in given:
                step: dict[Number, Number] = defaultdict(int)
                for total, weight in totals.items():
                    for net, share in conditional.get(outcome, {}).items():
                        step[total + net] += weight * share
                totals = step
            for total, weight in totals.items():
                result[total, outcome] += weight
    return dict(result)


def _given_dealer(
    joint: dict[Joint, Number], by_dealer: dict[Outcome, Number]
) -> dict[Outcome, dict[Number, Number]]:
    """A hand's net given each dealer outcome, from its joint table."""
    own = _dealer_marginal(joint)
    given: dict[Outcome, dict[Number, Number]] = defaultdict(dict)
    for (net, outcome), probability in joint.items():
        if own.get(outcome):
            given[outcome][net] = probability / own[outcome]
    return given


def _float_ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator


_HAND_SLOTS: Final = Hand.__slots__
_PLAY_SLOTS: Final = BoxPlay.__slots__


def _clone(play: BoxPlay) -> BoxPlay:
    """An independent copy of ``play`` (its hands too), to branch on the next card."""
    copy = BoxPlay.__new__(BoxPlay)
    for name in _PLAY_SLOTS:
        setattr(copy, name, getattr(play, name))
    hands = []
    for hand in play.hands:
        twin = Hand.__new__(Hand)
        for name in _HAND_SLOTS:
            setattr(twin, name, getattr(hand, name))
        twin.cards = list(hand.cards)
        hands.append(twin)
    copy.hands = hands
    return copy


def main_game(
    game: str | BlackjackRules,
    shoe: Shoe | None = None,
    exact: bool = False,
    dealer_cards: bool | None = None,
    splits: str = APPROXIMATE,
) -> MainGameResult:
    """The main bet of ``game`` played from ``shoe`` (a full 8-deck shoe by default).

    ``dealer_cards`` (default: Boundless only) keeps the dealer's card count in the
    outcomes, which Bust Bonus needs.
    """
    rules = rules_for(game)
    if splits not in SPLIT_METHODS:
        raise RulesError(f"splits are {' or '.join(SPLIT_METHODS)}, not {splits!r}")
    shoe = full_shoe() if shoe is None else tuple(shoe)
    if len(shoe) != 10 or min(shoe) < 0:
        raise RulesError("a shoe is ten counts, Aces first and ten-value cards last")
    if sum(shoe) < 4:
        raise RulesError(f"a round needs at least 4 cards, not {sum(shoe)}")
    if dealer_cards is None:
        dealer_cards = rules.dealer_always_plays
    analysis = _Analysis(rules, exact, dealer_cards, splits == APPROXIMATE)
    net: dict[Number, Number] = defaultdict(lambda: analysis.zero)
    dealer: dict[Outcome, Number] = defaultdict(lambda: analysis.zero)
    total = sum(shoe)
    ratio = analysis.ratio
    counts = list(shoe)
    for first in VALUES:
        for second in VALUES:
            if second < first:
                continue  # the two orders play alike: counted once, twice the weight
            for up in VALUES:
                weight: Number = analysis.one
                left = total
                for value in (first, second, up):
                    if counts[value - 1] == 0:
                        weight = analysis.zero
                        break
                    weight = weight * ratio(counts[value - 1], left)
                    counts[value - 1] -= 1
                    left -= 1
                if weight:
                    if second != first:
                        weight = weight * 2
                    analysis.round_from(tuple(counts), first, second, up, weight, net, dealer)
                counts = list(shoe)
    return MainGameResult(rules, shoe, splits, dict(net), dict(dealer))


def problems(result: MainGameResult) -> list[str]:
    """What is wrong with a result's totals (empty when its probabilities sum to 1)."""
    found = []
    for name, table in (("main", result.net), ("dealer", result.dealer)):
        if not table:
            continue
        total = sum(table.values())
        if abs(float(total) - 1.0) > 1e-9:
            found.append(f"{name} probabilities sum to {float(total)!r}")
    return found
