"""Boundless blackjack: many players on one common card sequence, and its four side bets.

RULES.md "Boundless: one card sequence, unlimited players" is the specification. The live
:class:`~controller.games.blackjack.BlackjackRound` deals the shared initial player hand, the
dealer's cards and, while the platform answers ``more_cards`` with yes, one common player card
at a time. Each seated player's hands take cards from that sequence in order, as far as that
player's own decisions go (after a split: hand 1 to its end, then hand 2).
:class:`PlayerResolver` plays one player's decisions over the sequence with the very same
:class:`~controller.games.blackjack.BoxPlay` as the boxed games, and says whether that player
wants one more common card; :func:`players_need_card` answers the platform's question for a
whole table; :func:`resolve_player` settles one player once the round is complete.

Side bets (1 unit each, net per unit): Pair, Bust Bonus, Lucky Trio, Poker Trio, each paying
only its highest pattern, each available in the first N rounds of a shoe.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.errors import RulesError
from controller.games.base import CardNeeded
from controller.games.blackjack import (
    BLACKJACK,
    BOUNDLESS,
    INSURANCE,
    MORE_CARDS,
    NO,
    PLAY_TOKENS,
    YES,
    BlackjackRound,
    BlackjackRules,
    BoxPlay,
    CardFeed,
    Hand,
    dealer_must_draw,
    hand_net,
    hand_total,
    insurance_net,
    is_blackjack,
    rules_for,
)
from controller.games.cards import Card

PAIR: Final = "pair"
BUST_BONUS: Final = "bust_bonus"
LUCKY_TRIO: Final = "lucky_trio"
POKER_TRIO: Final = "poker_trio"
SIDE_BETS: Final = (PAIR, BUST_BONUS, LUCKY_TRIO, POKER_TRIO)

# "Maximum availability per round": the bet may be placed in rounds 1..N of a shoe only.
SIDE_BET_LIMITS: Final[Mapping[str, int]] = {
    PAIR: 40,
    BUST_BONUS: 45,
    LUCKY_TRIO: 45,
    POKER_TRIO: 45,
}

# Pay tables: pattern -> payout per unit (a:b as a / b). Patterns are checked highest first.
PAIR_PAYS: Final[Mapping[str, float]] = {
    "perfect_pair": 30.0,
    "coloured_pair": 10.0,
    "mixed_pair": 5.0,
}
BUST_BONUS_PAYS: Final[Mapping[int, float]] = {3: 1.0, 4: 2.0, 5: 9.0, 6: 50.0, 7: 100.0}
BUST_BONUS_EIGHT_OR_MORE: Final = 250.0
LUCKY_TRIO_PAYS: Final[Mapping[str, float]] = {
    "suited_777": 200.0,
    "suited_678": 100.0,
    "777": 50.0,
    "678": 30.0,
    "suited_21": 10.0,
    "21": 3.0,
    "19_or_20": 2.0,
}
POKER_TRIO_PAYS: Final[Mapping[str, float]] = {
    "suited_three_of_a_kind": 100.0,
    "straight_flush": 40.0,
    "three_of_a_kind": 30.0,
    "straight": 10.0,
    "flush": 5.0,
}


def side_bet_available(bet: str, round_in_shoe: int) -> bool:
    """Whether ``bet`` may be placed in round ``round_in_shoe`` (1-based) of the shoe."""
    limit = SIDE_BET_LIMITS.get(bet)
    if limit is None:
        raise RulesError(f"unknown Boundless side bet {bet!r}: expected one of {SIDE_BETS}")
    if round_in_shoe < 1:
        raise RulesError(f"rounds in a shoe count from 1, not {round_in_shoe}")
    return round_in_shoe <= limit


def pair_pattern(first: Card, second: Card) -> str | None:
    """The player's first two cards: same rank, then by suit and colour; highest only."""
    if first.rank != second.rank:
        return None
    if first.suit == second.suit:
        return "perfect_pair"
    if first.is_red == second.is_red:
        return "coloured_pair"
    return "mixed_pair"


