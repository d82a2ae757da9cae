"""`livetable rules replay` for the blackjack games: one JSON line played through the live round.

The top of the blackjack chain (hand, side bets, round, Boundless, replay): :func:`replay`
checks a request, then one loop drives :class:`~controller.games.blackjack.BlackjackRound` for
every game. The boxed games (classic, 21) answer each box's ``play`` decisions from that box's
tokens; Boundless seats one :class:`~controller.games.boundless.PlayerResolver` per ``box`` on
the common sequence and answers ``more_cards`` with whether any of them wants another card.
Both take their tokens from :class:`~controller.games.blackjack_hand.TokenDecisions`.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from controller.games.base import CardNeeded
from controller.games.blackjack import BlackjackRound
from controller.games.blackjack_hand import (
    MORE_CARDS,
    NO,
    PLAY,
    YES,
    BlackjackRules,
    TokenDecisions,
    hand_net,
    hand_total,
    rules_for,
)
from controller.games.boundless import PlayerResolver, players_need_card
from controller.games.boundless_side_bets import side_bet_results
from controller.games.replay_request import check_keys
from controller.kernel.cards import Card, ShoeCount, parse_card
from controller.kernel.errors import RulesError

# The keys of a replay line, in the order the command's help gives them.
REPLAY_KEYS: Final = ("game", "cards", "boxes", "insurance", "decisions")


def replay(request: Mapping[str, Any]) -> dict[str, Any]:
    """Play one `livetable rules replay` line through the live engine.

    ``{"game", "cards", "boxes", "insurance", "decisions"}`` in, ``{"boxes": [{"net",
    "hands", "totals", "outcomes"}], "dealer", "dealer_total", "cards_used"}`` out (plus
    ``"side_bets"`` for Boundless): each hand's cards, total and outcome (``win``, ``lose``,
    ``push``, ``blackjack``, ``surrender``, ``even_money``), as baccarat's answer gives each
    hand's total and the winner. Cards are
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
    # Before anything is played: a misspelt key ("decision") would otherwise leave its
    # default in place, and the box be auto-played without a word.
    check_keys(request, REPLAY_KEYS, f"a {game} line")
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
    deciders: list[TokenDecisions] = []
    for box, tokens in enumerate(decisions, start=1):
        if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
            raise RulesError(f"'decisions' for box {box} must be a list of token strings")
        deciders.append(TokenDecisions(tokens, f"box {box}"))
    return _play(rules, cards, insurance, deciders)


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


def _play(
    rules: BlackjackRules,
    cards: Sequence[Card],
    insurance: Sequence[bool],
    deciders: Sequence[TokenDecisions],
) -> dict[str, Any]:
    """Drive one round to its end; one box per decider (Boundless: one seated player each)."""
    shared = rules.shared_hand
    round_ = BlackjackRound(rules, 1 if shared else len(deciders))
    feed = CardFeed(cards)
    players: list[PlayerResolver] | None = None

    def seat_players() -> list[PlayerResolver]:
        # Only once the shared initial hand and the up card are out: a player starts there.
        return [
            PlayerResolver(round_.common[:2], round_.up_card, decide, insurance[box], rules)  # type: ignore[arg-type]
            for box, decide in enumerate(deciders)
        ]

    while (step := round_.next_step()) is not None:
        if isinstance(step, CardNeeded):
            round_.deal(feed.next(step.position))
        elif step.kind == PLAY:
            where = f"box {step.box} hand {step.hand}"
            token = deciders[step.box - 1].take(step.options, step.default, where)
            round_.decide(step.box, step.hand, token)
        elif step.kind == MORE_CARDS:
            if players is None:
                players = seat_players()
            wanted = players_need_card(players, round_.common)
            round_.decide(step.box, step.hand, YES if wanted else NO)
        elif shared:
            # Boundless' one insurance window: its answer only closes the window, each
            # player's own choice is settled by that player's resolver.
            round_.decide(step.box, step.hand, YES if any(insurance) else NO)
        else:  # insurance or even money for one box
            round_.decide(step.box, step.hand, YES if insurance[step.box - 1] else NO)
    answer: dict[str, Any] = {}
    dealer_total, dealer_blackjack = round_.dealer_total(), round_.dealer_blackjack
    if shared:
        if players is None:
            players = seat_players()  # dealer BJ or a shared BJ: nobody was asked
        results = [player.result(round_.dealer) for player in players]
        answer["boxes"] = [
            {
                "net": result.net,
                "hands": [[str(card) for card in hand] for hand in result.hands],
                "totals": [hand_total(hand)[0] for hand in result.hands],
                "outcomes": list(result.outcomes),
            }
            for result in results
        ]
    else:
        answer["boxes"] = []
        for box in range(1, round_.box_count + 1):
            hands = round_.box_hands(box)
            answer["boxes"].append(
                {
                    "net": round_.box_net(box),
                    "hands": [[str(card) for card in hand.cards] for hand in hands],
                    "totals": [hand.total for hand in hands],
                    "outcomes": [
                        hand_net(hand, dealer_total, dealer_blackjack)[1] for hand in hands
                    ],
                }
            )
    answer["dealer"] = [str(card) for card in round_.dealer]
    answer["dealer_total"] = dealer_total
    answer["cards_used"] = feed.used
    if shared:
        answer["side_bets"] = side_bet_results(round_.common[:2], round_.dealer)
    return answer
