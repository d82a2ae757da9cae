"""The three blackjack games as one engine, driven card by card and decision by decision.

RULES.md sections "Blackjack: shared rules" and its table of differences are the
specification; :class:`BlackjackRules` holds those differences as parameters and
:data:`PRESETS` has the three games, ``blackjack-boundless``, ``blackjack-classic`` and
``blackjack-21``. :class:`BlackjackRound` implements the :class:`~controller.games.base.LiveRound`
contract: the live table, `livetable rules replay` (:func:`replay`), `livetable rtp` and the
benchmarks all run this very class.

Boundless is played as one common card sequence: the round deals the shared initial hand and
then asks ``more_cards`` (one more common player card, yes or no) until the platform says no;
each player's own hands and results come from :func:`controller.games.boundless.resolve_player`
(or :class:`controller.games.boundless.PlayerResolver`), which plays that player's decisions
over the same sequence with the same :class:`BoxPlay` as the boxed games.

Settlement is a net result per unit staked on the box (1:1 win ``1.0``, push ``0.0``, loss
``-1.0``, BJ ``1.5``, a lost double ``-2.0``, a declined insurance is no bet at all).

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.errors import RulesError
from controller.games.base import CardNeeded, DecisionNeeded, Step
from controller.games.cards import Card, ShoeCount, parse_card

BOUNDLESS: Final = "blackjack-boundless"
CLASSIC: Final = "blackjack-classic"
TWENTY_ONE: Final = "blackjack-21"

HIT: Final = "H"
STAND: Final = "S"
DOUBLE: Final = "D"
SPLIT: Final = "P"
SURRENDER: Final = "R"
YES: Final = "Y"
NO: Final = "N"
PLAY_TOKENS: Final = frozenset((HIT, STAND, DOUBLE, SPLIT, SURRENDER))
YES_NO: Final = frozenset((YES, NO))

PLAY: Final = "play"
INSURANCE: Final = "insurance"
EVEN_MONEY: Final = "even_money"
MORE_CARDS: Final = "more_cards"

# Hand states. A hand is finished in every state but PLAYING.
PLAYING: Final = "playing"
STOOD: Final = "stood"
BUSTED: Final = "busted"
BLACKJACK: Final = "blackjack"
SURRENDERED: Final = "surrendered"
TOOK_EVEN_MONEY: Final = "even_money"

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
AUTO_PLAY_HITS_UP_TO: Final = 11  # seed 000: auto-play hits 11 or less, stands above 11.
INSURANCE_STAKE: Final = 0.5  # half the box bet
INSURANCE_PAYS: Final = 2.0  # 2:1
BLACKJACK_PAYS: Final = 1.5  # 3:2
SURRENDER_LOSES: Final = 0.5  # late surrender: half the bet back


@dataclass(frozen=True, slots=True)
class BlackjackRules:
    """Where the three games differ (RULES.md's table), one field per row.

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

    Seed page 000: the hand hits on 11 or less and stands above (Aces as for auto-play).
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


# What a box needs during the play phase (kind, hand index, options, default).
NEEDS_CARD: Final = 1
NEEDS_DECISION: Final = 2

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


# Phases of a round.
_DEAL, _OFFERS, _PLAY, _MORE, _MORE_CARD, _DEALER, _DONE = range(7)

_DEALER_UP: Final = -1
_DEALER_HOLE: Final = -2
_DEALER_DRAW: Final = CardNeeded("dealer")
_HOLE: Final = CardNeeded("dealer", face_down=True)
_SHARED_PLAYER: Final = CardNeeded("player")

_DEAL_PLANS: dict[tuple[int, int], tuple[BlackjackRules, list[tuple[CardNeeded, int]]]] = {}
_decision_cache: dict[tuple[str, int, int, frozenset[str], str], DecisionNeeded] = {}
_card_needed_cache: dict[str, CardNeeded] = {}


_MORE_CARDS_DEFAULT_YES: Final = DecisionNeeded(MORE_CARDS, 1, 1, YES_NO, YES)
_MORE_CARDS_DEFAULT_NO: Final = DecisionNeeded(MORE_CARDS, 1, 1, YES_NO, NO)


def _decision(kind: str, box: int, hand: int, options: frozenset[str], default: str) -> Step:
    key = (kind, box, hand, options, default)
    step = _decision_cache.get(key)
    if step is None:
        step = _decision_cache[key] = DecisionNeeded(kind, box, hand, options, default)
    return step


def _card_needed(position: str) -> CardNeeded:
    step = _card_needed_cache.get(position)
    if step is None:
        step = _card_needed_cache[position] = CardNeeded(position)
    return step


_BOX_POSITIONS: Final = {box: _card_needed(f"box{box}") for box in range(1, 8)}


class BlackjackRound:
    """One blackjack round of any of the three games, driven step by step.

    Boxed games (classic, 21): ``boxes`` boxes/seats each with a 1-unit bet. Positions are
    ``"box2"`` (or ``"box2.hand1"`` once that box has split) and ``"dealer"``; the hole card
    is the one :class:`CardNeeded` with ``face_down``. Decisions: ``insurance`` and
    ``even_money`` (tokens ``Y``/``N``) per box when the up card is an Ace, then ``play``
    (tokens among ``H S D P R``) per box and hand.

    Boundless (``boxes`` must be 1): positions ``"player"`` and ``"dealer"``; one
    ``insurance`` window (box 1, its token only closes the window: each player's choice is
    theirs, see :func:`controller.games.boundless.resolve_player`), then ``more_cards``
    (``Y``: deal one more common player card) until ``N``. Its default is the timeout
    auto-play rule applied to the common sequence as one unsplit hand (**Decision**: the one
    hand the table can compute without the players' choices).
    """

    __slots__ = (
        "_box_index",
        "_deal_index",
        "_deal_plan",
        "_offer_index",
        "_offers",
        "_pending",
        "_phase",
        "box_count",
        "common",
        "common_hand",
        "dealer",
        "dealer_blackjack",
        "dealer_hand",
        "game",
        "hole_card",
        "hole_revealed",
        "initial_hands",
        "insurance",
        "plays",
        "rules",
        "up_card",
    )

    def __init__(self, game: str | BlackjackRules = CLASSIC, boxes: int = 1) -> None:
        rules = PRESETS.get(game) if game.__class__ is str else None  # type: ignore[call-overload]
        if rules is None:
            rules = rules_for(game)
        if boxes.__class__ is not int or boxes < 1:
            raise RulesError(f"a round needs at least one box, not {boxes!r}")
        if boxes > rules.max_boxes:
            raise RulesError(f"{rules.game} has at most {rules.max_boxes} boxes, not {boxes}")
        self.rules = rules
        self.game = rules.game
        self.box_count = boxes
        self.dealer_hand = Hand()
        self.dealer: list[Card] = self.dealer_hand.cards  # in the order dealt
        self.up_card: Card | None = None
        self.hole_card: Card | None = None
        self.hole_revealed = False
        self.dealer_blackjack = False
        self.common_hand = Hand()  # Boundless: the shared player cards, in order
        self.common: list[Card] = self.common_hand.cards
        if rules.shared_hand:
            # The shared initial hand is the start of the common sequence; it only takes
            # more cards when it is not a BJ, and then nothing reads it as a hand again.
            self.initial_hands = [self.common_hand]
        else:
            self.initial_hands = [Hand() for _ in range(boxes)]
        self.insurance: list[bool | None] = [None] * boxes
        self.plays: list[BoxPlay] = []
        self._phase = _DEAL
        # Keyed by identity (hashing the frozen rules costs more than a round's deal); the
        # entry keeps its rules object alive, so the id cannot be reused by another one.
        cached = _DEAL_PLANS.get((id(rules), boxes))
        if cached is None or cached[0] is not rules:
            cached = _DEAL_PLANS[(id(rules), boxes)] = (rules, self._build_deal_plan())
        self._deal_plan = cached[1]
        self._deal_index = 0
        self._offers: Sequence[tuple[str, int]] = ()
        self._offer_index = 0
        self._box_index = 0
        self._pending: Step = self._deal_plan[0][0]

    def _build_deal_plan(self) -> list[tuple[CardNeeded, int]]:
        if self.rules.shared_hand:
            boxes = [(_SHARED_PLAYER, 0)]
        else:
            boxes = [(_card_needed(f"box{index + 1}"), index) for index in range(self.box_count)]
        if self.rules.hole_card_second:
            middle, last = (_HOLE, _DEALER_HOLE), (_DEALER_DRAW, _DEALER_UP)
        else:
            middle, last = (_DEALER_DRAW, _DEALER_UP), (_HOLE, _DEALER_HOLE)
        return [*boxes, middle, *boxes, last]

    # -- the LiveRound contract ---------------------------------------------------------

    def next_step(self) -> Step:
        """What the round needs now; ``None`` once the round is complete."""
        return self._pending

    @property
    def complete(self) -> bool:
        return self._phase == _DONE

    def deal(self, card: Card) -> None:
        """Put ``card`` where :meth:`next_step` said; :class:`RulesError` if none is expected."""
        pending = self._pending
        if pending is None or pending.__class__ is not CardNeeded:
            raise RulesError(f"no card expected now: the round needs {_describe(pending)}")
        if card.__class__ is not Card:
            raise RulesError(f"a card must be a Card, not {card!r}")
        phase = self._phase
        if phase == _DEAL:
            target = self._deal_plan[self._deal_index][1]
            if target == _DEALER_UP:
                self.up_card = card
                self.dealer_hand.add(card)
            elif target == _DEALER_HOLE:
                self.hole_card = card
                self.dealer_hand.add(card)
            else:
                self.initial_hands[target].add(card)
            self._deal_index += 1
            if self._deal_index < len(self._deal_plan):
                self._pending = self._deal_plan[self._deal_index][0]
            else:
                self._after_initial_deal()
        elif phase == _PLAY:
            self.plays[self._box_index].add_card(card)
            self._continue_play()
        elif phase == _MORE_CARD:
            self.common_hand.add(card)
            self._ask_more_cards()
        else:  # _DEALER
            self.dealer_hand.add(card)
            self._continue_dealer()

    def decide(self, box: int, hand: int, token: str) -> None:
        """Take the decision :meth:`next_step` asked for; :class:`RulesError` if not legal."""
        pending = self._pending
        if pending is None or pending.__class__ is not DecisionNeeded:
            raise RulesError(f"no decision expected now: the round needs {_describe(pending)}")
        if box != pending.box or hand != pending.hand:
            raise RulesError(
                f"the decision asked is for box {pending.box} hand {pending.hand}, "
                f"not box {box} hand {hand}"
            )
        if token.__class__ is not str or token not in pending.options:
            normalised = token.upper() if isinstance(token, str) else None
            if normalised not in pending.options:
                raise RulesError(
                    f"{token!r} is not a legal {pending.kind} decision for box {box} hand "
                    f"{hand} now: legal are {' '.join(sorted(pending.options))}"
                )
            token = normalised  # type: ignore[assignment]
        phase = self._phase
        if phase == _PLAY:
            self.plays[self._box_index].decide(token)
            self._continue_play()
        elif phase == _OFFERS:
            self._take_offer(pending.kind, box, token == YES)
        else:  # _MORE
            if token == YES:
                self._phase = _MORE_CARD
                self._pending = _SHARED_PLAYER
            else:
                self._start_dealer()

    # -- phases ---------------------------------------------------------------------------

    def _after_initial_deal(self) -> None:
        rules = self.rules
        for hand in self.initial_hands:
            if hand.is_blackjack:
                hand.state = BLACKJACK
        dealer = self.dealer
        self.dealer_blackjack = is_blackjack(dealer)
        if RANK_VALUE[self.up_card.rank] == 1:  # type: ignore[union-attr]
            if rules.shared_hand:
                self._offers = [(INSURANCE, 1)]
            else:
                offers = []
                for index, hand in enumerate(self.initial_hands):
                    if hand.state == BLACKJACK and rules.even_money:
                        offers.append((EVEN_MONEY, index + 1))
                    elif hand.state != BLACKJACK or rules.insurance_with_blackjack:
                        offers.append((INSURANCE, index + 1))
                self._offers = offers
        if self._offers:
            self._phase = _OFFERS
            self._offer_index = 0
            kind, box = self._offers[0]
            self._pending = _decision(kind, box, 1, YES_NO, NO)
        else:
            self._after_offers()

    def _take_offer(self, kind: str, box: int, accepted: bool) -> None:
        if kind == EVEN_MONEY:
            if accepted:
                self.initial_hands[box - 1].state = TOOK_EVEN_MONEY
        else:
            self.insurance[box - 1] = accepted
        self._offer_index += 1
        if self._offer_index < len(self._offers):
            kind, box = self._offers[self._offer_index]
            self._pending = _decision(kind, box, 1, YES_NO, NO)
        else:
            self._after_offers()

    def _after_offers(self) -> None:
        if self.dealer_blackjack:
            # Boundless ends at once; classic and 21 peek (up card A or ten) and end too.
            self.hole_revealed = True
            self._finish()
            return
        if self.rules.shared_hand:
            if self.initial_hands[0].state == BLACKJACK:
                self._start_dealer()  # a BJ takes no decision from anyone
            else:
                self._phase = _MORE
                self._ask_more_cards()
            return
        up = self.up_card
        self.plays = [BoxPlay(self.rules, hand, up) for hand in self.initial_hands]  # type: ignore[arg-type]
        self._phase = _PLAY
        self._box_index = 0
        self._continue_play()

    def _continue_play(self) -> None:
        plays = self.plays
        index = self._box_index
        while index < len(plays):
            play = plays[index]
            if play.current < len(play.hands):
                box = index + 1
                if play.needs_card:
                    if len(play.hands) == 1:
                        self._pending = _BOX_POSITIONS.get(box) or _card_needed(f"box{box}")
                    else:
                        self._pending = _card_needed(f"box{box}.hand{play.current + 1}")
                else:
                    self._pending = _decision(
                        PLAY, box, play.current + 1, play.options(), play.default()
                    )
                self._box_index = index
                return
            index += 1
        self._box_index = index
        self._start_dealer()

    def _ask_more_cards(self) -> None:
        self._phase = _MORE
        if self.common_hand.total <= AUTO_PLAY_HITS_UP_TO:
            self._pending = _MORE_CARDS_DEFAULT_YES
        else:
            self._pending = _MORE_CARDS_DEFAULT_NO

    def _start_dealer(self) -> None:
        self.hole_revealed = True
        self._phase = _DEALER
        if not self.rules.dealer_always_plays and not any(
            hand.state == STOOD for play in self.plays for hand in play.hands
        ):
            self._finish()  # every hand busted, BJ or paid even money: only the reveal
            return
        self._continue_dealer()

    def _continue_dealer(self) -> None:
        if self.dealer_hand.total < DEALER_STANDS_ON:
            self._pending = _DEALER_DRAW
        else:
            self._finish()

    def _finish(self) -> None:
        self._phase = _DONE
        self._pending = None

    # -- views ----------------------------------------------------------------------------

    def box_hands(self, box: int) -> list[Hand]:
        """The hands of a box (1-based) as they stand now."""
        if self.plays:
            return self.plays[box - 1].hands
        return [self.initial_hands[box - 1]]

    def dealer_view(self) -> dict[str, Any]:
        """The dealer's hand as the public may see it: the hole card is null until revealed."""
        hole_index = 0 if self.rules.hole_card_second else 1
        cards: list[str | None] = []
        visible: list[Card] = []
        for index, card in enumerate(self.dealer):
            if index == hole_index and not self.hole_revealed:
                cards.append(None)
            else:
                cards.append(str(card))
                visible.append(card)
        total, soft = hand_total(visible)
        return {"cards": cards, "total": total, "soft": soft}

    def public_view(self) -> Mapping[str, Any]:
        """JSON-ready state of the round; the hole card stays hidden until it is revealed."""
        view: dict[str, Any] = {
            "game": self.game,
            "complete": self.complete,
            "dealer": self.dealer_view(),
        }
        if self.rules.shared_hand:
            total, soft = hand_total(self.common)
            view["player"] = {"cards": [str(card) for card in self.common]}
            view["player"]["initial_total"] = hand_total(self.common[:2])[0]
            view["player"]["sequence_total"] = total
            view["player"]["soft"] = soft
        else:
            view["boxes"] = [
                {
                    "box": box,
                    "insurance": self.insurance[box - 1],
                    "hands": [hand.view() for hand in self.box_hands(box)],
                }
                for box in range(1, self.box_count + 1)
            ]
        step = self._pending
        if step is not None:
            if step.__class__ is CardNeeded:
                view["next"] = {"card": step.position, "face_down": step.face_down}
            else:
                view["next"] = {
                    "decision": step.kind,
                    "box": step.box,
                    "hand": step.hand,
                    "options": sorted(step.options),
                }
        return view

    def dealer_total(self) -> int:
        return self.dealer_hand.total

    def box_net(self, box: int) -> float:
        """Net of one box (1-based) per unit bet: its hands plus insurance; complete only."""
        if not self.complete:
            raise RulesError("the round is not complete yet")
        dealer_total = self.dealer_total()
        net = insurance_net(self.insurance[box - 1], self.dealer_blackjack)
        for hand in self.box_hands(box):
            net += hand_net(hand, dealer_total, self.dealer_blackjack)[0]
        return net

    def settlement(self) -> Mapping[str, Any]:
        """JSON-ready result of every bet (net per unit staked); only once complete.

        Boundless: the dealer, the common sequence and the four side bets (each player's
        main bet is settled by :func:`controller.games.boundless.resolve_player`).
        """
        if not self.complete:
            raise RulesError("the round is not complete yet: no settlement")
        dealer_total = self.dealer_total()
        result: dict[str, Any] = {
            "game": self.game,
            "dealer": {
                "cards": [str(card) for card in self.dealer],
                "total": dealer_total,
                "blackjack": self.dealer_blackjack,
                "busted": dealer_total > 21,
            },
        }
        if self.rules.shared_hand:
            from controller.games.boundless import side_bet_results

            result["player_cards"] = [str(card) for card in self.common]
            result["side_bets"] = side_bet_results(self.common[:2], self.dealer)
            return result
        boxes = []
        for box in range(1, self.box_count + 1):
            hands = []
            for hand in self.box_hands(box):
                net, outcome = hand_net(hand, dealer_total, self.dealer_blackjack)
                hands.append({**hand.view(), "net": net, "result": outcome})
            insurance = self.insurance[box - 1]
            boxes.append(
                {
                    "box": box,
                    "net": self.box_net(box),
                    "insurance": insurance,
                    "insurance_net": insurance_net(insurance, self.dealer_blackjack),
                    "hands": hands,
                }
            )
        result["boxes"] = boxes
        return result


def _describe(step: Step) -> str:
    if step is None:
        return "nothing (it is complete)"
    if isinstance(step, CardNeeded):
        return f"a card for {step.position}"
    return f"a {step.kind} decision for box {step.box} hand {step.hand}"


# -- `livetable rules replay` ------------------------------------------------------------

Decider = Callable[[DecisionNeeded], str]


def replay(request: Mapping[str, Any]) -> dict[str, Any]:
    """Play one `livetable rules replay` line through the live engine.

    ``{"game", "cards", "boxes", "insurance", "decisions"}`` in, ``{"boxes": [{"net",
    "hands"}], "dealer", "cards_used"}`` out (plus ``"side_bets"`` for Boundless). Cards are
    dealt in the live order; each box's tokens are consumed in the order its decisions are
    asked; when they run out the timeout auto-play rule decides (insurance and even money
    are answered from ``insurance[box]``). Cards and tokens beyond need are ignored.
    Raises :class:`RulesError` on anything it cannot play.
    """
    if not isinstance(request, Mapping):
        raise RulesError(f"a replay request must be a JSON object, not {type(request).__name__}")
    game = request.get("game")
    if not isinstance(game, str):
        raise RulesError("'game' must be a string naming a blackjack game")
    rules = rules_for(game)
    cards = _parse_card_list(request.get("cards"))
    boxes = request.get("boxes", 1)
    if not isinstance(boxes, int) or isinstance(boxes, bool) or boxes < 1:
        raise RulesError(f"'boxes' must be a positive integer, not {boxes!r}")
    if not rules.shared_hand and boxes > rules.max_boxes:
        raise RulesError(f"{game} has at most {rules.max_boxes} boxes, not {boxes}")
    insurance = request.get("insurance", [False] * boxes)
    if (
        not isinstance(insurance, list)
        or len(insurance) != boxes
        or not all(isinstance(flag, bool) for flag in insurance)
    ):
        raise RulesError(f"'insurance' must be a list of {boxes} booleans, not {insurance!r}")
    decisions = request.get("decisions", [[] for _ in range(boxes)])
    if not isinstance(decisions, list) or len(decisions) != boxes:
        raise RulesError(f"'decisions' must be a list of {boxes} token lists")
    token_lists: list[list[str]] = []
    for box, tokens in enumerate(decisions, start=1):
        if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
            raise RulesError(f"'decisions' for box {box} must be a list of token strings")
        for token in tokens:
            if token.upper() not in PLAY_TOKENS:
                raise RulesError(f"box {box}: unknown token {token!r}: expected H, S, D, P or R")
        token_lists.append([token.upper() for token in tokens])
    if rules.shared_hand:
        from controller.games.boundless import replay_boundless

        return replay_boundless(rules, cards, insurance, token_lists)
    return _replay_boxed(rules, cards, insurance, token_lists)


def _parse_card_list(raw: object) -> list[Card]:
    if not isinstance(raw, list):
        raise RulesError("'cards' must be a list of card strings like \"AS\"")
    cards = [parse_card(text) for text in raw]
    count = ShoeCount()
    for card in cards:
        count.record(card)  # a ninth copy of a face cannot come out of an 8-deck shoe
    return cards


class CardFeed:
    """Cards of a replay line in shoe order; :class:`RulesError` when they run out."""

    __slots__ = ("cards", "used")

    def __init__(self, cards: Sequence[Card]) -> None:
        self.cards = cards
        self.used = 0

    def next(self, position: str) -> Card:
        if self.used >= len(self.cards):
            raise RulesError(
                f"too few cards: the round needs a card #{self.used + 1} for {position} "
                f"but the line has {len(self.cards)}"
            )
        card = self.cards[self.used]
        self.used += 1
        return card


def token_decider(tokens: Sequence[str]) -> Callable[[frozenset[str], str, str], str]:
    """Answer play decisions from ``tokens`` in order, then by the timeout auto-play rule."""
    iterator = iter(tokens)

    def decide(options: frozenset[str], default: str, where: str) -> str:
        token = next(iterator, None)
        if token is None:
            return default
        if token not in options:
            raise RulesError(
                f"{where}: token {token!r} is not legal now (legal: {' '.join(sorted(options))})"
            )
        return token

    return decide


def _replay_boxed(
    rules: BlackjackRules,
    cards: Sequence[Card],
    insurance: Sequence[bool],
    token_lists: Sequence[Sequence[str]],
) -> dict[str, Any]:
    round_ = BlackjackRound(rules, len(token_lists))
    feed = CardFeed(cards)
    deciders = [token_decider(tokens) for tokens in token_lists]
    while True:
        step = round_.next_step()
        if step is None:
            break
        if isinstance(step, CardNeeded):
            round_.deal(feed.next(step.position))
        elif step.kind == PLAY:
            where = f"box {step.box} hand {step.hand}"
            token = deciders[step.box - 1](step.options, step.default, where)
            round_.decide(step.box, step.hand, token)
        else:
            round_.decide(step.box, step.hand, YES if insurance[step.box - 1] else NO)
    return {
        "boxes": [
            {
                "net": round_.box_net(box),
                "hands": [[str(card) for card in hand.cards] for hand in round_.box_hands(box)],
            }
            for box in range(1, round_.box_count + 1)
        ],
        "dealer": [str(card) for card in round_.dealer],
        "cards_used": feed.used,
    }