def bust_bonus_payout(dealer: Sequence[Card]) -> float | None:
    """Payout when the dealer's final hand busts, by its number of cards; else None."""
    if hand_total(dealer)[0] <= 21:
        return None
    count = len(dealer)
    if count >= 8:
        return BUST_BONUS_EIGHT_OR_MORE
    return BUST_BONUS_PAYS.get(count)


def _one_suit(cards: Sequence[Card]) -> bool:
    return cards[0].suit == cards[1].suit == cards[2].suit


def lucky_trio_pattern(first: Card, second: Card, up: Card) -> str | None:
    """Player's first two cards and the dealer's up card, highest pattern only."""
    cards = (first, second, up)
    suited = _one_suit(cards)
    ranks = sorted(card.rank for card in cards)
    if ranks == ["7", "7", "7"]:
        return "suited_777" if suited else "777"
    if ranks == ["6", "7", "8"]:
        return "suited_678" if suited else "678"
    total, _ = hand_total(cards)  # Decision: the best Ace, as in blackjack
    if total == 21:
        return "suited_21" if suited else "21"
    if total in (19, 20):
        return "19_or_20"
    return None


def _is_straight(cards: Sequence[Card]) -> bool:
    indexes = sorted(card.rank_index for card in cards)
    if len(set(indexes)) != 3:
        return False
    if indexes[2] - indexes[0] == 2:
        return True
    return indexes == [1, 12, 13]  # Q-K-A: the Ace high; K-A-2 does not wrap


def poker_trio_pattern(first: Card, second: Card, up: Card) -> str | None:
    """Player's first two cards and the dealer's up card as a 3-card poker hand."""
    cards = (first, second, up)
    suited = _one_suit(cards)
    if first.rank == second.rank == up.rank:
        return "suited_three_of_a_kind" if suited else "three_of_a_kind"
    if _is_straight(cards):
        return "straight_flush" if suited else "straight"
    if suited:
        return "flush"
    return None


def side_bet_results(player_first_two: Sequence[Card], dealer: Sequence[Card]) -> dict[str, float]:
    """Net per unit of each side bet, from the shared first two cards and the dealer's hand.

    ``dealer`` is the dealer's complete hand with the up card (dealt first in Boundless)
    at index 0.
    """
    if len(player_first_two) < 2 or len(dealer) < 2:
        raise RulesError("side bets need the player's first two cards and the dealer's hand")
    first, second = player_first_two[0], player_first_two[1]
    up = dealer[0]
    pair = pair_pattern(first, second)
    bust = bust_bonus_payout(dealer)
    trio = lucky_trio_pattern(first, second, up)
    poker = poker_trio_pattern(first, second, up)
    return {
        PAIR: PAIR_PAYS[pair] if pair else -1.0,
        BUST_BONUS: bust if bust is not None else -1.0,
        LUCKY_TRIO: LUCKY_TRIO_PAYS[trio] if trio else -1.0,
        POKER_TRIO: POKER_TRIO_PAYS[poker] if poker else -1.0,
    }


# A player's decision source: (hand, dealer up card, legal options, auto-play default) -> token.
PlayerDecider = Callable[[Hand, Card, frozenset[str], str], str]


class TokenDecisions:
    """Decisions from a list of tokens in order; once they run out, the timeout auto-play."""

    __slots__ = ("label", "tokens", "used")

    def __init__(self, tokens: Iterable[str], label: str = "player") -> None:
        self.tokens = [token.upper() for token in tokens]
        for token in self.tokens:
            if token not in PLAY_TOKENS:
                raise RulesError(f"{label}: unknown token {token!r}: expected H, S, D, P or R")
        self.used = 0
        self.label = label

    def __call__(self, hand: Hand, up: Card, options: frozenset[str], default: str) -> str:
        if self.used >= len(self.tokens):
            return default
        token = self.tokens[self.used]
        if token not in options:
            raise RulesError(
                f"{self.label}: token {token!r} is not legal now on "
                f"{' '.join(str(card) for card in hand.cards)} "
                f"(legal: {' '.join(sorted(options))})"
            )
        self.used += 1
        return token


