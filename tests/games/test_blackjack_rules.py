"""Every blackjack rule of docs/rules-blackjack.md, one named case at a time, through `replay`
and the live round (replay is a thin driver over the live round, so both run the same code)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from controller.games.base import CardNeeded, DecisionNeeded
from controller.games.blackjack import BlackjackRound
from controller.games.blackjack_hand import (
    auto_play_token,
    dealer_must_draw,
    hand_total,
    insufficient_balance_token,
    is_blackjack,
)
from controller.games.blackjack_replay import replay
from controller.kernel.cards import parse_card, parse_cards
from controller.kernel.errors import RulesError

CLASSIC = "blackjack-classic"
TWENTY_ONE = "blackjack-21"
BOUNDLESS = "blackjack-boundless"
ALL_GAMES = (CLASSIC, TWENTY_ONE, BOUNDLESS)


def shoe_order(
    game: str, boxes: Sequence[tuple[str, str]], up: str, hole: str, *rest: str
) -> list[str]:
    """The cards of a round in the live deal order of ``game`` (docs/rules-blackjack.md,
    Where the games differ)."""
    firsts = [first for first, _ in boxes]
    seconds = [second for _, second in boxes]
    if game == CLASSIC:
        return [*firsts, hole, *seconds, up, *rest]
    return [*firsts, up, *seconds, hole, *rest]


def run(
    game: str,
    boxes: Sequence[tuple[str, str]],
    up: str,
    hole: str,
    rest: Sequence[str] = (),
    decisions: Sequence[Sequence[str]] | None = None,
    insurance: Sequence[bool] | None = None,
) -> dict[str, Any]:
    return replay(
        {
            "game": game,
            "cards": shoe_order(game, boxes, up, hole, *rest),
            "boxes": len(boxes),
            "insurance": list(insurance or [False] * len(boxes)),
            "decisions": [list(tokens) for tokens in (decisions or [[] for _ in boxes])],
        }
    )


def live(game: str, boxes: Sequence[tuple[str, str]], up: str, hole: str) -> BlackjackRound:
    """A live round after its initial deal."""
    round_ = BlackjackRound(game, boxes=len(boxes))
    for text in shoe_order(game, boxes, up, hole):
        step = round_.next_step()
        assert isinstance(step, CardNeeded)
        round_.deal(parse_card(text))
    return round_


def decision(round_: BlackjackRound) -> DecisionNeeded:
    step = round_.next_step()
    assert isinstance(step, DecisionNeeded), step
    return step


# -- totals and blackjack ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("cards", "total", "soft"),
    [
        (["AS", "9H"], 20, True),
        (["AS", "9D", "5C"], 15, False),
        (["AS", "AD"], 12, True),
        (["AS", "AD", "9C"], 21, True),
        (["AS", "AD", "AC", "AH", "7S"], 21, True),
        (["KS", "QD", "2C"], 22, False),
        (["AS", "6D"], 17, True),
        (["TS", "6D", "AC"], 17, False),
    ],
)
def test_hand_totals_soft_and_hard(cards: list[str], total: int, soft: bool) -> None:
    assert hand_total(parse_cards(cards)) == (total, soft)


def test_blackjack_is_ace_and_ten_value_on_an_unsplit_hand_only() -> None:
    for ten in ("TS", "JH", "QD", "KC"):
        assert is_blackjack(parse_cards(["AS", ten]))
        assert is_blackjack(parse_cards([ten, "AS"]))
        assert not is_blackjack(parse_cards(["AS", ten]), from_split=True)
    assert not is_blackjack(parse_cards(["AS", "5D", "5C"]))
    assert not is_blackjack(parse_cards(["AS", "AD"]))


@pytest.mark.parametrize("game", ALL_GAMES)
def test_blackjack_pays_three_to_two(game: str) -> None:
    result = run(game, [("AS", "KH")], up="9D", hole="7C", rest=["TC"])
    assert result["boxes"][0]["net"] == 1.5


@pytest.mark.parametrize("game", ALL_GAMES)
def test_split_ace_and_ten_is_21_not_blackjack(game: str) -> None:
    # Dealer T+6 draws 5: a three-card 21. Two split A+T hands push; as BJs they would win 3:2.
    result = run(
        game,
        [("AS", "AD")],
        up="TH",
        hole="6C",
        rest=["KH", "QC", "5S"],
        decisions=[["P"]],
    )
    box = result["boxes"][0]
    assert box["hands"] == [["AS", "KH"], ["AD", "QC"]]
    assert result["dealer"] == (["6C", "TH", "5S"] if game == CLASSIC else ["TH", "6C", "5S"])
    assert box["net"] == 0.0
    # Against a dealer 19 each split 21 wins 1:1, not 3:2.
    result = run(game, [("AS", "AD")], up="TH", hole="9C", rest=["KH", "QC"], decisions=[["P"]])
    assert result["boxes"][0]["net"] == 2.0


def test_split_aces_take_one_card_each_and_ask_nothing() -> None:
    round_ = live(CLASSIC, [("AS", "AD")], up="9H", hole="7C")
    assert "P" in decision(round_).options
    round_.decide(1, 1, "P")
    assert round_.next_step() == CardNeeded("box1.hand1")
    round_.deal(parse_card("2C"))  # 13 soft: a normal hand would be asked, split aces stand
    assert round_.next_step() == CardNeeded("box1.hand2")
    round_.deal(parse_card("3C"))
    assert round_.next_step() == CardNeeded("dealer")


# -- dealer ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cards", "draws"),
    [
        (["TS", "6D"], True),
        (["AS", "5D"], True),  # soft 16 hits
        (["AS", "6D"], False),  # soft 17 stands (S17)
        (["TS", "7D"], False),
        (["AS", "5D", "AC"], False),  # soft 17 again
        (["9S", "7D"], True),
        (["TS", "2D", "4C"], True),
    ],
)
def test_dealer_hits_16_and_stands_on_every_17(cards: list[str], draws: bool) -> None:
    assert dealer_must_draw(parse_cards(cards)) is draws


@pytest.mark.parametrize("game", ALL_GAMES)
def test_dealer_draws_to_17_then_settles(game: str) -> None:
    result = run(game, [("TS", "8H")], up="5D", hole="AC", rest=["KC", "3S"])
    # Dealer A+5 = soft 16 hits K (16 hard), hits 3 = 19: the player's 18 loses.
    assert result["dealer"][-2:] == ["KC", "3S"]
    assert result["boxes"][0]["net"] == -1.0
    assert result["cards_used"] == 6


@pytest.mark.parametrize("game", [CLASSIC, TWENTY_ONE])
def test_dealer_skips_play_when_every_hand_busted_or_blackjack(game: str) -> None:
    result = run(
        game,
        [("TS", "6H"), ("AS", "QD")],
        up="5D",
        hole="6C",
        rest=["KC", "2S", "2D"],
        decisions=[["H"], []],
    )
    assert result["dealer"] == (["6C", "5D"] if game == CLASSIC else ["5D", "6C"])
    assert result["cards_used"] == 7
    assert [box["net"] for box in result["boxes"]] == [-1.0, 1.5]


def test_boundless_dealer_plays_even_when_every_hand_is_finished() -> None:
    result = run(BOUNDLESS, [("TS", "6H")], up="5D", hole="6C", rest=["KC", "2S", "9D"])
    # The one player hits 16 (auto-play would stand: we say H) and busts; the dealer still
    # draws 2 and 9 to 22, which Bust Bonus needs.
    assert result["boxes"][0]["net"] == -1.0
    result = run(
        BOUNDLESS,
        [("TS", "6H")],
        up="5D",
        hole="6C",
        rest=["KC", "2S", "9D"],
        decisions=[["H"]],
    )
    assert result["dealer"] == ["5D", "6C", "2S", "9D"]
    assert result["side_bets"]["bust_bonus"] == 2.0  # bust with 4 cards pays 2:1


@pytest.mark.parametrize("game", ALL_GAMES)
def test_dealer_blackjack_beats_everything_but_a_blackjack(game: str) -> None:
    result = run(
        game,
        [("TS", "TH"), ("AS", "KD")] if game != BOUNDLESS else [("TS", "TH")],
        up="KC",
        hole="AH",
    )
    assert result["boxes"][0]["net"] == -1.0
    if game != BOUNDLESS:
        assert result["boxes"][1]["net"] == 0.0
    assert result["cards_used"] == 2 * len(result["boxes"]) + 2


def test_dealer_blackjack_ends_the_boundless_round_at_once() -> None:
    round_ = live(BOUNDLESS, [("9S", "2H")], up="TD", hole="AC")
    assert round_.complete
    assert round_.next_step() is None
    assert round_.public_view()["dealer"]["cards"] == ["TD", "AC"]
    # With an Ace up, the insurance window comes first, then the round ends.
    round_ = live(BOUNDLESS, [("9S", "2H")], up="AD", hole="KC")
    step = decision(round_)
    assert (step.kind, step.default) == ("insurance", "N")
    round_.decide(1, 1, "N")
    assert round_.complete
    # A shared BJ pushes against the dealer's BJ.
    result = run(BOUNDLESS, [("AS", "KH"), ("AS", "KH")][:1], up="AD", hole="QC")
    assert result["boxes"][0]["net"] == 0.0


def test_dealer_without_blackjack_keeps_playing_after_the_peek() -> None:
    round_ = live(CLASSIC, [("9S", "7H")], up="AD", hole="9C")
    assert decision(round_).kind == "insurance"
    round_.decide(1, 1, "Y")
    assert decision(round_).kind == "play"


# -- insurance and even money -------------------------------------------------------------


@pytest.mark.parametrize("game", ALL_GAMES)
def test_insurance_pays_two_to_one_on_dealer_blackjack(game: str) -> None:
    taken = run(game, [("9S", "7H")], up="AD", hole="KC", insurance=[True])
    assert taken["boxes"][0]["net"] == 0.0  # -1 main bet, +0.5 x 2 insurance
    declined = run(game, [("9S", "7H")], up="AD", hole="KC", insurance=[False])
    assert declined["boxes"][0]["net"] == -1.0


@pytest.mark.parametrize("game", ALL_GAMES)
def test_insurance_loses_half_when_dealer_has_no_blackjack(game: str) -> None:
    result = run(game, [("TS", "9H")], up="AD", hole="7C", insurance=[True], decisions=[["S"]])
    assert result["boxes"][0]["net"] == 1.0 - 0.5  # 19 beats soft 18, insurance lost


def test_classic_offers_even_money_to_a_blackjack_and_insurance_to_the_rest() -> None:
    round_ = live(CLASSIC, [("AS", "KH"), ("9S", "7H")], up="AD", hole="6C")
    first = decision(round_)
    assert (first.kind, first.box, first.default) == ("even_money", 1, "N")
    round_.decide(1, 1, "Y")
    second = decision(round_)
    assert (second.kind, second.box) == ("insurance", 2)


@pytest.mark.parametrize(
    ("hole", "take", "net"),
    [
        ("KC", True, 1.0),  # even money is paid 1:1 at once, dealer BJ or not
        ("6C", True, 1.0),
        ("KC", False, 0.0),  # declined: BJ against BJ pushes
        ("6C", False, 1.5),  # declined: the BJ is paid 3:2
    ],
)
def test_even_money(hole: str, take: bool, net: float) -> None:
    result = run(CLASSIC, [("AS", "KH")], up="AD", hole=hole, rest=["5S"], insurance=[take])
    assert result["boxes"][0]["net"] == net


@pytest.mark.parametrize("game", [TWENTY_ONE, BOUNDLESS])
def test_insurance_is_offered_to_a_blackjack_where_there_is_no_even_money(game: str) -> None:
    round_ = live(game, [("AS", "KH")], up="AD", hole="6C")
    assert decision(round_).kind == "insurance"
    result = run(game, [("AS", "KH")], up="AD", hole="KC", insurance=[True])
    assert result["boxes"][0]["net"] == 0.0 + 1.0  # BJ pushes, insurance wins 2:1 on 0.5


def test_no_offer_when_the_up_card_is_not_an_ace() -> None:
    round_ = live(CLASSIC, [("9S", "7H")], up="KD", hole="6C")
    assert decision(round_).kind == "play"


def test_unanswered_insurance_defaults_to_declined() -> None:
    round_ = live(TWENTY_ONE, [("9S", "7H")], up="AD", hole="6C")
    assert decision(round_).default == "N"


# -- surrender ------------------------------------------------------------------------------


@pytest.mark.parametrize("up", ["2D", "5C", "9H"])
def test_boundless_surrender_against_a_non_ace_non_ten(up: str) -> None:
    result = run(BOUNDLESS, [("TS", "6H")], up=up, hole="8C", rest=["7S"], decisions=[["R"]])
    assert result["boxes"][0]["net"] == -0.5
    assert result["boxes"][0]["hands"] == [["TS", "6H"]]


@pytest.mark.parametrize("up", ["AD", "TC", "JH", "QS", "KD"])
def test_no_surrender_against_an_ace_or_ten(up: str) -> None:
    with pytest.raises(RulesError, match="'R' is not legal"):
        run(BOUNDLESS, [("TS", "6H")], up=up, hole="7C", rest=["2S"], decisions=[["R"]])


def test_surrender_only_on_the_initial_hand_before_any_action() -> None:
    with pytest.raises(RulesError, match="'R' is not legal"):
        run(BOUNDLESS, [("5S", "6H")], up="9D", hole="8C", rest=["2S"], decisions=[["H", "R"]])
    with pytest.raises(RulesError, match="'R' is not legal"):
        run(BOUNDLESS, [("8S", "8H")], up="9D", hole="8C", rest=["2S"], decisions=[["P", "R"]])


@pytest.mark.parametrize("game", [CLASSIC, TWENTY_ONE])
def test_no_surrender_in_classic_and_21(game: str) -> None:
    round_ = live(game, [("TS", "6H")], up="9D", hole="8C")
    assert "R" not in decision(round_).options


# -- double ---------------------------------------------------------------------------------


@pytest.mark.parametrize("game", ALL_GAMES)
def test_double_takes_one_card_and_doubles_the_stake(game: str) -> None:
    won = run(game, [("6S", "5H")], up="6D", hole="TC", rest=["2S", "9C"], decisions=[["D"]])
    # 6+5 doubles onto 2 = 13 and stands by itself; dealer 16 draws 9 and busts.
    assert won["boxes"][0]["hands"] == [["6S", "5H", "2S"]]
    assert won["boxes"][0]["net"] == 2.0
    lost = run(game, [("6S", "5H")], up="9D", hole="TC", rest=["2S"], decisions=[["D"]])
    assert lost["boxes"][0]["net"] == -2.0


@pytest.mark.parametrize("game", ALL_GAMES)
def test_double_only_on_the_first_two_cards(game: str) -> None:
    with pytest.raises(RulesError, match="'D' is not legal"):
        run(game, [("2S", "3H")], up="9D", hole="TC", rest=["2C", "5S"], decisions=[["H", "D"]])


@pytest.mark.parametrize(
    ("game", "allowed"), [(CLASSIC, True), (BOUNDLESS, True), (TWENTY_ONE, False)]
)
def test_double_after_split(game: str, allowed: bool) -> None:
    request = dict(
        boxes=[("8S", "8H")],
        up="6D",
        hole="TC",
        rest=["3C", "9S", "4S", "9D", "8D"],
        decisions=[["P", "D", "S"]],
    )
    if not allowed:
        with pytest.raises(RulesError, match="'D' is not legal"):
            run(game, **request)  # type: ignore[arg-type]
        return
    result = run(game, **request)  # type: ignore[arg-type]
    # Hand 1 8+3 doubles onto 9 = 20; hand 2 8+4 = 12 stands; dealer 16 draws 9: bust.
    assert result["boxes"][0]["hands"] == [["8S", "3C", "9S"], ["8H", "4S"]]
    assert result["boxes"][0]["net"] == 3.0


# -- split and resplit ------------------------------------------------------------------------


@pytest.mark.parametrize("game", ALL_GAMES)
def test_split_by_value_king_and_queen(game: str) -> None:
    round_ = live(game, [("KS", "QH")], up="6D", hole="TC")
    step = round_.next_step()
    if game == BOUNDLESS:
        assert step.kind == "more_cards"  # the platform asks its players
        result = run(
            game,
            [("KS", "QH")],
            up="6D",
            hole="TC",
            rest=["9C", "8C", "5C"],
            decisions=[["P", "S", "S"]],
        )
        assert result["boxes"][0]["hands"] == [["KS", "9C"], ["QH", "8C"]]
    else:
        assert "P" in step.options
    round_ = live(CLASSIC, [("KS", "9H")], up="6D", hole="TC")
    assert "P" not in decision(round_).options


@pytest.mark.parametrize("game", [CLASSIC, BOUNDLESS])
def test_no_resplit_outside_21(game: str) -> None:
    with pytest.raises(RulesError, match="'P' is not legal"):
        run(
            game,
            [("8S", "8H")],
            up="6D",
            hole="TC",
            rest=["8C", "8D", "8S"],
            decisions=[["P", "P"]],
        )


def test_resplit_to_three_hands_in_21_and_the_fourth_match_is_just_a_card() -> None:
    result = run(
        TWENTY_ONE,
        [("8S", "8H")],
        up="6D",
        hole="TC",
        rest=["8C", "8D", "2S", "3S", "9C", "5H"],
        decisions=[["P", "P"]],
    )
    # Hand 1 (8S) draws 8C: resplit. Hand 1 draws 8D, the fourth 8: just a card, and the
    # tokens have run out, so auto-play stands on 16. Hand 2 (8C) draws 2 = 10, hits 3 = 13
    # and stands; hand 3 (8H) draws 9 = 17. The dealer's 16 draws 5: 21 beats all three.
    assert result["boxes"][0]["hands"] == [["8S", "8D"], ["8C", "2S", "3S"], ["8H", "9C"]]
    assert result["dealer"] == ["6D", "TC", "5H"]
    assert result["boxes"][0]["net"] == -3.0


def test_21_fourth_match_cannot_be_split() -> None:
    round_ = live(TWENTY_ONE, [("8S", "8H")], up="6D", hole="TC")
    round_.decide(1, 1, "P")
    round_.deal(parse_card("8C"))
    assert "P" in decision(round_).options
    round_.decide(1, 1, "P")
    round_.deal(parse_card("8D"))  # the fourth 8, on hand 1
    assert "P" not in decision(round_).options
    assert len(round_.box_hands(1)) == 3


def test_21_second_hand_may_resplit_when_the_first_did_not() -> None:
    round_ = live(TWENTY_ONE, [("8S", "8H")], up="6D", hole="TC")
    round_.decide(1, 1, "P")
    round_.deal(parse_card("TC"))
    round_.decide(1, 1, "S")
    round_.deal(parse_card("8C"))
    step = decision(round_)
    assert (step.hand, "P" in step.options) == (2, True)
    round_.decide(1, 2, "P")
    assert round_.next_step() == CardNeeded("box1.hand2")
    assert [len(hand.cards) for hand in round_.box_hands(1)] == [2, 1, 1]


def test_21_never_resplits_aces() -> None:
    round_ = live(TWENTY_ONE, [("AS", "AH")], up="6D", hole="TC")
    round_.decide(1, 1, "P")
    round_.deal(parse_card("AC"))  # a third ace: split aces take one card and stand
    assert round_.next_step() == CardNeeded("box1.hand2")
    assert len(round_.box_hands(1)) == 2


# -- auto-stand, auto-play, insufficient balance ------------------------------------------------


@pytest.mark.parametrize("game", [CLASSIC, TWENTY_ONE])
def test_21_stands_by_itself(game: str) -> None:
    round_ = live(game, [("7S", "4H")], up="6D", hole="TC")
    round_.decide(1, 1, "H")
    round_.deal(parse_card("KC"))
    assert round_.next_step() == CardNeeded("dealer")


@pytest.mark.parametrize(
    ("cards", "token"),
    [
        (["2S", "3H"], "H"),
        (["5S", "6H"], "H"),
        (["5S", "7H"], "S"),
        (["AS", "5H"], "S"),  # Ace counts 11: 16 stands
        (["AS", "AH"], "S"),  # 12
        (["AS", "5H", "TC"], "S"),  # hard 16
        (["2S", "3H", "4C"], "H"),
    ],
)
def test_auto_play_and_insufficient_balance(cards: list[str], token: str) -> None:
    assert auto_play_token(parse_cards(cards)) == token
    assert insufficient_balance_token(parse_cards(cards)) == token


def test_play_default_is_the_auto_play_choice() -> None:
    round_ = live(CLASSIC, [("2S", "3H")], up="6D", hole="TC")
    assert decision(round_).default == "H"
    round_ = live(CLASSIC, [("AS", "5H")], up="6D", hole="TC")
    assert decision(round_).default == "S"


def test_tokens_running_out_hands_over_to_auto_play() -> None:
    result = run(CLASSIC, [("2S", "3H")], up="7D", hole="TC", rest=["2C", "4C", "AD", "9S"])
    # 5 hits 2 (7), 4 (11), A (12 hard): stands above 11.
    assert result["boxes"][0]["hands"] == [["2S", "3H", "2C", "4C", "AD"]]
    assert result["boxes"][0]["net"] == -1.0
    assert result["cards_used"] == 7


# -- replay errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"game": "blackjack-x", "cards": []}, "unknown blackjack game"),
        ({"game": CLASSIC, "cards": ["AS", "1X"]}, "unknown card"),
        ({"game": CLASSIC, "cards": ["AS", "KD", "9C"]}, "too few cards"),
        ({"game": CLASSIC, "cards": ["AS"] * 9}, "impossible card"),
        ({"game": CLASSIC, "cards": [], "boxes": 6}, "at most 5"),
        ({"game": CLASSIC, "cards": [], "boxes": 0}, "positive integer"),
        ({"game": CLASSIC, "cards": [], "boxes": 2, "insurance": [True]}, "2 booleans"),
        ({"game": CLASSIC, "cards": [], "decisions": [["X"]]}, "unknown token"),
        ({"game": CLASSIC, "cards": "AS KD"}, "'cards' must be a list"),
        ({"game": CLASSIC, "cards": [], "decisions": [[], []]}, "1 token lists"),
    ],
)
def test_replay_rejects_bad_requests(request_: dict[str, Any], message: str) -> None:
    with pytest.raises(RulesError, match=message):
        replay(request_)


def test_replay_ignores_cards_beyond_need_and_counts_cards_used() -> None:
    result = run(CLASSIC, [("TS", "9H")], up="TD", hole="8C", rest=["2S", "3S"])
    assert result == {
        "boxes": [{"net": 1.0, "hands": [["TS", "9H"]], "totals": [19], "outcomes": ["win"]}],
        "dealer": ["8C", "TD"],
        "dealer_total": 18,
        "cards_used": 4,
    }
