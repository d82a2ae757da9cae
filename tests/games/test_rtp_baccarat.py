"""Exact baccarat RTP against published 8-deck combinatorial counts, and the simulation.

Published figures (cited in docs/rules-baccarat.md): the Wizard of Odds' combination counts
over the 416·415·414·413·412·411 = 4,998,398,275,503,360 ordered draws of six cards, which is
exactly what :func:`exact_outcomes` weighs; matching them integer for integer checks the
drawing rules, the enumeration and the pay rows all at once.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest

from controller.games.baccarat import BET_IDS, Outcome
from controller.games.baccarat_rtp import (
    EXACT_DENOMINATOR,
    exact_outcomes,
    exact_rtp,
    simulate,
)
from controller.kernel.errors import RulesError

WIZARD_TOTAL = 4_998_398_275_503_360


@pytest.fixture(scope="module")
def outcomes() -> dict[Outcome, int]:
    return exact_outcomes()


@pytest.fixture(scope="module")
def traditional() -> dict[str, Fraction]:
    return exact_rtp("traditional")


def _count(outcomes: dict[Outcome, int], wins: Callable[[Outcome], bool]) -> int:
    return sum(weight for outcome, weight in outcomes.items() if wins(outcome))


def test_the_weights_cover_every_ordered_draw(outcomes: dict[Outcome, int]) -> None:
    assert EXACT_DENOMINATOR == WIZARD_TOTAL
    assert sum(outcomes.values()) == WIZARD_TOTAL


def test_banker_player_tie_counts(outcomes: dict[Outcome, int]) -> None:
    assert _count(outcomes, lambda o: o.winner == "banker") == 2_292_252_566_437_888
    assert _count(outcomes, lambda o: o.winner == "player") == 2_230_518_282_592_256
    assert _count(outcomes, lambda o: o.winner == "tie") == 475_627_426_473_216


def test_three_card_win_counts(outcomes: dict[Outcome, int]) -> None:
    player = _count(outcomes, lambda o: o.winner == "player" and o.player_cards == 3)
    banker = _count(outcomes, lambda o: o.winner == "banker" and o.banker_cards == 3)
    assert player == 942_837_427_226_624
    assert banker == 763_885_033_768_960


def test_fortune_seven_and_golden_eight_counts(outcomes: dict[Outcome, int]) -> None:
    fortune = _count(
        outcomes,
        lambda o: o.winner == "banker" and o.banker_total == 7 and o.banker_cards == 3,
    )
    golden = _count(
        outcomes,
        lambda o: o.winner == "player" and o.player_total == 8 and o.player_cards == 3,
    )
    assert fortune == 112_633_011_329_024
    assert golden == 172_660_763_262_976


DRAGON_PLAYER = {
    "win by 9": 18_409_431_764_992,
    "win by 8": 34_097_645_543_424,
    "win by 7": 89_590_261_473_280,
    "win by 6": 141_238_897_317_888,
    "win by 5": 166_169_165_987_840,
    "win by 4": 186_780_352_174_080,
    "natural win": 812_685_054_124_032,
    "natural tie": 89_325_908_267_520,
}
DRAGON_BANKER = {
    "win by 9": 15_390_342_909_952,
    "win by 8": 28_305_092_784_128,
    "win by 7": 79_517_099_278_336,
    "win by 6": 119_200_072_366_080,
    "win by 5": 157_275_882_332_160,
    "win by 4": 201_147_167_287_296,
    "natural win": 812_685_054_124_032,
    "natural tie": 89_325_908_267_520,
}


@pytest.mark.parametrize(
    ("side", "published"), [("player", DRAGON_PLAYER), ("banker", DRAGON_BANKER)]
)
def test_bonus_counts_per_event(
    outcomes: dict[Outcome, int], side: str, published: dict[str, int]
) -> None:
    def event(outcome: Outcome) -> str | None:
        own, other = outcome.player_total, outcome.banker_total
        natural = outcome.player_natural
        if side == "banker":
            own, other, natural = other, own, outcome.banker_natural
        if natural and own > other:
            return "natural win"
        if natural and own == other:
            return "natural tie"
        if not natural and own - other >= 4:
            return f"win by {own - other}"
        return None

    counted: dict[str, int] = {}
    for outcome, weight in outcomes.items():
        name = event(outcome)
        if name is not None:
            counted[name] = counted.get(name, 0) + weight
    assert counted == published


def test_lucky_six_counts(outcomes: dict[Outcome, int]) -> None:
    def banker_wins_six(cards: int) -> Callable[[Outcome], bool]:
        return lambda o: o.winner == "banker" and o.banker_total == 6 and o.banker_cards == cards

    assert _count(outcomes, banker_wins_six(2)) == 186_173_936_904_192
    assert _count(outcomes, banker_wins_six(3)) == 83_058_367_551_488


def test_perfect_pair_probability(outcomes: dict[Outcome, int]) -> None:
    perfect = _count(outcomes, lambda o: o.perfect_pair)
    assert Fraction(perfect, WIZARD_TOTAL) == Fraction(246_848_784, 7_379_583_120)


def test_pair_probability(outcomes: dict[Outcome, int]) -> None:
    # After the first card, 31 of the other 415 share its rank.
    assert Fraction(_count(outcomes, lambda o: o.player_pair), WIZARD_TOTAL) == Fraction(31, 415)
    assert Fraction(_count(outcomes, lambda o: o.banker_pair), WIZARD_TOTAL) == Fraction(31, 415)


# Published RTPs (house edges) for the bets with a published 8-deck figure, in percent.
PUBLISHED_RTP_PERCENT = {
    "banker": 98.94,  # the rule page's maximum RTP / Wizard of Odds: house edge 1.06 %
    "player": 98.76,  # 1.24 %
    "tie": 85.64,  # 14.36 %
    "player_pair": 89.64,  # 10.36 %
    "banker_pair": 89.64,
    "perfect_pair": 86.97,  # 13.03 %, 25:1 either hand
    "player_bonus": 97.35,  # Dragon Bonus 2.65 %
    "banker_bonus": 90.63,  # Dragon Bonus 9.37 %
    "lucky_six": 83.32,  # Lucky 6, Macau pay table 12/20: 16.68 %
    "lucky_six_3": 84.75,  # "Big Tiger" 50:1 on a winning 3-card Banker 6: 15.253 %
}


@pytest.mark.parametrize("bet", PUBLISHED_RTP_PERCENT)
def test_published_rtp_to_a_hundredth_of_a_percent(
    traditional: dict[str, Fraction], bet: str
) -> None:
    assert round(float(traditional[bet]) * 100, 2) == PUBLISHED_RTP_PERCENT[bet]


def test_no_commission_banker() -> None:
    rtps = exact_rtp("no-commission")
    assert round(float(rtps["banker"]) * 100, 2) == 98.54  # house edge 1.46 %
    # The mode changes only the Banker bet.
    traditional = exact_rtp("traditional")
    assert {bet: rtps[bet] for bet in BET_IDS if bet != "banker"} == {
        bet: traditional[bet] for bet in BET_IDS if bet != "banker"
    }


def test_unknown_mode() -> None:
    with pytest.raises(RulesError):
        exact_rtp("cheap")
    with pytest.raises(RulesError):
        simulate("cheap", 10, 1)
    with pytest.raises(RulesError):
        simulate("traditional", 0, 1)


@pytest.mark.slow
def test_simulation_through_the_live_engine_agrees_with_the_exact_figures(
    traditional: dict[str, Fraction],
) -> None:
    seen: list[int] = []
    results = simulate("traditional", 60_000, seed=2026, progress=seen.append)
    assert seen[-1] == 60_000
    assert seen == sorted(seen)
    for bet in BET_IDS:
        rtp, low, high = results[bet]
        half_width = (high - low) / 2
        # The exact figure is off the top of a full shoe, the simulation plays whole shoes
        # (with side bets only within their limits): they agree within sampling error.
        assert abs(rtp - float(traditional[bet])) < 4 * half_width, bet


def test_simulation_is_seeded() -> None:
    assert simulate("traditional", 500, seed=5) == simulate("traditional", 500, seed=5)
    assert simulate("traditional", 500, seed=5) != simulate("traditional", 500, seed=6)
