"""Property tests: the blackjack engine against a small independent reference model, and
invariants that must hold for any cards and any legal decisions."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.games.base import CardNeeded, DecisionNeeded
from controller.games.blackjack import BlackjackRound
from controller.games.blackjack_hand import PRESETS
from controller.games.blackjack_replay import replay
from controller.games.boundless import PlayerResolver, players_need_card, resolve_player
from controller.games.registry import BLACKJACK, games_in
from controller.kernel.cards import ALL_FACES, Card
from controller.kernel.errors import RulesError

CLASSIC = "blackjack-classic"
TWENTY_ONE = "blackjack-21"
BOUNDLESS = "blackjack-boundless"
GAMES = games_in(BLACKJACK)

PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def value(card: Card) -> int:
    return {"A": 1, "T": 10, "J": 10, "Q": 10, "K": 10}.get(card.rank) or int(card.rank)


def best(cards: Sequence[Card]) -> int:
    """Reference total, written independently of the engine: Aces 1, one of them 11 if it fits."""
    total = sum(value(card) for card in cards)
    if any(card.rank == "A" for card in cards) and total + 10 <= 21:
        total += 10
    return total


def natural(cards: Sequence[Card]) -> bool:
    return len(cards) == 2 and best(cards) == 21


shoes = st.lists(st.sampled_from(ALL_FACES), min_size=40, max_size=40).filter(
    lambda cards: max(Counter(cards).values()) <= 8
)


def reference_one_box(game: str, cards: list[Card], tokens: list[str]) -> dict[str, Any] | str:
    """One box, no split, insurance and even money declined: the expected replay output,
    or "illegal" when a token cannot be played."""
    feed = iter(cards)
    used = 0

    def take() -> Card:
        nonlocal used
        used += 1
        return next(feed)

    if game == CLASSIC:
        p1, hole, p2, up = take(), take(), take(), take()
    else:
        p1, up, p2, hole = take(), take(), take(), take()
    player = [p1, p2]
    dealer = [up, hole]
    dealer_order = [hole, up] if game == CLASSIC else [up, hole]
    dealer_bj = natural(dealer)
    player_bj = natural(player)
    if dealer_bj:
        net, outcome = (0.0, "push") if player_bj else (-1.0, "lose")
        return {
            "boxes": [
                {
                    "net": net,
                    "hands": [[str(c) for c in player]],
                    "totals": [best(player)],
                    "outcomes": [outcome],
                }
            ],
            "dealer": [str(c) for c in dealer_order],
            "dealer_total": 21,
            "cards_used": used,
        }
    bet = 1.0
    surrendered = False
    if not player_bj:
        queue = list(tokens)
        while best(player) < 21:
            token = queue.pop(0) if queue else ("H" if best(player) <= 11 else "S")
            if token == "S":
                break
            if token == "R":
                up_value = value(up)
                if game != BOUNDLESS or len(player) != 2 or up_value in (1, 10):
                    return "illegal"
                surrendered = True
                break
            if token == "D":
                if len(player) != 2:
                    return "illegal"
                bet = 2.0
                player.append(take())
                break
            player.append(take())
    busted = best(player) > 21
    if game == BOUNDLESS or not (busted or player_bj):
        while best(dealer_order) < 17:
            dealer_order.append(take())
    dealer_total = best(dealer_order)
    if surrendered:
        net, outcome = -0.5, "surrender"
    elif player_bj:
        net, outcome = 1.5, "blackjack"
    elif busted:
        net, outcome = -bet, "lose"
    elif dealer_total > 21 or best(player) > dealer_total:
        net, outcome = bet, "win"
    elif best(player) == dealer_total:
        net, outcome = 0.0, "push"
    else:
        net, outcome = -bet, "lose"
    return {
        "boxes": [
            {
                "net": net,
                "hands": [[str(c) for c in player]],
                "totals": [best(player)],
                "outcomes": [outcome],
            }
        ],
        "dealer": [str(c) for c in dealer_order],
        "dealer_total": dealer_total,
        "cards_used": used,
    }


@PROPERTY_SETTINGS
@given(
    game=st.sampled_from(GAMES),
    cards=shoes,
    tokens=st.lists(st.sampled_from("HSDR"), max_size=6),
)
def test_one_box_without_splits_matches_the_reference_model(
    game: str, cards: list[Card], tokens: list[str]
) -> None:
    expected = reference_one_box(game, cards, tokens)
    request = {
        "game": game,
        "cards": [str(c) for c in cards],
        "boxes": 1,
        "insurance": [False],
        "decisions": [tokens],
    }
    if expected == "illegal":
        with pytest.raises(RulesError, match="not legal"):
            replay(request)
        return
    result = replay(request)
    if game == BOUNDLESS:
        result.pop("side_bets")
    assert result == expected


def drive_randomly(round_: BlackjackRound, cards: list[Card], rng: random.Random) -> list[tuple]:
    """Drive a boxed round with random legal decisions; return (position, card) dealt."""
    dealt = []
    feed = iter(cards)
    while (step := round_.next_step()) is not None:
        if isinstance(step, CardNeeded):
            card = next(feed)
            dealt.append((step.position, card))
            round_.deal(card)
        else:
            assert isinstance(step, DecisionNeeded)
            assert step.default in step.options
            round_.decide(step.box, step.hand, rng.choice(sorted(step.options)))
    return dealt


@PROPERTY_SETTINGS
@given(
    game=st.sampled_from((CLASSIC, TWENTY_ONE)),
    boxes=st.integers(1, 5),
    cards=st.lists(st.sampled_from(ALL_FACES), min_size=60, max_size=60),
    seed=st.integers(0, 2**32),
)
def test_any_legal_play_keeps_the_invariants(
    game: str, boxes: int, cards: list[Card], seed: int
) -> None:
    rules = PRESETS[game]
    round_ = BlackjackRound(game, boxes)
    dealt = drive_randomly(round_, cards, random.Random(seed))
    assert round_.complete
    # Every card went to exactly the place it was asked for.
    placed: Counter[Card] = Counter(round_.dealer)
    for box in range(1, boxes + 1):
        hands = round_.box_hands(box)
        assert 1 <= len(hands) <= rules.max_hands
        for hand in hands:
            placed.update(hand.cards)
            assert len(hand.cards) >= 2 or hand.state == "blackjack"
            if hand.split_aces:
                assert len(hand.cards) == 2
            if hand.doubled:
                assert len(hand.cards) == 3
            if len(hands) > 1:
                assert hand.state != "blackjack"  # a split A+T is only 21
    assert placed == Counter(card for _, card in dealt)
    # The dealer stood on 17+ by S17 or did not play because nothing was left to beat.
    dealer_total = best(round_.dealer)
    for end in range(2, len(round_.dealer)):
        assert best(round_.dealer[:end]) < 17
    if len(round_.dealer) == 2 and dealer_total < 17:
        assert (
            all(
                hand.state in ("busted", "blackjack", "even_money")
                for box in range(1, boxes + 1)
                for hand in round_.box_hands(box)
            )
            or round_.dealer_blackjack
        )
    # Each hand's net follows from its cards, stake and the dealer's total.
    for box in range(1, boxes + 1):
        expected = 0.0
        for hand in round_.box_hands(box):
            total = best(hand.cards)
            if round_.dealer_blackjack:
                expected += 0.0 if hand.state == "blackjack" else -hand.bet
            elif hand.state == "blackjack":
                expected += 1.5
            elif total > 21:
                expected -= hand.bet
            elif dealer_total > 21 or total > dealer_total:
                expected += hand.bet
            elif total < dealer_total:
                expected -= hand.bet
        taken = round_.insurance[box - 1]
        if taken:
            expected += 1.0 if round_.dealer_blackjack else -0.5
        if round_.box_hands(box)[0].state == "even_money":
            expected = 1.0  # even money: paid 1:1 at once, no insurance on that box
        assert round_.box_net(box) == pytest.approx(expected)


class RandomPlayer:
    """A player who picks a random legal option, reproducibly from a seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, hand: object, up: object, options: frozenset[str], default: str) -> str:
        return self.rng.choice(sorted(options))


