"""Dragon Tiger: the rules against hand-worked rounds, the live round's steps, `rules replay`
and `livetable rtp --exact` against closed forms and the published figures."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from controller.games.base import CardNeeded
from controller.games.dragon_tiger import (
    BET_IDS,
    available_bets,
    play_dragon_tiger,
    replay,
    settle_bets,
)
from controller.games.dragon_tiger_rtp import EXACT_DENOMINATOR, exact_rtp, simulate
from controller.games.registry import game_spec
from controller.kernel.cards import parse_card
from controller.kernel.errors import RulesError

REPO_ROOT = Path(__file__).resolve().parents[2]
GAME = "dragon-tiger"


@pytest.mark.parametrize(
    ("dragon", "tiger", "winner", "nets"),
    [
        # King high: the Dragon's king beats the Tiger's queen.
        ("KH", "QS", "dragon", (1.0, -1.0, -1.0, -1.0)),
        # Ace low: a two beats it.
        ("AS", "2C", "tiger", (-1.0, 1.0, -1.0, -1.0)),
        ("10D", "9D", "dragon", (1.0, -1.0, -1.0, -1.0)),
        ("JC", "TC", "dragon", (1.0, -1.0, -1.0, -1.0)),
        # A tie of ranks, suits differ: half of each Dragon/Tiger bet lost, Tie pays 11:1.
        ("7H", "7D", "tie", (-0.5, -0.5, 11.0, -1.0)),
        # Same rank and suit: the Suited Tie pays 50:1 too.
        ("7H", "7H", "tie", (-0.5, -0.5, 11.0, 50.0)),
        ("AS", "AS", "tie", (-0.5, -0.5, 11.0, 50.0)),
    ],
)
def test_hand_worked_rounds(dragon: str, tiger: str, winner: str, nets: tuple) -> None:
    result = play_dragon_tiger([dragon, tiger])
    assert result["winner"] == winner
    assert result["bets"] == dict(zip(("dragon", "tiger", "tie", "suited_tie"), nets, strict=True))
    assert result["bets"] == dict(settle_bets(parse_card(dragon), parse_card(tiger)))
    assert result["dragon"] == [str(parse_card(dragon))]
    assert result["tiger"] == [str(parse_card(tiger))]
    assert result["suited_tie"] == (nets[3] == 50.0)


def test_a_round_deals_one_card_face_up_to_the_dragon_then_one_to_the_tiger() -> None:
    round_ = game_spec(GAME).new_round(3)
    assert round_.game == GAME
    view = round_.public_view()
    assert (view["dragon"], view["tiger"], view["dragon_total"], view["next"]) == (
        [],
        [],
        None,
        "dragon",
    )
    assert round_.next_step() == CardNeeded("dragon")  # face up
    round_.deal(parse_card("QC"))
    assert round_.next_step() == CardNeeded("tiger")
    assert (round_.cards_held("dragon"), round_.cards_held("tiger")) == (1, 0)
    with pytest.raises(RulesError, match="not complete: the next card goes to the tiger"):
        round_.settlement()
    round_.deal(parse_card("KC"))
    assert round_.next_step() is None and round_.complete
    assert (round_.cards_held("dragon"), round_.cards_held("tiger")) == (1, 1)
    view = round_.public_view()
    assert view == {
        "game": GAME,
        "round_number": 3,
        "dragon": ["QC"],
        "tiger": ["KC"],
        "dragon_total": 12,
        "tiger_total": 13,
        "next": None,
        "complete": True,
        "winner": "tiger",
    }
    with pytest.raises(RulesError, match="complete"):
        round_.deal(parse_card("2C"))
    with pytest.raises(RulesError, match="no decisions"):
        round_.decide(1, 1, "H")
    with pytest.raises(RulesError, match="no hand 'player'"):
        round_.cards_held("player")
    assert round_.settlement()["cards_used"] == 2


def test_every_bet_is_open_in_every_round() -> None:
    assert available_bets(1) == available_bets(200) == BET_IDS
    assert game_spec(GAME).available_bets(90) == list(BET_IDS)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"game": GAME, "cards": ["AS"]}, "too few cards"),
        ({"game": GAME, "cards": "AS 2C"}, "must be a list"),
        ({"game": GAME, "cards": ["AS", "ZZ"]}, "ZZ"),
        ({"game": GAME, "mode": "traditional", "cards": ["AS", "2C"]}, "mode"),
    ],
)
def test_a_line_that_cannot_be_played_says_why(request_: dict, message: str) -> None:
    with pytest.raises(RulesError, match=message):
        replay(request_)


def _closed_form() -> dict[str, Fraction]:
    """The four RTPs by counting ranks and suits: after any first card, 31 of the other 415
    cards share its rank and 7 of those its suit too; a rank tie otherwise splits evenly."""
    tie = Fraction(31, 415)
    suited = Fraction(7, 415)
    win = (1 - tie) / 2
    main = 1 + win - win - tie / 2
    return {"dragon": main, "tiger": main, "tie": 12 * tie, "suited_tie": 51 * suited}


def test_the_exact_rtp_is_the_closed_form_and_the_published_house_edges() -> None:
    exact = exact_rtp()
    assert exact == _closed_form()
    assert EXACT_DENOMINATOR == 416 * 415
    # Wizard of Odds, "Dragon Tiger" (8 decks): Dragon/Tiger 3.73 %; Tie at 11 to 1
    # 10.36 % (32.77 % at 8 to 1); Suited Tie at 50 to 1 13.98 %.
    edges = {bet: round(float(1 - rtp) * 100, 2) for bet, rtp in exact.items()}
    assert edges == {"dragon": 3.73, "tiger": 3.73, "tie": 10.36, "suited_tie": 13.98}


def test_a_seeded_simulation_through_the_live_round_agrees_with_the_exact_figures() -> None:
    simulated = simulate("", 20_000, seed=5)
    assert simulated == simulate("", 20_000, seed=5)
    exact = exact_rtp()
    for bet, (rtp, low, high) in simulated.items():
        assert low <= rtp <= high
        assert low - 0.02 <= float(exact[bet]) <= high + 0.02, bet


def _livetable(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        check=False,
    )


def test_livetable_rtp_exact_prints_every_bet_to_four_decimals() -> None:
    result = _livetable("rtp", "--game", GAME, "--exact")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "dragon-tiger, exact: first round off a full 8-deck shoe"
    # The PAR sheet's table: one row per bet, its RTP first.
    expected = {bet: f"{float(rtp) * 100:.4f}%" for bet, rtp in _closed_form().items()}
    rows = [line.split() for line in lines]
    shown = {row[0]: row[1] for row in rows if row and row[0] in expected}
    assert shown == expected
    assert shown["dragon"] == "96.2651%"


def test_livetable_rules_replay_plays_dragon_tiger_lines() -> None:
    lines = [
        {"game": GAME, "cards": ["9S", "9S"]},
        {"game": GAME, "cards": ["2H"]},
        {"game": "baccarat", "cards": ["AS", "TD", "5H", "KC", "9S"]},
    ]
    result = _livetable("rules", "replay", stdin="".join(json.dumps(line) + "\n" for line in lines))
    assert result.returncode == 1  # one line could not be played
    first, second, third = (json.loads(line) for line in result.stdout.splitlines())
    assert first["winner"] == "tie" and first["bets"]["suited_tie"] == 50.0
    assert "too few cards" in second["error"]
    assert third["winner"] in ("player", "banker", "tie")


def test_the_rules_page_gives_the_figures_the_enumeration_gives() -> None:
    page = (REPO_ROOT / "docs" / "rules-dragon-tiger.md").read_text()
    names = {"Dragon": "dragon", "Tiger": "tiger", "Tie (11:1)": "tie"}
    names["Suited Tie (50:1)"] = "suited_tie"
    exact = exact_rtp()
    for name, bet in names.items():
        row = f"| {name} | {float(exact[bet]) * 100:.4f} % |"
        assert row in page, row
