"""The blackjack LiveRound contract: deal order, hidden hole card, decisions, errors."""

from __future__ import annotations

import json

import pytest

from controller.games.base import CardNeeded, DecisionNeeded
from controller.games.blackjack import BlackjackRound
from controller.kernel.cards import parse_card
from controller.kernel.errors import RulesError


def deal(round_: BlackjackRound, *texts: str) -> list[CardNeeded]:
    """Deal cards in order, returning the steps that asked for them."""
    asked = []
    for text in texts:
        step = round_.next_step()
        assert isinstance(step, CardNeeded), step
        asked.append(step)
        round_.deal(parse_card(text))
    return asked


def test_classic_deals_box_firsts_hole_box_seconds_then_up_card() -> None:
    round_ = BlackjackRound("blackjack-classic", boxes=2)
    asked = deal(round_, "9S", "8H", "5D", "9C", "8D", "6C")
    assert [(step.position, step.face_down) for step in asked] == [
        ("box1", False),
        ("box2", False),
        ("dealer", True),
        ("box1", False),
        ("box2", False),
        ("dealer", False),
    ]
    assert round_.up_card == parse_card("6C")
    assert round_.hole_card == parse_card("5D")


@pytest.mark.parametrize("game", ["blackjack-21", "blackjack-boundless"])
def test_21_and_boundless_deal_firsts_up_seconds_then_hole(game: str) -> None:
    boxes = 2 if game == "blackjack-21" else 1
    round_ = BlackjackRound(game, boxes=boxes)
    cards = ["9S", "8H", "5D", "9C", "8D", "6C"][: 2 * boxes + 2]
    asked = deal(round_, *cards)
    face_down = [step.face_down for step in asked]
    assert face_down == [False] * (2 * boxes + 1) + [True]
    assert asked[boxes].position == "dealer"
    assert asked[-1].position == "dealer"
    assert round_.up_card == parse_card(cards[boxes])


def test_hole_card_hidden_until_revealed() -> None:
    round_ = BlackjackRound("blackjack-classic", boxes=1)
    deal(round_, "9S", "QD", "9C", "6C")
    view = round_.public_view()
    assert view["dealer"]["cards"] == [None, "6C"]
    assert view["dealer"]["total"] == 6
    assert "QD" not in repr(view)
    round_.decide(1, 1, "S")
    view = round_.public_view()
    assert view["dealer"]["cards"][:2] == ["QD", "6C"]
    assert view["dealer"]["total"] >= 16


def test_illegal_decision_raises_and_changes_nothing() -> None:
    round_ = BlackjackRound("blackjack-classic", boxes=1)
    deal(round_, "9S", "QD", "8C", "6C")
    before = round_.next_step()
    assert isinstance(before, DecisionNeeded)
    assert before.options == frozenset("HSD")
    with pytest.raises(RulesError, match="not a legal"):
        round_.decide(1, 1, "P")
    with pytest.raises(RulesError, match="not a legal"):
        round_.decide(1, 1, ["S"])  # type: ignore[arg-type]
    with pytest.raises(RulesError, match="box 1 hand 1"):
        round_.decide(2, 1, "S")
    with pytest.raises(RulesError, match="no card expected"):
        round_.deal(parse_card("2C"))
    assert round_.next_step() == before
    assert round_.public_view()["boxes"][0]["hands"][0]["cards"] == ["9S", "8C"]


def test_decision_before_cards_raises() -> None:
    round_ = BlackjackRound("blackjack-21", boxes=3)
    with pytest.raises(RulesError, match="no decision expected"):
        round_.decide(1, 1, "H")
    with pytest.raises(RulesError, match="at most 7"):
        BlackjackRound("blackjack-21", boxes=8)
    with pytest.raises(RulesError, match="unknown blackjack game"):
        BlackjackRound("blackjack-spanish", boxes=1)


def test_settlement_and_views_are_json_ready() -> None:
    round_ = BlackjackRound("blackjack-classic", boxes=2)
    with pytest.raises(RulesError, match="not complete"):
        round_.settlement()
    deal(round_, "8S", "AS", "9D", "8D", "2C", "AH")  # box1 8-8, box2 A-2 vs an Ace up
    assert round_.next_step() == DecisionNeeded("insurance", 1, 1, frozenset("YN"), "N")
    round_.decide(1, 1, "Y")
    round_.decide(2, 1, "n")
    round_.decide(1, 1, "P")
    json.dumps(round_.public_view())
    assert round_.public_view()["next"] == {"card": "box1.hand1", "face_down": False}
    deal(round_, "TC")
    round_.decide(1, 1, "S")
    deal(round_, "9C")
    round_.decide(1, 2, "S")
    round_.decide(2, 1, "D")
    deal(round_, "7C")  # A-2-7: soft 20 after the double; the dealer's 9+A = soft 20 stands
    assert round_.complete
    settlement = round_.settlement()
    json.dumps(settlement)
    assert settlement["dealer"] == {
        "cards": ["9D", "AH"],
        "total": 20,
        "blackjack": False,
        "busted": False,
    }
    first, second = settlement["boxes"]
    assert [hand["cards"] for hand in first["hands"]] == [["8S", "TC"], ["8D", "9C"]]
    assert [hand["result"] for hand in first["hands"]] == ["lose", "lose"]
    assert first["insurance_net"] == -0.5
    assert first["net"] == -2.5
    assert second["hands"][0]["doubled"]
    assert second["hands"][0]["result"] == "push"
    assert second["net"] == 0.0