@PROPERTY_SETTINGS
@given(
    cards=st.lists(st.sampled_from(ALL_FACES), min_size=60, max_size=60),
    seeds=st.lists(st.integers(0, 2**32), min_size=1, max_size=6),
)
def test_boundless_players_resolve_alone_as_in_the_crowd(
    cards: list[Card], seeds: list[int]
) -> None:
    round_ = BlackjackRound(BOUNDLESS)
    feed = iter(cards)
    players: list[PlayerResolver] | None = None
    while (step := round_.next_step()) is not None:
        if isinstance(step, CardNeeded):
            round_.deal(next(feed))
        elif step.kind == "more_cards":
            if players is None:
                players = [
                    PlayerResolver(round_.common[:2], round_.up_card, RandomPlayer(seed))
                    for seed in seeds
                ]
            round_.decide(1, 1, "Y" if players_need_card(players, round_.common) else "N")
        else:
            round_.decide(1, 1, "N")
    common, dealer = round_.common, round_.dealer
    if players is None:
        return  # dealer BJ or shared BJ: nobody played
    used = [player.next_index for player in players]
    # The dealer dealt common cards exactly as long as someone wanted one.
    assert len(common) == max(used)
    for player, seed in zip(players, seeds, strict=True):
        alone = resolve_player(common, dealer, RandomPlayer(seed))
        assert alone == player.result(dealer)
        cards_in_hands = [card for hand in alone.hands for card in hand]
        assert Counter(cards_in_hands) == Counter(common[: alone.cards_used])
