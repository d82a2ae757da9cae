"""`livetable rtp --exact` as a PAR sheet: JSON for tools, a printable HTML page, refusals.

Baccarat runs through the real command (its enumeration takes a second or two); a blackjack
sheet is built from small shoes, since its 8-deck recursion takes longer than a test may.
"""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from controller.games.blackjack_exact import main_game, shoe_of
from controller.games.boundless_side_bets_exact import card_side_bets_par
from controller.games.par_sheets import GamePar, blackjack_rules_in_words
from controller.tools.par_sheet_html import par_sheet_html

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
REPO_ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LIVETABLE, *args], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300
    )


class _Text(HTMLParser):
    """The page's text and whether every element it opened was closed (a well-formed page)."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag not in ("meta", "br"):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open.pop() == tag, tag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _page_text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    assert parser.open == []
    return " ".join(" ".join(parser.text).split())


def test_baccarat_par_sheet_json_and_html(tmp_path: Path) -> None:
    sheet = tmp_path / "baccarat.html"
    result = _run(["rtp", "--game", "baccarat", "--exact", "--json", "--par-sheet", str(sheet)])
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["method"] == "exact"
    assert document["rules"] and document["timings"]
    bets = document["bets"]
    assert len(bets) == 18
    banker = bets["banker"]
    assert round(banker["rtp"] * 100, 2) == 98.94
    assert {line["label"] for line in banker["lines"]} == {"wins 0.95", "push", "loses 1"}
    for bet, figures in bets.items():
        lines = figures["lines"]
        assert abs(sum(line["probability"] for line in lines) - 1) < 1e-12, bet
        assert abs(1 + sum(line["contribution"] for line in lines) - figures["rtp"]) < 1e-12
        wins = sum(line["probability"] for line in lines if line["net"] > 0)
        assert abs(wins - figures["hit_frequency"]) < 1e-12, bet
        assert figures["standard_deviation"] > 0
        assert "/" in figures["rtp_fraction"]  # exact: a fraction, not only a float
    text = _page_text(sheet.read_text(encoding="utf-8"))
    assert "PAR sheet: baccarat (traditional)" in text
    assert "98.9421 %" in text  # banker RTP, to the fourth place
    for bet in bets:
        assert bet in text
    assert not list(tmp_path.glob("*.partial"))


def test_par_sheet_into_a_missing_folder_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "sheet.html"
    result = _run(["rtp", "--game", "baccarat", "--exact", "--par-sheet", str(target)])
    assert result.returncode == 1
    assert result.stderr.startswith("livetable: error:")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not target.parent.exists()


def test_blackjack_sheet_lays_out_every_bet() -> None:
    shoe = shoe_of("A23456789TJQK")
    result = main_game("blackjack-boundless", shoe)
    side = card_side_bets_par(1)
    bets = {
        "main": result.main_par(),
        "pair": side["pair"],
        "bust_bonus": result.bust_bonus_par(),
        "lucky_trio": side["lucky_trio"],
        "poker_trio": side["poker_trio"],
    }
    sheet = GamePar(
        "blackjack-boundless", None, blackjack_rules_in_words("blackjack-boundless"), bets, {}
    )
    text = _page_text(par_sheet_html(sheet, "test"))
    assert "late surrender, not against an ace or a ten" in text
    for bet, par in bets.items():
        assert bet in text
        assert f"{float(par.rtp) * 100:.4f} %" in text
        for line in par.lines:
            assert line.label in text
    assert "dealer busts with 8+ cards" in text
    assert json.loads(json.dumps(sheet.as_json()))["bets"]["main"]["lines"]
