"""``LiveRound.cards_held``: how many cards the hand a position names holds, from the rules.

The table numbers a card's slot in its hand with it (the camera's region), so it must follow
the rules' own naming: a split moves the box's second card to a new hand, and a resplit in
blackjack 21 renumbers the hands after it.
"""

from __future__ import annotations

import random

import pytest

from controller.games.baccarat import BaccaratRound
from controller.games.base import CardNeeded, DecisionNeeded, LiveRound
from controller.games.blackjack import BlackjackRound
from controller.games.registry import GAMES, game_spec
from controller.kernel.cards import RANKS, SUITS, Card, parse_card
from controller.kernel.errors import RulesError


def deal(round_: LiveRound, *texts: str) -> None:
    for text in texts:
        assert isinstance(round_.next_step(), CardNeeded)
        round_.deal(parse_card(text))


def test_baccarat_counts_the_player_and_the_banker_third_cards_included() -> None:
    round_ = BaccaratRound()
    assert (round_.cards_held("player"), round_.cards_held("banker")) == (0, 0)
    deal(round_, "2S", "3H", "4D")  # player 2, banker 3, player 4
    assert (round_.cards_held("player"), round_.cards_held("banker")) == (2, 1)
    deal(round_, "AC", "2C")  # banker 3+1 = 4, player 6 stands; banker 4 draws
    assert (round_.cards_held("player"), round_.cards_held("banker")) == (2, 3)
    for other in ("dealer", "box1", "Player", ""):
        with pytest.raises(RulesError):
            round_.cards_held(other)


def test_blackjack_counts_the_hidden_hole_card_in_the_dealer_hand() -> None:
    round_ = BlackjackRound("blackjack-classic", boxes=2)
    deal(round_, "9S", "8H", "5D")  # box1, box2, the hole card (face down)
    assert round_.public_view()["dealer"]["cards"] == [None]
    assert round_.cards_held("dealer") == 1
    assert (round_.cards_held("box1"), round_.cards_held("box2")) == (1, 1)
    assert round_.cards_held("box1.hand1") == 1
    for other in ("box3", "box0", "box1.hand2", "player", "banker", "box01", "box1.hand"):
        with pytest.raises(RulesError):
            round_.cards_held(other)


def test_a_split_gives_the_box_second_card_to_the_new_hand() -> None:
    round_ = BlackjackRound("blackjack-classic", boxes=1)
    deal(round_, "8S", "TC", "8H", "6D")  # box1 8, hole, box1 8, up 6
    round_.decide(1, 1, "P")
    assert round_.next_step() == CardNeeded("box1.hand1")
    assert [round_.cards_held(f"box1.hand{n}") for n in (1, 2)] == [1, 1]
    deal(round_, "3C")
    assert [round_.cards_held(f"box1.hand{n}") for n in (1, 2)] == [2, 1]
    assert round_.cards_held("box1") == 2  # the box's first hand
    with pytest.raises(RulesError):
        round_.cards_held("box1.hand3")


def test_a_resplit_in_21_renumbers_the_hands_after_it() -> None:
    round_ = BlackjackRound("blackjack-21", boxes=1)
    deal(round_, "8S", "6D", "8H", "TC")  # 21 deals box, up, box, hole
    round_.decide(1, 1, "P")
    deal(round_, "8C")  # hand 1 (8S) draws a third 8
    round_.decide(1, 1, "P")  # resplit: the new hand 2 is 8C, hand 2 (8H) becomes hand 3
    assert [round_.cards_held(f"box1.hand{n}") for n in (1, 2, 3)] == [1, 1, 1]
    deal(round_, "2S")
    assert [round_.cards_held(f"box1.hand{n}") for n in (1, 2, 3)] == [2, 1, 1]
    assert [len(hand.cards) for hand in round_.box_hands(1)] == [2, 1, 1]
    assert [hand.cards[0] for hand in round_.box_hands(1)] == [
        parse_card("8S"),
        parse_card("8C"),
        parse_card("8H"),
    ]


def test_boundless_counts_the_common_sequence_and_has_no_boxes() -> None:
    round_ = BlackjackRound("blackjack-boundless", boxes=1)
    deal(round_, "9S", "6D", "4C", "TC")
    assert round_.cards_held("player") == 2
    assert round_.cards_held("dealer") == 2
    for other in ("box1", "box1.hand1", "banker"):
        with pytest.raises(RulesError):
            round_.cards_held(other)


def _view_count(view: object, position: str) -> int:
    """The count the round's public view shows for ``position`` (an independent reading)."""
    assert isinstance(view, dict)
    if position.startswith("box"):
        box, _, hand = position.partition(".hand")
        entry = next(e for e in view["boxes"] if e["box"] == int(box[3:]))
        return len(entry["hands"][int(hand or 1) - 1]["cards"])
    entry = view[position]
    return len(entry["cards"] if isinstance(entry, dict) else entry)


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_card_goes_to_the_hand_its_position_names(game: str) -> None:
    """Over many random rounds of every game: before each card, the hand the rules name
    holds ``cards_held`` cards, and one more once the card is dealt; the public view agrees."""
    spec = game_spec(game)
    rng = random.Random(f"cards_held {game}")
    deck = [Card(rank, suit) for rank in RANKS for suit in SUITS] * 8
    for _ in range(300):
        variant = rng.choice(spec.variants) if spec.variants else None
        round_ = spec.new_round(rng.randint(1, 80), rng.randint(1, spec.max_boxes), variant)
        while (step := round_.next_step()) is not None:
            if isinstance(step, DecisionNeeded):
                round_.decide(step.box, step.hand, rng.choice(sorted(step.options)))
                continue
            before = round_.cards_held(step.position)
            assert before == _view_count(round_.public_view(), step.position)
            round_.deal(rng.choice(deck))
            assert round_.cards_held(step.position) == before + 1
            assert round_.cards_held(step.position) == _view_count(
                round_.public_view(), step.position
            )