@dataclass(frozen=True, slots=True)
class PlayerResult:
    """One Boundless player's outcome: hands, net per hand, insurance and total net."""

    hands: tuple[tuple[Card, ...], ...]
    hand_nets: tuple[float, ...]
    outcomes: tuple[str, ...]
    insurance_net: float
    net: float
    cards_used: int

    def as_json(self) -> dict[str, Any]:
        return {
            "net": self.net,
            "insurance_net": self.insurance_net,
            "hands": [
                {"cards": [str(card) for card in cards], "net": net, "result": outcome}
                for cards, net, outcome in zip(
                    self.hands, self.hand_nets, self.outcomes, strict=True
                )
            ],
            "cards_used": self.cards_used,
        }


class PlayerResolver:
    """One seated player's hands over the growing common sequence.

    Built from the shared initial two cards and the dealer's up card; :meth:`advance` plays
    as far as the common sequence and the player's decisions go and returns whether the
    player wants one more common card. Never advance it when the dealer has BJ: the round
    ended at once and nobody plays.
    """

    __slots__ = ("decide", "insurance", "next_index", "play", "rules", "up")

    def __init__(
        self,
        initial: Sequence[Card],
        up: Card,
        decisions: PlayerDecider | Iterable[str] = (),
        insurance: bool = False,
        rules: BlackjackRules | str = BOUNDLESS,
    ) -> None:
        self.rules = rules_for(rules)
        if len(initial) < 2:
            raise RulesError("a Boundless player needs the two shared initial cards")
        hand = Hand(initial[:2])
        if hand.is_blackjack:
            hand.state = BLACKJACK
        self.up = up
        self.play = BoxPlay(self.rules, hand, up)
        self.next_index = 2
        self.decide: PlayerDecider = (
            decisions if callable(decisions) else TokenDecisions(decisions)  # type: ignore[arg-type]
        )
        self.insurance = insurance

    @property
    def finished(self) -> bool:
        return self.play.current >= len(self.play.hands)

    def advance(self, common: Sequence[Card]) -> bool:
        """Play on over ``common``; True if this player wants one more common card."""
        play = self.play
        hands = play.hands
        while play.current < len(hands):
            if play.needs_card:
                if self.next_index >= len(common):
                    return True
                play.add_card(common[self.next_index])
                self.next_index += 1
            else:
                options = play.options()
                default = play.default()
                token = self.decide(hands[play.current], self.up, options, default)
                if token not in options:
                    raise RulesError(f"decision {token!r} is not legal now (legal: {options})")
                play.decide(token)
        return False

    def net(self, dealer: Sequence[Card]) -> float:
        """This player's total net (hands and insurance) against the dealer's complete hand;
        the cheap path of :meth:`result` for simulations."""
        dealer_blackjack = is_blackjack(dealer)
        dealer_total = hand_total(dealer)[0]
        net = insurance_net(self.insurance and dealer[0].rank == "A", dealer_blackjack)
        for hand in self.play.hands:
            net += hand_net(hand, dealer_total, dealer_blackjack)[0]
        return net

    def result(self, dealer: Sequence[Card]) -> PlayerResult:
        """Settle against the dealer's complete hand."""
        dealer_blackjack = is_blackjack(dealer)
        dealer_total = hand_total(dealer)[0]
        up_is_ace = dealer[0].rank == "A"
        insurance = insurance_net(self.insurance and up_is_ace, dealer_blackjack)
        nets = []
        outcomes = []
        for hand in self.play.hands:
            net, outcome = hand_net(hand, dealer_total, dealer_blackjack)
            nets.append(net)
            outcomes.append(outcome)
        return PlayerResult(
            hands=tuple(tuple(hand.cards) for hand in self.play.hands),
            hand_nets=tuple(nets),
            outcomes=tuple(outcomes),
            insurance_net=insurance,
            net=sum(nets) + insurance,
            cards_used=self.next_index,
        )


