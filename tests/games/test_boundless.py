"""Boundless: players resolved from one common sequence, and the four side bets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.base import CardNeeded
from controller.games.blackjack import BlackjackRound
from controller.games.blackjack_replay import replay
from controller.games.boundless import PlayerResolver, players_need_card, resolve_player
from controller.games.boundless_side_bets import (
    SIDE_BET_LIMITS,
    bust_bonus_payout,
    lucky_trio_pattern,
    pair_pattern,
    poker_trio_pattern,
    side_bet_available,
    side_bet_results,
)
from controller.kernel.cards import ALL_FACES, parse_card, parse_cards
from controller.kernel.errors import RulesError

BOUNDLESS = "blackjack-boundless"


def cards(text: str) -> list:
    return parse_cards(text.split())


# -- resolving players ---------------------------------------------------------------------


def test_players_with_different_decisions_resolve_on_one_sequence() -> None:
    common = cards("8S 8D 3C TH 9D 2S")
    dealer = cards("7C TC")  # 17
    stander = resolve_player(common, dealer, ["S"])
    hitter = resolve_player(common, dealer, ["H", "S"])
    splitter = resolve_player(common, dealer, ["P", "D", "H", "S"])
    doubler = resolve_player(common, dealer, ["D"])
    assert stander.hands == (tuple(cards("8S 8D")),)
    assert stander.net == -1.0
    assert hitter.hands == (tuple(cards("8S 8D 3C")),)
    assert hitter.net == 1.0  # 19 beats 17
    # Split: hand 1 8S takes 3C and doubles onto TH = 21; hand 2 8D takes 9D = 17, hits 2S.
    assert splitter.hands == (tuple(cards("8S 3C TH")), tuple(cards("8D 9D 2S")))
    assert splitter.hand_nets == (2.0, 1.0)
    assert splitter.cards_used == 6
    assert doubler.hands == (tuple(cards("8S 8D 3C")),)
    assert doubler.net == 2.0


def test_live_round_deals_while_any_player_wants_a_card() -> None:
    round_ = BlackjackRound(BOUNDLESS)
    for text in ["8S", "6H", "8D", "TC"]:
        round_.deal(parse_card(text))
    up = round_.up_card
    players = [
        PlayerResolver(round_.common[:2], up, ["S"]),
        PlayerResolver(round_.common[:2], up, ["P", "S", "H", "S"]),
    ]
    dealt = iter(cards("9C 2D 5H 4S 7S"))
    answers = []
    while True:
        step = round_.next_step()
        if step is None:
            break
        if isinstance(step, CardNeeded):
            round_.deal(next(dealt))
        else:
            assert step.kind == "more_cards"
            wanted = players_need_card(players, round_.common)
            answers.append(wanted)
            round_.decide(1, 1, "Y" if wanted else "N")
    # The splitter's hand 1 takes 9C (stands on 17), hand 2 takes 2D (10), hits 5H (15) and
    # stands: three common cards, then no one wants a fourth. The dealer 16 draws 4S.
    assert answers == [True, True, True, False]
    assert round_.common == cards("8S 8D 9C 2D 5H")
    assert round_.dealer == cards("6H TC 4S")
    assert [player.result(round_.dealer).net for player in players] == [-1.0, -2.0]


def test_more_cards_default_is_the_auto_play_of_the_common_sequence() -> None:
    round_ = BlackjackRound(BOUNDLESS)
    for text in ["2S", "6H", "3D", "TC"]:
        round_.deal(parse_card(text))
    assert round_.next_step().default == "Y"  # 5
    round_.decide(1, 1, "Y")
    round_.deal(parse_card("9C"))
    assert round_.next_step().default == "N"  # 14


def test_shared_blackjack_asks_nothing_and_the_dealer_plays() -> None:
    round_ = BlackjackRound(BOUNDLESS)
    for text in ["AS", "6H", "KD", "TC"]:
        round_.deal(parse_card(text))
    assert round_.next_step().position == "dealer"


def test_resolve_player_rejects_incomplete_inputs() -> None:
    with pytest.raises(RulesError, match="still wanted a card"):
        resolve_player(cards("2S 3D"), cards("TC 8D"), ["H"])
    with pytest.raises(RulesError, match="not complete"):
        resolve_player(cards("TS 8D"), cards("TC 5D"), ["S"])
    with pytest.raises(RulesError, match="not legal"):
        resolve_player(cards("TS 8D 2C"), cards("TC 8D"), ["P"])


def test_dealer_blackjack_settles_players_without_play() -> None:
    result = resolve_player(cards("TS 8D"), cards("AC KD"), ["H"], insurance=True)
    assert result.hands == (tuple(cards("TS 8D")),)
    assert result.net == -1.0 + 1.0


def test_replay_boundless_players_match_resolve_player() -> None:
    line = {
        "game": BOUNDLESS,
        "cards": ["8S", "6H", "8D", "TC", "9C", "2D", "5H", "4S", "7S"],
        "boxes": 3,
        "insurance": [False, False, False],
        "decisions": [["S"], ["P", "S", "H", "S"], ["H"]],
    }
    result = replay(line)
    common = cards("8S 8D 9C 2D 5H")
    dealer = cards("6H TC 4S")
    assert result["dealer"] == ["6H", "TC", "4S"]
    assert result["cards_used"] == 9 - 1
    for box, tokens in enumerate(line["decisions"]):
        alone = resolve_player(common, dealer, tokens)
        assert result["boxes"][box]["net"] == alone.net
        assert result["boxes"][box]["hands"] == [[str(c) for c in hand] for hand in alone.hands]
    assert result["side_bets"] == {
        "pair": 5.0,  # 8S 8D: mixed colours
        "bust_bonus": -1.0,
        "lucky_trio": -1.0,  # 8+8+6 = 22
        "poker_trio": -1.0,
    }


# -- side bets: every pay-table row ------------------------------------------------------------


@pytest.mark.parametrize(
    ("two", "pattern"),
    [
        ("QS QS", "perfect_pair"),
        ("7H 7H", "perfect_pair"),
        ("QS QC", "coloured_pair"),
        ("7H 7D", "coloured_pair"),
        ("QS QH", "mixed_pair"),
        ("7C 7D", "mixed_pair"),
        ("KS QS", None),  # same value, not same rank
        ("AS 2S", None),
    ],
)
def test_pair_patterns(two: str, pattern: str | None) -> None:
    first, second = cards(two)
    assert pair_pattern(first, second) == pattern


@pytest.mark.parametrize(
    ("dealer", "payout"),
    [
        ("TS 6D 9C", 1.0),
        ("2S 4D 6C TH", 2.0),
        ("2S 2D 3C 5H TC", 9.0),
        ("AS 2D 2C 2H 2S 3D KC", 100.0),  # 7 cards: soft/hard 12, 13.. then K busts
        ("2S 2D 2C 3H 3S 4D", None),  # 16 not bust: (6 cards, no bust)
        ("AS AD AC AH 2S 2D 5C TH", 250.0),  # 8 cards
        ("AS AD AC AH 2S 2D 2C 2H TC", 250.0),  # 9 cards: 8 or more
        ("TS 7D", None),
        ("TS 6D 5C", None),
    ],
)
def test_bust_bonus_by_cards_in_the_busted_hand(dealer: str, payout: float | None) -> None:
    assert bust_bonus_payout(cards(dealer)) == payout


def test_bust_bonus_six_cards() -> None:
    assert bust_bonus_payout(cards("2S 2D 2C 3H 3S TD")) == 50.0


@pytest.mark.parametrize(
    ("three", "pattern"),
    [
        ("7S 7S 7S", "suited_777"),
        ("6H 7H 8H", "suited_678"),
        ("8H 6H 7H", "suited_678"),
        ("7S 7H 7S", "777"),
        ("6H 7S 8H", "678"),
        ("AS KS TS", "suited_21"),  # 11 + 10 + 10 -> 21 with the Ace as 1: 1+10+10 = 21
        ("9D 5D 7D", "suited_21"),
        ("9D 5C 7D", "21"),
        ("AS AD 9C", "21"),  # 11 + 1 + 9
        ("TS 9D KC", None),  # 29: bust
        ("TS 9D AC", "19_or_20"),  # T 9 A = 20
        ("TS 5D 4C", "19_or_20"),
        ("TS 8D AC", "19_or_20"),  # 19
        ("TS 6D 2C", None),  # 18
        ("AS 7D AC", "19_or_20"),  # 11 + 7 + 1
    ],
)
def test_lucky_trio_patterns(three: str, pattern: str | None) -> None:
    first, second, up = cards(three)
    assert lucky_trio_pattern(first, second, up) == pattern


@pytest.mark.parametrize(
    ("three", "pattern"),
    [
        ("QH QH QH", "suited_three_of_a_kind"),
        ("QH QS QH", "three_of_a_kind"),
        ("9S TS JS", "straight_flush"),
        ("AS 2S 3S", "straight_flush"),
        ("QD KD AD", "straight_flush"),
        ("9S TH JS", "straight"),
        ("AS 2D 3S", "straight"),
        ("QD AC KD", "straight"),
        ("KD AC 2D", None),  # no wrap
        ("KD AD 2D", "flush"),
        ("2C 7C 9C", "flush"),
        ("2C 2C 9C", "flush"),  # a pair is not a pattern; all clubs is a flush
        ("2C 7D 9C", None),
        ("QS KS KH", None),
    ],
)
def test_poker_trio_patterns(three: str, pattern: str | None) -> None:
    first, second, up = cards(three)
    assert poker_trio_pattern(first, second, up) == pattern


@pytest.mark.parametrize(
    ("player", "dealer", "expected"),
    [
        ("7S 7S", "7S TC", {"pair": 30.0, "lucky_trio": 200.0, "poker_trio": 100.0}),
        ("7S 7C", "7D TC", {"pair": 10.0, "lucky_trio": 50.0, "poker_trio": 30.0}),
        ("6H 8H", "7H TC", {"pair": -1.0, "lucky_trio": 100.0, "poker_trio": 40.0}),
        ("6H 8D", "7H TC", {"pair": -1.0, "lucky_trio": 30.0, "poker_trio": 10.0}),
        ("KH QH", "AH 9C", {"pair": -1.0, "lucky_trio": 10.0, "poker_trio": 40.0}),
        ("KH QH", "AC 9C", {"pair": -1.0, "lucky_trio": 3.0, "poker_trio": 10.0}),
        ("KH 2H", "9C TC", {"pair": -1.0, "lucky_trio": 3.0, "poker_trio": -1.0}),
        ("KH 2H", "5H TC", {"pair": -1.0, "lucky_trio": -1.0, "poker_trio": 5.0}),
        ("KH 5D", "4H TC", {"pair": -1.0, "lucky_trio": 2.0, "poker_trio": -1.0}),
        ("KH KS", "4H TC", {"pair": 5.0, "lucky_trio": -1.0, "poker_trio": -1.0}),
    ],
)
def test_side_bet_results_pay_the_highest_pattern_only(
    player: str, dealer: str, expected: dict[str, float]
) -> None:
    results = side_bet_results(cards(player), cards(dealer))
    assert {bet: results[bet] for bet in expected} == expected
    assert results["bust_bonus"] == -1.0  # the dealer stood


def test_side_bets_settle_on_the_live_round() -> None:
    round_ = BlackjackRound(BOUNDLESS)
    for text in ["7S", "7D", "7C", "5C"]:
        round_.deal(parse_card(text))
    round_.decide(1, 1, "N")  # 14: nobody wants a card
    for text in ["2S", "9D"]:
        round_.deal(parse_card(text))
    settlement = round_.settlement()
    assert settlement["side_bets"] == {
        "pair": 10.0,  # 7S 7C: both black
        "bust_bonus": 2.0,  # 7+5+2+9 = 23 with 4 cards
        "lucky_trio": 50.0,  # 7-7-7 not all one suit
        "poker_trio": 30.0,
    }
    assert settlement["dealer"]["busted"]


@pytest.mark.parametrize("bet", sorted(SIDE_BET_LIMITS))
def test_side_bet_limits_by_round_in_the_shoe(bet: str) -> None:
    limit = {"pair": 40, "bust_bonus": 45, "lucky_trio": 45, "poker_trio": 45}[bet]
    assert side_bet_available(bet, 1)
    assert side_bet_available(bet, limit)
    assert not side_bet_available(bet, limit + 1)
    with pytest.raises(RulesError):
        side_bet_available(bet, 0)


def test_unknown_side_bet() -> None:
    with pytest.raises(RulesError, match="unknown Boundless side bet"):
        side_bet_available("perfect_pairs", 1)


def test_net_is_the_result_net() -> None:
    common = cards("8S 8D 3C TH 9D 2S")
    for dealer in (cards("7C TC"), cards("AC KC"), cards("AC 6C")):
        for tokens, insurance in ((["S"], True), (["P", "D", "H", "S"], False), (["H"], True)):
            resolver = PlayerResolver(common[:2], dealer[0], tokens, insurance)
            if dealer[1].rank != "K":
                resolver.advance(common)
            assert resolver.net(dealer) == resolver.result(dealer).net


# -- side bets against a brute-force reference ---------------------------------------------

RANK_ORDER = "A23456789TJQK"


def reference_lucky_trio(three: list) -> float:
    """Every pattern the three cards match, written from docs/rules-blackjack.md, Lucky Trio;
    the best pays."""
    suited = len({card.suit for card in three}) == 1
    ranks = sorted(card.rank for card in three)
    values = [min(RANK_ORDER.index(card.rank) + 1, 10) for card in three]
    total = sum(values) + (10 if 1 in values and sum(values) + 10 <= 21 else 0)
    pays = [-1.0]
    if total in (19, 20):
        pays.append(2.0)
    if total == 21:
        pays.append(10.0 if suited else 3.0)
    if ranks == ["6", "7", "8"]:
        pays.append(100.0 if suited else 30.0)
    if ranks == ["7", "7", "7"]:
        pays.append(200.0 if suited else 50.0)
    return max(pays)


def reference_poker_trio(three: list) -> float:
    suited = len({card.suit for card in three}) == 1
    indexes = sorted(RANK_ORDER.index(card.rank) for card in three)  # A = 0
    runs = [[i, i + 1, i + 2] for i in range(11)] + [[0, 11, 12]]  # A-2-3 .. J-Q-K, Q-K-A
    straight = indexes in runs
    trips = indexes[0] == indexes[2]
    pays = [-1.0]
    if suited:
        pays.append(5.0)
    if straight:
        pays.append(40.0 if suited else 10.0)
    if trips:
        pays.append(100.0 if suited else 30.0)
    return max(pays)


def reference_pair(two: list) -> float:
    first, second = two
    if first.rank != second.rank:
        return -1.0
    if first.suit == second.suit:
        return 30.0
    return 10.0 if (first.suit in "HD") == (second.suit in "HD") else 5.0


@settings(max_examples=400, deadline=None)
@given(three=st.lists(st.sampled_from(ALL_FACES), min_size=3, max_size=3))
def test_three_card_side_bets_match_the_reference(three: list) -> None:
    dealer = [three[2], parse_card("TC")]
    results = side_bet_results(three[:2], dealer)
    assert results["lucky_trio"] == reference_lucky_trio(three)
    assert results["poker_trio"] == reference_poker_trio(three)
    assert results["pair"] == reference_pair(three[:2])


def test_replay_boundless_insurance_is_each_players_own() -> None:
    line = {
        "game": BOUNDLESS,
        "cards": ["TS", "AD", "9H", "KC"],  # shared 19 against a dealer BJ with the Ace up
        "boxes": 3,
        "insurance": [True, False, True],
        "decisions": [["S"], ["H"], []],
    }
    result = replay(line)
    assert [box["net"] for box in result["boxes"]] == [0.0, -1.0, 0.0]
    assert result["cards_used"] == 4
    assert result["dealer"] == ["AD", "KC"]
    # Without a dealer BJ the insurance is lost and play goes on.
    line["cards"] = ["TS", "AD", "9H", "7C", "2S"]
    result = replay(line)
    # Box 1 stands on 19 against soft 18: +1 - 0.5; box 2 hits 2 = 21: +1; box 3 auto-stands.
    assert [box["net"] for box in result["boxes"]] == [0.5, 1.0, 0.5]
    assert result["boxes"][1]["hands"] == [["TS", "9H", "2S"]]
