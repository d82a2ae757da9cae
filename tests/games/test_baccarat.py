"""The live baccarat round: the step-by-step contract the table controller builds on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.baccarat import (
    BANKER_CARD,
    BET_IDS,
    PLAYER_CARD,
    BaccaratRound,
    available_bets,
    bet_available,
    play_baccarat,
)
from controller.games.base import CardNeeded, LiveRound
from controller.kernel.cards import ALL_FACES, Card, parse_card, parse_cards
from controller.kernel.errors import RulesError


def _drive(round_: BaccaratRound, texts: list[str]) -> list[str]:
    """Deal from ``texts`` as the table would; the positions the round asked for."""
    positions = []
    cards = iter(parse_cards(texts))
    while (step := round_.next_step()) is not None:
        assert isinstance(step, CardNeeded)
        assert not step.face_down
        positions.append(step.position)
        round_.deal(next(cards))
    return positions


def test_a_round_is_a_live_round() -> None:
    round_: LiveRound = BaccaratRound()
    assert round_.game == "baccarat"
    assert round_.next_step() == PLAYER_CARD
    assert not round_.complete


def test_deal_order_is_player_banker_player_banker_then_naturals_stand() -> None:
    round_ = BaccaratRound()
    # Player 9 (4+5) is a natural: nobody draws.
    assert _drive(round_, ["4S", "2H", "5D", "3C"]) == ["player", "banker", "player", "banker"]
    assert round_.complete
    settled = round_.settlement()
    assert settled["player"] == ["4S", "5D"]
    assert settled["banker"] == ["2H", "3C"]
    assert (settled["player_total"], settled["banker_total"]) == (9, 5)
    assert settled["winner"] == "player"
    assert settled["cards_used"] == 4
    assert settled["bets"]["player"] == 1.0
    assert settled["bets"]["player_natural"] == 3.5
    assert settled["bets"]["player_bonus"] == 1.0  # a natural win pays 1:1, whatever the margin


def test_player_draws_then_banker_acts_on_the_players_third_card() -> None:
    # Player 0+3 = 3 draws a 2 (total 5); Banker 4 draws because the third card is a 2.
    round_ = BaccaratRound()
    positions = _drive(round_, ["TS", "2H", "3D", "2C", "2S", "9H"])
    assert positions == ["player", "banker", "player", "banker", "player", "banker"]
    assert round_.player_total == 5
    assert round_.banker_total == 3
    assert round_.settlement()["winner"] == "player"


def test_banker_stands_on_4_when_the_players_third_card_is_a_1() -> None:
    round_ = BaccaratRound()
    positions = _drive(round_, ["TS", "2H", "3D", "2C", "AS"])
    assert positions == ["player", "banker", "player", "banker", "player"]
    assert round_.complete
    assert (round_.player_total, round_.banker_total) == (4, 4)
    assert round_.settlement()["winner"] == "tie"


def test_player_stands_on_6_and_banker_draws_on_5() -> None:
    round_ = BaccaratRound()
    positions = _drive(round_, ["3S", "2H", "3D", "3C", "4S"])
    assert positions == ["player", "banker", "player", "banker", "banker"]
    assert (round_.player_total, round_.banker_total) == (6, 9)


def test_a_card_after_the_end_is_refused_and_changes_nothing() -> None:
    round_ = BaccaratRound()
    _drive(round_, ["4S", "2H", "5D", "3C"])
    before = round_.public_view()
    with pytest.raises(RulesError, match="complete"):
        round_.deal(parse_card("KS"))
    assert round_.public_view() == before


def test_decisions_are_refused() -> None:
    round_ = BaccaratRound()
    with pytest.raises(RulesError, match="no decisions"):
        round_.decide(1, 1, "H")
    assert round_.next_step() == PLAYER_CARD


def test_not_a_card_is_refused_and_changes_nothing() -> None:
    round_ = BaccaratRound()
    with pytest.raises(RulesError):
        round_.deal("AS")  # type: ignore[arg-type]
    assert round_.cards_used == 0
    assert round_.next_step() == PLAYER_CARD


def test_settlement_before_the_end_is_refused() -> None:
    round_ = BaccaratRound()
    round_.deal(parse_card("AS"))
    with pytest.raises(RulesError, match="not complete"):
        round_.settlement()
    assert round_.next_step() == BANKER_CARD


def test_public_view_follows_the_round() -> None:
    round_ = BaccaratRound("no-commission", round_number=7)
    round_.deal(parse_card("10H"))
    view = round_.public_view()
    assert view == {
        "game": "baccarat",
        "mode": "no-commission",
        "round_number": 7,
        "player": ["TH"],
        "banker": [],
        "player_total": 0,
        "banker_total": 0,
        "next": "banker",
        "complete": False,
    }
    _drive(round_, ["6S", "7D", "KC"])
    view = round_.public_view()
    assert view["complete"] is True
    assert view["winner"] == "player"
    assert view["next"] is None


@pytest.mark.parametrize("mode", ["", "commission", "TRADITIONAL"])
def test_unknown_mode_is_refused(mode: str) -> None:
    with pytest.raises(RulesError, match="mode"):
        BaccaratRound(mode)


@pytest.mark.parametrize("round_number", [0, -1])
def test_round_numbers_start_at_one(round_number: int) -> None:
    with pytest.raises(RulesError, match="round"):
        BaccaratRound(round_number=round_number)


def test_play_baccarat_ignores_cards_beyond_need_and_parses_text() -> None:
    result = play_baccarat(["4S", "2H", "5D", "3C", "KS", "KH"])
    assert result.cards_used == 4
    assert result.winner == "player"
    assert result.as_dict()["player"] == ["4S", "5D"]


def test_play_baccarat_with_too_few_cards_says_where_the_next_card_goes() -> None:
    with pytest.raises(RulesError, match=r"too few cards.*player"):
        play_baccarat(["TS", "2H", "3D", "2C"])
    with pytest.raises(RulesError, match=r"too few cards.*banker"):
        play_baccarat(["TS", "2H", "3D", "2C", "2S"])


def test_play_baccarat_refuses_unknown_cards() -> None:
    with pytest.raises(RulesError, match="unknown card"):
        play_baccarat(["4S", "2H", "5X", "3C"])


def test_side_bets_are_settled_only_in_rounds_where_they_could_be_placed() -> None:
    cards = ["4S", "2H", "5D", "3C"]
    assert set(play_baccarat(cards, round_number=40).bets) == set(BET_IDS)
    assert set(play_baccarat(cards, round_number=41).bets) == set(BET_IDS) - {
        "player_bonus",
        "banker_bonus",
    }
    in_51 = set(play_baccarat(cards, round_number=51).bets)
    assert in_51 == {"player", "banker", "tie", "player_pair", "banker_pair"}
    assert set(play_baccarat(cards, round_number=61).bets) == {"player", "banker", "tie"}


def test_bet_availability_by_round_number() -> None:
    assert available_bets(1) == BET_IDS
    assert bet_available("player_pair", 60)
    assert not bet_available("player_pair", 61)
    assert bet_available("tie", 10_000)
    with pytest.raises(RulesError, match="unknown"):
        bet_available("dragon", 1)
    with pytest.raises(RulesError):
        available_bets(0)


@settings(max_examples=300, deadline=None)
@given(
    cards=st.lists(st.sampled_from(ALL_FACES), min_size=6, max_size=6),
    mode=st.sampled_from(["traditional", "no-commission"]),
    round_number=st.integers(min_value=1, max_value=80),
)
def test_driving_the_live_round_equals_play_baccarat(
    cards: list[Card], mode: str, round_number: int
) -> None:
    round_ = BaccaratRound(mode, round_number)
    dealt = 0
    views = []
    while (step := round_.next_step()) is not None:
        assert step in (PLAYER_CARD, BANKER_CARD)
        # The first four cards alternate Player, Banker; later ones are third cards.
        if dealt < 4:
            assert step.position == ("player", "banker")[dealt % 2]
        round_.deal(cards[dealt])
        dealt += 1
        views.append(round_.public_view())
    assert 4 <= dealt <= 6
    assert round_.complete
    assert round_.cards_used == dealt
    # Every card dealt is visible in the view at once, in the hand it went to.
    assert [len(v["player"]) + len(v["banker"]) for v in views] == list(range(1, dealt + 1))
    result = play_baccarat(cards, mode, round_number)
    assert round_.settlement() == result.as_dict()
    assert set(result.bets) == set(available_bets(round_number))
    assert round_.public_view()["winner"] == result.winner
    with pytest.raises(RulesError):
        round_.deal(cards[0])