def players_need_card(resolvers: Iterable[PlayerResolver], common: Sequence[Card]) -> bool:
    """The platform's answer to ``more_cards``: does any player want one more common card?

    Every resolver is advanced (not only up to the first that wants a card) so an illegal
    decision surfaces at the card where it was taken.
    """
    wants = [resolver.advance(common) for resolver in resolvers]
    return any(wants)


def resolve_player(
    common: Sequence[Card],
    dealer: Sequence[Card],
    decisions: PlayerDecider | Iterable[str] = (),
    insurance: bool = False,
    rules: BlackjackRules | str = BOUNDLESS,
) -> PlayerResult:
    """One player's hands and results from the complete round.

    ``common`` is the whole common player sequence (the two shared initial cards first),
    ``dealer`` the dealer's complete hand in the order dealt (up card first), ``decisions``
    the player's tokens in the order asked (then the timeout auto-play) or a decider.
    Players with different decisions on the same sequence each resolve on their own.
    Raises :class:`RulesError` when the sequence ended while this player still wanted a card
    or the dealer's hand is not complete.
    """
    if len(common) < 2:
        raise RulesError("the common sequence needs at least the two shared initial cards")
    if len(dealer) < 2:
        raise RulesError("the dealer's hand needs at least the up card and the hole card")
    resolver = PlayerResolver(common, dealer[0], decisions, insurance, rules)
    dealer_blackjack = is_blackjack(dealer)
    if not dealer_blackjack:
        if dealer_must_draw(dealer):
            raise RulesError(
                f"the dealer's hand {' '.join(map(str, dealer))} is not complete (below 17)"
            )
        if resolver.advance(common):
            raise RulesError(
                "the common sequence ended while this player still wanted a card: "
                f"{len(common)} cards is too few"
            )
    return resolver.result(dealer)


def replay_boundless(
    rules: BlackjackRules,
    cards: Sequence[Card],
    insurance: Sequence[bool],
    token_lists: Sequence[Sequence[str]],
) -> dict[str, Any]:
    """The `rules replay` line for Boundless: one player per ``box`` on one sequence."""
    round_ = BlackjackRound(rules, 1)
    feed = CardFeed(cards)
    resolvers: list[PlayerResolver] | None = None

    def make_resolvers() -> list[PlayerResolver]:
        return [
            PlayerResolver(
                round_.common[:2],
                round_.up_card,  # type: ignore[arg-type]
                TokenDecisions(tokens, f"box {box}"),
                insurance[box - 1],
                rules,
            )
            for box, tokens in enumerate(token_lists, start=1)
        ]

    while True:
        step = round_.next_step()
        if step is None:
            break
        if isinstance(step, CardNeeded):
            round_.deal(feed.next(step.position))
        elif step.kind == INSURANCE:
            round_.decide(step.box, step.hand, YES if any(insurance) else NO)
        elif step.kind == MORE_CARDS:
            if resolvers is None:
                resolvers = make_resolvers()
            wanted = players_need_card(resolvers, round_.common)
            round_.decide(step.box, step.hand, YES if wanted else NO)
        else:  # pragma: no cover - Boundless asks nothing else
            raise RulesError(f"unexpected decision {step.kind!r} in Boundless")
    if resolvers is None:
        resolvers = make_resolvers()  # dealer BJ or a shared BJ: nobody was asked
    results = [resolver.result(round_.dealer) for resolver in resolvers]
    return {
        "boxes": [
            {"net": result.net, "hands": [[str(card) for card in hand] for hand in result.hands]}
            for result in results
        ],
        "dealer": [str(card) for card in round_.dealer],
        "cards_used": feed.used,
        "side_bets": side_bet_results(round_.common[:2], round_.dealer),
    }
