"""The live blackjack round: the three games as one engine, card by card, decision by decision.

:class:`BlackjackRound` implements the :class:`~controller.games.base.LiveRound` contract for
the rules of :mod:`controller.games.blackjack_hand`: the live table, `livetable rules replay`
(:mod:`controller.games.blackjack_replay`), `livetable rtp` and the benchmarks all run this
very class.

Boundless is played as one common card sequence: the round deals the shared initial hand and
then asks ``more_cards`` (one more common player card, yes or no) until the platform says no;
each player's own hands and results come from :func:`controller.games.boundless.resolve_player`
(or :class:`controller.games.boundless.PlayerResolver`), which plays that player's decisions
over the same sequence with the same :class:`~controller.games.blackjack_hand.BoxPlay` as the
boxed games. The round settles the Boundless side bets itself
(:mod:`controller.games.boundless_side_bets`): they depend on the cards alone.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from controller.games.base import CardNeeded, DecisionNeeded, Step
from controller.games.blackjack_hand import (
    AUTO_PLAY_HITS_UP_TO,
    BLACKJACK,
    CLASSIC,
    DEALER_STANDS_ON,
    EVEN_MONEY,
    INSURANCE,
    MORE_CARDS,
    NO,
    PLAY,
    PRESETS,
    RANK_VALUE,
    STOOD,
    TOOK_EVEN_MONEY,
    YES,
    YES_NO,
    BlackjackRules,
    BoxPlay,
    Hand,
    hand_net,
    hand_total,
    insurance_net,
    is_blackjack,
    rules_for,
)
from controller.games.boundless_side_bets import side_bet_results
from controller.kernel.cards import Card
from controller.kernel.errors import RulesError

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

    def cards_held(self, position: str) -> int:
        """How many cards the hand at ``position`` holds now, the hole card included:
        ``"dealer"``, ``"player"`` (Boundless: the common sequence), ``"box2"`` (box 2's
        first hand, the whole box until it splits) or ``"box2.hand3"`` (the hands of a box
        in the order they are played: a resplit's new hand comes right after the one split,
        and the hands after it are renumbered). RulesError for a position this round has
        not."""
        if position == "dealer":
            return len(self.dealer)
        if self.rules.shared_hand:
            if position == "player":
                return len(self.common)
        else:
            for box in range(1, self.box_count + 1):
                name = f"box{box}"
                if position == name:
                    return len(self.box_hands(box)[0].cards)
                for number, hand in enumerate(self.box_hands(box), 1):
                    if position == f"{name}.hand{number}":
                        return len(hand.cards)
        raise RulesError(f"{self.game} with {self.box_count} box(es) has no hand {position!r}")

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
