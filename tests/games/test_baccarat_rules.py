"""Every baccarat rule and every pay-table row of docs/rules-baccarat.md, against independent
formulations.

A wrong third card or a wrong payout is the worst bug this product can have, so the engine is
checked against a second implementation written here from that page's own tables (the
third-card table as its markdown rows, the pay table as its "a:b" strings), exhaustively over
every combination of point values and by hypothesis over real card sequences.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.baccarat import BET_IDS, BET_LIMITS, play_baccarat
from controller.kernel.cards import ALL_FACES, Card, parse_cards

# docs/rules-baccarat.md, Third-card rule: the table's rows verbatim (en dashes included).
THIRD_CARD_TABLE_MARKDOWN = """
| 0, 1, 2 | any | — |
| 3 | 0–7, 9 | 8 |
| 4 | 2–7 | 0, 1, 8, 9 |
| 5 | 4–7 | 0–3, 8, 9 |
| 6 | 6, 7 | 0–5, 8, 9 |
| 7 | — | any |
"""


def _parse_values(cell: str) -> set[int]:
    cell = cell.strip()
    if cell == "any":
        return set(range(10))
    if cell == "—":
        return set()
    values: set[int] = set()
    for part in cell.split(","):
        low, _, high = part.strip().partition("–")
        values.update(range(int(low), int(high or low) + 1))
    return values


def _parse_third_card_table() -> dict[int, set[int]]:
    """Banker two-card total -> Player third-card values on which the Banker draws."""
    draws_on: dict[int, set[int]] = {}
    for line in THIRD_CARD_TABLE_MARKDOWN.strip().splitlines():
        totals, draws, stands = (cell for cell in line.strip("|").split("|"))
        draw_set, stand_set = _parse_values(draws), _parse_values(stands)
        # The row must be a partition of the ten values, or the transcription is wrong.
        assert draw_set | stand_set == set(range(10)) and not draw_set & stand_set, line
        for total in _parse_values(totals):
            draws_on[total] = draw_set
    return draws_on


BANKER_DRAWS_ON = _parse_third_card_table()

# docs/rules-baccarat.md, Pay table (and Dragon Bonus, Lucky Six, Lucky Seven, Super Lucky
# Seven): the payouts as written there.
PAYS = {
    "player": "1:1",
    "banker_traditional": "0.95:1",
    "banker_no_commission_six": "1:2",
    "banker_no_commission_other": "1:1",
    "tie": "8:1",
    "player_pair": "11:1",
    "banker_pair": "11:1",
    "either_pair": "5:1",
    "perfect_pair": "25:1",
    "player_natural": "7:2",
    "banker_natural": "7:2",
    "bonus_natural": "1:1",
    "bonus_margin_9": "30:1",
    "bonus_margin_8": "10:1",
    "bonus_margin_7": "6:1",
    "bonus_margin_6": "4:1",
    "bonus_margin_5": "2:1",
    "bonus_margin_4": "1:1",
    "lucky_six_two_cards": "12:1",
    "lucky_six_three_cards": "20:1",
    "lucky_six_2": "22:1",
    "lucky_six_3": "50:1",
    "lucky_seven_two_cards": "6:1",
    "lucky_seven_three_cards": "15:1",
    "lucky_seven_2": "15:1",
    "lucky_seven_3": "30:1",
    "super_lucky_seven_4": "30:1",
    "super_lucky_seven_5": "40:1",
    "super_lucky_seven_6": "100:1",
}
LIMITS_IN_THE_RULES_DOC = {  # docs/rules-baccarat.md, Side-bet limits
    "player_pair": 60,
    "banker_pair": 60,
    "either_pair": 50,
    "perfect_pair": 50,
    "player_natural": 50,
    "banker_natural": 50,
    "player_bonus": 40,
    "banker_bonus": 40,
    "lucky_six": 50,
    "lucky_six_2": 50,
    "lucky_six_3": 50,
    "lucky_seven": 50,
    "lucky_seven_2": 50,
    "lucky_seven_3": 50,
    "super_lucky_seven": 50,
}


def pays(row: str) -> float:
    """A win "a:b" returns stake × a / b on top of the stake: that is the net per unit."""
    a, b = PAYS[row].split(":")
    return float(Fraction(a) / Fraction(b))


def points(cards: list[Card]) -> int:
    return sum(0 if c.rank in "TJQK" else 1 if c.rank == "A" else int(c.rank) for c in cards)


def reference_deal(cards: list[Card]) -> tuple[list[Card], list[Card]]:
    """docs/rules-baccarat.md's deal (Deal order and naturals, Third-card rule) written out
    as prose, independently of the engine."""
    player = [cards[0], cards[2]]
    banker = [cards[1], cards[3]]
    rest = iter(cards[4:])
    player_total, banker_total = points(player) % 10, points(banker) % 10
    if player_total in (8, 9) or banker_total in (8, 9):
        return player, banker
    player_third = None
    if player_total <= 5:
        player_third = next(rest)
        player.append(player_third)
    if player_third is None:
        if banker_total <= 5:
            banker.append(next(rest))
    elif points([player_third]) in BANKER_DRAWS_ON[banker_total]:
        banker.append(next(rest))
    return player, banker


def reference_bets(player: list[Card], banker: list[Card], mode: str) -> dict[str, float]:
    p, b = points(player) % 10, points(banker) % 10
    player_natural = len(player) == 2 and p >= 8
    banker_natural = len(banker) == 2 and b >= 8
    lose = -1.0
    bets: dict[str, float] = {}
    bets["player"] = pays("player") if p > b else 0.0 if p == b else lose
    if b > p:
        if mode == "traditional":
            bets["banker"] = pays("banker_traditional")
        elif b == 6:
            bets["banker"] = pays("banker_no_commission_six")
        else:
            bets["banker"] = pays("banker_no_commission_other")
    else:
        bets["banker"] = 0.0 if p == b else lose
    bets["tie"] = pays("tie") if p == b else lose
    player_pair = player[0].rank == player[1].rank
    banker_pair = banker[0].rank == banker[1].rank
    bets["player_pair"] = pays("player_pair") if player_pair else lose
    bets["banker_pair"] = pays("banker_pair") if banker_pair else lose
    bets["either_pair"] = pays("either_pair") if player_pair or banker_pair else lose
    perfect = (player_pair and player[0].suit == player[1].suit) or (
        banker_pair and banker[0].suit == banker[1].suit
    )
    bets["perfect_pair"] = pays("perfect_pair") if perfect else lose
    bets["player_natural"] = pays("player_natural") if player_natural else lose
    bets["banker_natural"] = pays("banker_natural") if banker_natural else lose
    for side, own, other, natural in (
        ("player", p, b, player_natural),
        ("banker", b, p, banker_natural),
    ):
        if natural and own > other:
            bonus = pays("bonus_natural")
        elif natural and own == other:
            bonus = 0.0
        elif not natural and own - other >= 4:
            bonus = pays(f"bonus_margin_{own - other}")
        else:
            bonus = lose
        bets[f"{side}_bonus"] = bonus
    banker_wins_six = b > p and b == 6
    three = {2: "two_cards", 3: "three_cards"}
    bets["lucky_six"] = pays(f"lucky_six_{three[len(banker)]}") if banker_wins_six else lose
    bets["lucky_six_2"] = pays("lucky_six_2") if banker_wins_six and len(banker) == 2 else lose
    bets["lucky_six_3"] = pays("lucky_six_3") if banker_wins_six and len(banker) == 3 else lose
    player_wins_seven = p > b and p == 7
    bets["lucky_seven"] = pays(f"lucky_seven_{three[len(player)]}") if player_wins_seven else lose
    bets["lucky_seven_2"] = (
        pays("lucky_seven_2") if player_wins_seven and len(player) == 2 else lose
    )
    bets["lucky_seven_3"] = (
        pays("lucky_seven_3") if player_wins_seven and len(player) == 3 else lose
    )
    bets["super_lucky_seven"] = (
        pays(f"super_lucky_seven_{len(player) + len(banker)}")
        if player_wins_seven and b == 6
        else lose
    )
    return bets


def _check_against_reference(cards: list[Card], mode: str) -> None:
    result = play_baccarat(cards, mode)
    player, banker = reference_deal(cards)
    assert list(result.player) == player
    assert list(result.banker) == banker
    settled = result.as_dict()
    assert settled["player_total"] == points(player) % 10
    assert settled["banker_total"] == points(banker) % 10
    assert settled["cards_used"] == len(player) + len(banker)
    expected = reference_bets(player, banker, mode)
    assert settled["bets"] == expected
    winner = settled["winner"]
    assert expected["player"] == (1.0 if winner == "player" else 0.0 if winner == "tie" else -1)


# A card of each point value; 0 comes as a K so that the T below never makes a pair with it.
RANK_OF_VALUE = {0: "K", 1: "A", **{v: str(v) for v in range(2, 10)}}


def test_every_drawing_branch_and_final_total_matches_the_documented_tables() -> None:
    """All 10^4 (Player 2-card total, Banker 2-card total, 5th card, 6th card) value cases."""
    drew = {"player": 0, "banker_after_player": 0, "banker_alone": 0}
    for p2, b2, fifth, sixth in itertools.product(range(10), repeat=4):
        texts = [RANK_OF_VALUE[p2] + "S", RANK_OF_VALUE[b2] + "H", "TD", "TC"]
        texts += [RANK_OF_VALUE[fifth] + "D", RANK_OF_VALUE[sixth] + "C"]
        cards = parse_cards(texts)
        for mode in ("traditional", "no-commission"):
            _check_against_reference(cards, mode)
        result = play_baccarat(cards)
        if len(result.player) == 3:
            drew["player"] += 1
            drew["banker_after_player"] += len(result.banker) == 3
        elif len(result.banker) == 3:
            drew["banker_alone"] += 1
    # The loop went through every branch, not just the naturals.
    assert drew["player"] == 6 * 8 * 100  # Player 0-5 against a Banker without a natural
    assert drew["banker_after_player"] > 0
    assert drew["banker_alone"] == 2 * 6 * 100  # Player 6-7 against Banker 0-5


def test_the_engine_third_card_table_is_the_documented_table() -> None:
    from controller.games.baccarat import BANKER_DRAWS_ON as ENGINE_TABLE

    assert {total: set(values) for total, values in ENGINE_TABLE.items()} == BANKER_DRAWS_ON


@settings(max_examples=600, deadline=None)
@given(
    cards=st.lists(st.sampled_from(ALL_FACES), min_size=6, max_size=6),
    mode=st.sampled_from(["traditional", "no-commission"]),
)
def test_real_card_sequences_match_the_reference(cards: list[Card], mode: str) -> None:
    _check_against_reference(cards, mode)


# Pairs are frequent only among few ranks: this strategy makes pairs and perfect pairs common.
FEW_FACES = parse_cards(["KS", "KH", "QS", "7D", "7S", "AS"])


@settings(max_examples=300, deadline=None)
@given(
    cards=st.lists(st.sampled_from(FEW_FACES), min_size=6, max_size=6),
    mode=st.sampled_from(["traditional", "no-commission"]),
)
def test_pair_heavy_sequences_match_the_reference(cards: list[Card], mode: str) -> None:
    _check_against_reference(cards, mode)


def test_the_limit_column_is_the_documented_column() -> None:
    assert {bet: limit for bet, limit in BET_LIMITS.items() if limit is not None} == (
        LIMITS_IN_THE_RULES_DOC
    )
    assert set(BET_IDS) - set(LIMITS_IN_THE_RULES_DOC) == {"player", "banker", "tie"}
    assert len(BET_IDS) == 18


# One named case per pay row and edge case: (cards in shoe order, mode, {bet: net}).
NAMED_CASES = {
    "player wins 1:1": (["9S", "2H", "KD", "5C"], "traditional", {"player": 1.0, "banker": -1}),
    "banker wins 0.95:1": (["2S", "9H", "5D", "KC"], "traditional", {"banker": 0.95}),
    "no-commission banker win on 6 pays 1:2": (
        ["KS", "3H", "5D", "3C", "KD"],
        "no-commission",
        {"banker": 0.5, "player": -1.0},
    ),
    "no-commission banker win on 7 pays 1:1": (
        ["KS", "3H", "6D", "4C", "KD"],
        "no-commission",
        {"banker": 1.0},
    ),
    "tie refunds player and banker and pays tie 8:1": (
        ["KS", "KH", "8D", "8C"],
        "traditional",
        {"player": 0.0, "banker": 0.0, "tie": 8.0},
    ),
    "K-K pair, different suits, is a pair but not perfect": (
        ["KS", "2H", "KH", "3C", "9D", "9C"],
        "traditional",
        {"player_pair": 11.0, "banker_pair": -1.0, "either_pair": 5.0, "perfect_pair": -1.0},
    ),
    "K-Q is not a pair": (
        ["KS", "2H", "QS", "3C", "9D", "9C"],
        "traditional",
        {"player_pair": -1.0, "either_pair": -1.0},
    ),
    "both pairs pay either pair once, perfect pair once": (
        ["7S", "7H", "7S", "7H", "KD", "KC"],
        "traditional",
        {"player_pair": 11.0, "banker_pair": 11.0, "either_pair": 5.0, "perfect_pair": 25.0},
    ),
    "banker natural pays 7:2": (
        ["2S", "4H", "3D", "5C"],
        "traditional",
        {"banker_natural": 3.5, "player_natural": -1.0, "banker_bonus": 1.0},
    ),
    "natural tie refunds both bonus bets": (
        ["4S", "5H", "5D", "4C"],
        "traditional",
        {"player_bonus": 0.0, "banker_bonus": 0.0, "player_natural": 3.5, "tie": 8.0},
    ),
    "natural win by 1 still pays bonus 1:1; the loser's bonus loses": (
        ["4S", "4H", "5D", "4C"],
        "traditional",
        {"player_bonus": 1.0, "banker_bonus": -1.0},
    ),
    "non-natural win by 9 pays bonus 30:1": (
        ["KS", "KH", "KD", "KC", "9S", "KH"],
        "traditional",
        {"player_bonus": 30.0, "player": 1.0},
    ),
    "non-natural win by 3 loses the bonus": (
        ["AS", "KH", "KD", "KC", "6S", "4H"],
        "traditional",
        {"player_bonus": -1.0, "player": 1.0},
    ),
    "non-natural tie loses the bonus": (
        ["3S", "3H", "4D", "4C"],
        "traditional",
        {"player_bonus": -1.0, "banker_bonus": -1.0, "tie": 8.0},
    ),
    "lucky six on two cards": (
        ["4S", "3H", "KD", "3C", "AS"],
        "traditional",
        {"lucky_six": 12.0, "lucky_six_2": 22.0, "lucky_six_3": -1.0},
    ),
    "lucky six on three cards": (
        ["KS", "KH", "KD", "2C", "KS", "4H"],
        "traditional",
        {"lucky_six": 20.0, "lucky_six_2": -1.0, "lucky_six_3": 50.0},
    ),
    "a banker 6 that ties pays no lucky six": (
        ["3S", "3H", "3D", "3C"],
        "traditional",
        {"lucky_six": -1.0, "lucky_six_2": -1.0, "lucky_six_3": -1.0, "tie": 8.0},
    ),
    "a banker 6 that loses pays no lucky six": (
        ["3S", "3H", "4D", "3C"],
        "traditional",
        {"lucky_six": -1.0, "lucky_six_2": -1.0, "player": 1.0},
    ),
    "lucky seven on two cards, super lucky seven with 4 cards": (
        ["3S", "3H", "4D", "3C"],
        "traditional",
        {"lucky_seven": 6.0, "lucky_seven_2": 15.0, "super_lucky_seven": 30.0},
    ),
    "super lucky seven with 5 cards (player 2, banker 3)": (
        ["3S", "KH", "4D", "KC", "6S"],
        "traditional",
        {"super_lucky_seven": 40.0, "lucky_seven_2": 15.0},
    ),
    "super lucky seven with 5 cards (player 3, banker 2)": (
        ["KS", "3H", "4D", "3C", "3S"],
        "traditional",
        {"super_lucky_seven": 40.0, "lucky_seven": 15.0, "lucky_seven_3": 30.0},
    ),
    "super lucky seven with 6 cards": (
        ["KS", "KH", "4D", "KC", "3S", "6H"],
        "traditional",
        {"super_lucky_seven": 100.0, "lucky_seven_3": 30.0, "lucky_six": -1.0},
    ),
    "player 7 against banker 5 is no super lucky seven": (
        ["3S", "2H", "4D", "3C", "KS"],
        "traditional",
        {"super_lucky_seven": -1.0, "lucky_seven_2": 15.0},
    ),
}


@pytest.mark.parametrize("name", NAMED_CASES)
def test_named_pay_rows(name: str) -> None:
    texts, mode, expected = NAMED_CASES[name]
    cards = parse_cards(texts)
    bets = play_baccarat(cards, mode).bets
    assert {bet: bets[bet] for bet in expected} == expected
    _check_against_reference(cards, mode)
