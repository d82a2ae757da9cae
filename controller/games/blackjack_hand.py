"""Blackjack hands: the three games' rule differences, hand arithmetic, one box's play.

docs/rules-blackjack.md, "Shared rules" and "Where the games differ", restates the rules;
:class:`BlackjackRules` holds those differences as parameters and :data:`PRESETS` has the three
games, ``blackjack-boundless``, ``blackjack-classic`` and ``blackjack-21``. :class:`BoxPlay` is
the one copy of the hand rules (hit, stand, double, split, surrender) used by the live round
for every box of classic and 21 (:mod:`controller.games.blackjack`) and by each Boundless
player over the common sequence (:mod:`controller.games.boundless`); :func:`hand_net` settles
one finished hand. :class:`TokenDecisions` answers decisions from a list of tokens, then by the
timeout auto-play rule: the one such decider of `rules replay` and the Boundless resolver.

Settlement is a net result per unit staked on the box (1:1 win ``1.0``, push ``0.0``, loss
``-1.0``, BJ ``1.5``, a lost double ``-2.0``, a declined insurance is no bet at all).

This module is the bottom of the blackjack chain (hand, side bets, round, Boundless,
replay): it imports none of the others. Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.kernel import vocabulary
from controller.kernel.cards import Card
from controller.kernel.errors import RulesError
from controller.kernel.vocabulary import (  # the API's tokens: one list for all
    DOUBLE,
    HIT,
    NO,
    SPLIT,
    STAND,
    SURRENDER,
    YES,
)

BOUNDLESS: Final = "blackjack-boundless"
CLASSIC: Final = "blackjack-classic"
TWENTY_ONE: Final = "blackjack-21"

PLAY_TOKENS: Final = frozenset((HIT, STAND, DOUBLE, SPLIT, SURRENDER))
YES_NO: Final = frozenset((YES, NO))

# What a decision is about: the API's kinds.
PLAY: Final = vocabulary.PLAY
INSURANCE: Final = vocabulary.INSURANCE
EVEN_MONEY: Final = vocabulary.EVEN_MONEY
MORE_CARDS: Final = vocabulary.MORE_CARDS

# Hand states. A hand is finished in every state but PLAYING.
PLAYING: Final = "playing"
STOOD: Final = "stood"
BUSTED: Final = "busted"
BLACKJACK: Final = "blackjack"
SURRENDERED: Final = "surrendered"
TOOK_EVEN_MONEY: Final = "even_money"
# Every state a hand is published in (``round.view``'s hands): the pages have words for each.
HAND_STATES: Final = (PLAYING, STOOD, BUSTED, BLACKJACK, SURRENDERED, TOOK_EVEN_MONEY)

# Blackjack value by rank: A = 1 (a hand counts one ace as 11 when that does not bust).
RANK_VALUE: Final[Mapping[str, int]] = {
    "A": 1,
    "2": 2,
    "3": 3,
    "4": 4,
    "5": 5,
    "6": 6,
    "7": 7,
    "8": 8,
    "9": 9,
    "T": 10,
    "J": 10,
    "Q": 10,
    "K": 10,
}
TEN_VALUE: Final = 10
DEALER_STANDS_ON: Final = 17  # S17: the dealer stands on every 17, soft 17 included.
AUTO_PLAY_HITS_UP_TO: Final = 11  # Timeout auto-play: hits 11 or less, stands above 11.
INSURANCE_STAKE: Final = 0.5  # half the box bet
INSURANCE_PAYS: Final = 2.0  # 2:1
BLACKJACK_PAYS: Final = 1.5  # 3:2
SURRENDER_LOSES: Final = 0.5  # late surrender: half the bet back


@dataclass(frozen=True, slots=True)
class BlackjackRules:
    """Where the three games differ (docs/rules-blackjack.md, Where the games differ), one
    field per rule.

    ``hole_card_second``: classic deals the dealer's face-down hole card after the boxes'
    first cards and the up card last; the others deal the up card there and the hole last.
    ``max_hands``: hands one box may hold after splits (2: split once; 3: resplit once).
    ``dealer_always_plays``: the dealer draws even when every player hand is finished.
    Every game ends the round at once on a dealer BJ, after the insurance offer when the up
    card is an Ace (Boundless: "ends at once"; classic and 21: the peek on an Ace or ten,
    which are the only up cards a BJ can have, with the hole card already read by the shoe).
    """

    game: str
    shared_hand: bool
    max_boxes: int
    hole_card_second: bool
    double_after_split: bool
    max_hands: int
    surrender: bool
    even_money: bool
    insurance_with_blackjack: bool
    dealer_always_plays: bool


PRESETS: Final[Mapping[str, BlackjackRules]] = {
    BOUNDLESS: BlackjackRules(
        game=BOUNDLESS,
        shared_hand=True,
        max_boxes=1,
        hole_card_second=False,
        double_after_split=True,
        max_hands=2,
        surrender=True,
        even_money=False,
        insurance_with_blackjack=True,
        dealer_always_plays=True,
    ),
    CLASSIC: BlackjackRules(
        game=CLASSIC,
        shared_hand=False,
        max_boxes=5,
        hole_card_second=True,
        double_after_split=True,
        max_hands=2,
        surrender=False,
        even_money=True,
        insurance_with_blackjack=False,
        dealer_always_plays=False,
    ),
    TWENTY_ONE: BlackjackRules(
        game=TWENTY_ONE,
        shared_hand=False,
        max_boxes=7,  # Decision: seats default to 7
        hole_card_second=False,
        double_after_split=False,
        max_hands=3,
        surrender=False,
        even_money=False,
        insurance_with_blackjack=True,
        dealer_always_plays=False,
    ),
}


def rules_for(game: str | BlackjackRules) -> BlackjackRules:
    """The preset for a game id; :class:`RulesError` naming the known ids otherwise."""
    if isinstance(game, BlackjackRules):
        return game
    rules = PRESETS.get(game)
    if rules is None:
        raise RulesError(f"unknown blackjack game {game!r}: expected one of {', '.join(PRESETS)}")
    return rules


def hand_total(cards: Iterable[Card]) -> tuple[int, bool]:
    """Best total of a hand and whether it is soft (an Ace counted as 11)."""
    hard = 0
    has_ace = False
    for card in cards:
        value = RANK_VALUE[card.rank]
        hard += value
        if value == 1:
            has_ace = True
    if has_ace and hard <= 11:
        return hard + 10, True
    return hard, False


def is_blackjack(cards: Sequence[Card], from_split: bool = False) -> bool:
    """A+ten as the first two cards of an unsplit hand; after a split it is only 21."""
    if from_split or len(cards) != 2:
        return False
    first, second = RANK_VALUE[cards[0].rank], RANK_VALUE[cards[1].rank]
    return first + second == 11 and (first == 1 or second == 1)


def auto_play_token(cards: Iterable[Card]) -> str:
    """The timeout auto-play rule for one step: hit at 11 or less, stand above.

    Aces count 11 unless that busts (the hand's best total), so A-5 is 16 and stands.
    """
    total, _ = hand_total(cards)
    return HIT if total <= AUTO_PLAY_HITS_UP_TO else STAND


def insufficient_balance_token(cards: Iterable[Card]) -> str:
    """What a double or split becomes when the balance is short at execution time.

    docs/rules-blackjack.md, Insufficient balance: the hand hits on 11 or less and stands
    above (Aces as for auto-play).
    Whoever holds the balance applies it by sending this token instead of D or P.
    """
    return auto_play_token(cards)


class Hand:
    """One player hand: its cards, stake (2 after a double) and state."""

    __slots__ = ("bet", "cards", "doubled", "from_split", "hard", "has_ace", "split_aces", "state")

    def __init__(self, cards: Iterable[Card] = (), from_split: bool = False) -> None:
        self.cards: list[Card] = []
        self.hard = 0
        self.has_ace = False
        self.bet = 1
        self.doubled = False
        self.from_split = from_split
        self.split_aces = False
        self.state = PLAYING
        for card in cards:
            self.add(card)

    def add(self, card: Card) -> None:
        self.cards.append(card)
        value = RANK_VALUE[card.rank]
        self.hard += value
        if value == 1:
            self.has_ace = True

    @property
    def total(self) -> int:
        hard = self.hard
        if self.has_ace and hard <= 11:
            return hard + 10
        return hard

    @property
    def soft(self) -> bool:
        return self.has_ace and self.hard <= 11

    @property
    def is_blackjack(self) -> bool:
        return (
            not self.from_split
            and len(self.cards) == 2
            and self.has_ace
            and self.hard == 11  # A (1) + ten (10)
        )

    @property
    def finished(self) -> bool:
        return self.state != PLAYING

    def view(self) -> dict[str, Any]:
        return {
            "cards": [str(card) for card in self.cards],
            "total": self.total,
            "soft": self.soft,
            "state": self.state,
            "doubled": self.doubled,
        }


_OPTION_SETS: dict[tuple[bool, bool, bool], frozenset[str]] = {
    (double, split, surrender): frozenset(
        (HIT, STAND)
        + ((DOUBLE,) if double else ())
        + ((SPLIT,) if split else ())
        + ((SURRENDER,) if surrender else ())
    )
    for double in (False, True)
    for split in (False, True)
    for surrender in (False, True)
}


class BoxPlay:
    """One box's hands through the play phase: which hand needs a card or a decision.

    Used by :class:`BlackjackRound` for each box of classic and 21, and by the Boundless
    resolver for each player over the common sequence: there is one copy of the hand rules.
    After a split the hands are played in order, hand 1 to its end, then hand 2 (then 3);
    a resplit hand goes right after the hand it came from.
    """

    __slots__ = ("acted", "current", "hands", "needs_card", "rules", "up_value")

    def __init__(self, rules: BlackjackRules, hand: Hand, up_card: Card) -> None:
        self.rules = rules
        self.hands = [hand]
        self.up_value = RANK_VALUE[up_card.rank]
        self.current = 0
        self.acted = False
        self.needs_card = False
        if hand.state == PLAYING and hand.total == 21:
            hand.state = STOOD  # 21 stands by itself (a BJ is marked before play starts)
        self._skip_finished()

    @property
    def finished(self) -> bool:
        return self.current >= len(self.hands)

    def options(self) -> frozenset[str]:
        """The tokens legal for the current hand, which is waiting for a decision."""
        hand = self.hands[self.current]
        rules = self.rules
        two_cards = len(hand.cards) == 2
        can_double = two_cards and (not hand.from_split or rules.double_after_split)
        can_split = (
            two_cards
            and len(self.hands) < rules.max_hands
            and RANK_VALUE[hand.cards[0].rank] == RANK_VALUE[hand.cards[1].rank]
            and not (hand.from_split and hand.cards[0].rank == "A")  # aces are never resplit
        )
        can_surrender = (
            rules.surrender
            and not self.acted
            and two_cards
            and not hand.from_split
            and self.up_value != 1
            and self.up_value != TEN_VALUE
        )
        return _OPTION_SETS[(can_double, can_split, can_surrender)]

    def default(self) -> str:
        """The timeout auto-play choice for the current hand."""
        return HIT if self.hands[self.current].total <= AUTO_PLAY_HITS_UP_TO else STAND

    def add_card(self, card: Card) -> None:
        """The card the current hand was waiting for."""
        hand = self.hands[self.current]
        hand.add(card)
        self.needs_card = False
        total = hand.total
        if total > 21:
            hand.state = BUSTED
        elif hand.doubled or hand.split_aces or total == 21:
            hand.state = STOOD
        if hand.state != PLAYING:
            self.current += 1
            self._skip_finished()

    def decide(self, token: str) -> None:
        """Apply a legal token (the caller checked it against :meth:`options`)."""
        hand = self.hands[self.current]
        self.acted = True
        if token == HIT:
            self.needs_card = True
        elif token == STAND:
            hand.state = STOOD
            self.current += 1
            self._skip_finished()
        elif token == DOUBLE:
            hand.bet = 2
            hand.doubled = True
            self.needs_card = True
        elif token == SPLIT:
            first, second = hand.cards
            aces = first.rank == "A"
            hand.cards = [first]
            hand.hard = RANK_VALUE[first.rank]
            hand.has_ace = aces
            hand.from_split = True
            hand.split_aces = aces
            new_hand = Hand((second,), from_split=True)
            new_hand.split_aces = aces
            self.hands.insert(self.current + 1, new_hand)
            self.needs_card = True
        elif token == SURRENDER:
            hand.state = SURRENDERED
            self.current += 1
            self._skip_finished()
        else:  # pragma: no cover - the caller validates tokens
            raise RulesError(f"unknown decision {token!r}")

    def _skip_finished(self) -> None:
        hands = self.hands
        while self.current < len(hands) and hands[self.current].state != PLAYING:
            self.current += 1
        if self.current < len(hands) and len(hands[self.current].cards) == 1:
            self.needs_card = True


def dealer_must_draw(cards: Sequence[Card]) -> bool:
    """S17: the dealer draws on 16 or less (soft 16 too) and stands on every 17."""
    return hand_total(cards)[0] < DEALER_STANDS_ON


def hand_net(hand: Hand, dealer_total: int, dealer_blackjack: bool) -> tuple[float, str]:
    """Net result per unit staked on the box for one finished hand, and its outcome word."""
    state = hand.state
    if state == TOOK_EVEN_MONEY:
        return 1.0, "even_money"
    if state == SURRENDERED:
        return -SURRENDER_LOSES, "surrender"
    if state == BLACKJACK:
        if dealer_blackjack:
            return 0.0, "push"
        return BLACKJACK_PAYS, "blackjack"
    bet = float(hand.bet)
    if dealer_blackjack or state == BUSTED:
        return -bet, "lose"
    if dealer_total > 21:
        return bet, "win"
    total = hand.total
    if total > dealer_total:
        return bet, "win"
    if total == dealer_total:
        return 0.0, "push"
    return -bet, "lose"


def insurance_net(taken: bool | None, dealer_blackjack: bool) -> float:
    """Insurance costs half the box bet and pays 2:1 on a dealer BJ; ``None``: not offered."""
    if not taken:
        return 0.0
    return INSURANCE_STAKE * INSURANCE_PAYS if dealer_blackjack else -INSURANCE_STAKE


# A player's decision source: (hand, dealer up card, legal options, auto-play default) -> token.
PlayerDecider = Callable[[Hand, Card, frozenset[str], str], str]


class TokenDecisions:
    """Decisions from a list of tokens in order; once they run out, the timeout auto-play.

    A :data:`PlayerDecider` (for :class:`~controller.games.boundless.PlayerResolver`); the
    boxed replay, which knows the box and hand being asked, calls :meth:`take` directly so
    its errors can name them. Unknown tokens are refused when constructed, before any card
    is played.
    """

    __slots__ = ("label", "tokens", "used")

    def __init__(self, tokens: Iterable[str], label: str = "player") -> None:
        given = list(tokens)
        for token in given:
            if token.upper() not in PLAY_TOKENS:
                # Named as given: a lower-case typo is easier to find in the caller's input.
                raise RulesError(f"{label}: unknown token {token!r}: expected H, S, D, P or R")
        self.tokens = [token.upper() for token in given]
        self.used = 0
        self.label = label

    def __call__(self, hand: Hand, up: Card, options: frozenset[str], default: str) -> str:
        return self.take(options, default, self.label, hand.cards)

    def take(
        self, options: frozenset[str], default: str, where: str, cards: Sequence[Card] = ()
    ) -> str:
        """The next token if it is legal among ``options``; ``default`` once they ran out.

        ``where`` (and the hand's ``cards``, when given) name the decision in the error.
        """
        if self.used >= len(self.tokens):
            return default
        token = self.tokens[self.used]
        if token not in options:
            on = f" on {' '.join(str(card) for card in cards)}" if cards else ""
            raise RulesError(
                f"{where}: token {token!r} is not legal now{on} "
                f"(legal: {' '.join(sorted(options))})"
            )
        self.used += 1
        return token
