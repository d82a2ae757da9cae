"""`livetable rules replay` refuses what it cannot take as written, in words a test lab reads:
a key it does not know (naming the nearest one it does, so a misspelt ``decision`` is never
dropped and its box auto-played), a rule variant (the choices as words, not a Python tuple),
and a line that is not JSON (its real line and column, also when the line is cut short)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from controller.tools.rules_cli import replay_line

TIMEOUT_S = 60.0
BLACKJACK_CARDS = ["TS", "6D", "7H", "5C", "9S"]
BACCARAT_CARDS = ["AS", "TD", "5H", "KC", "9S"]


def _replay(*lines: str) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", "rules", "replay"],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_a_misspelt_decisions_key_is_refused_not_auto_played() -> None:
    line = {"game": "blackjack-classic", "cards": BLACKJACK_CARDS, "decision": [["H"]]}
    status, answers, stderr = _replay(json.dumps(line))
    assert status == 1, answers
    assert answers == [
        {
            "line": 1,
            "error": "line 1: unknown key 'decision': did you mean 'decisions'? "
            "(a blackjack-classic line takes game, cards, boxes, insurance and decisions)",
        }
    ]
    assert stderr.splitlines() == [
        "livetable: error: rules replay: 1 of 1 line(s) could not be played (line 1)"
    ]
    # Spelt right, the same line plays the box's hit.
    line["decisions"] = line.pop("decision")
    status, answers, _ = _replay(json.dumps(line))
    assert status == 0 and answers[0]["boxes"][0]["hands"] == [["TS", "7H", "9S"]], answers


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (
            {"game": "baccarat", "card": BACCARAT_CARDS},
            "unknown key 'card': did you mean 'cards'? (a baccarat line takes game, mode and "
            "cards)",
        ),
        (
            {"game": "baccarat", "mdoe": "no-commission", "cards": BACCARAT_CARDS},
            "unknown key 'mdoe': did you mean 'mode'? (a baccarat line takes game, mode and cards)",
        ),
        (
            {"game": "blackjack-boundless", "cards": BLACKJACK_CARDS, "colour": "red"},
            "unknown key 'colour' (a blackjack-boundless line takes game, cards, boxes, "
            "insurance and decisions)",
        ),
        (
            {"game": "blackjack-21", "cards": BLACKJACK_CARDS, "box": 2, "insurence": [True]},
            "unknown key 'box': did you mean 'boxes'?; unknown key 'insurence': did you mean "
            "'insurance'? (a blackjack-21 line takes game, cards, boxes, insurance and "
            "decisions)",
        ),
        (
            {"gmae": "baccarat", "cards": BACCARAT_CARDS},
            "unknown key 'gmae': did you mean 'game'? (a line needs game: baccarat, "
            "blackjack-boundless, blackjack-classic, blackjack-21 or dragon-tiger)",
        ),
        (
            {"cards": BACCARAT_CARDS},
            "a line needs game: baccarat, blackjack-boundless, blackjack-classic, blackjack-21 "
            "or dragon-tiger",
        ),
        (
            {"game": "bacarat", "cards": BACCARAT_CARDS},
            "unknown game 'bacarat': did you mean 'baccarat'? (expected baccarat, "
            "blackjack-boundless, blackjack-classic, blackjack-21 or dragon-tiger)",
        ),
        (
            {"game": "baccarat", "mode": "cheap", "cards": BACCARAT_CARDS},
            "unknown baccarat mode 'cheap': expected traditional or no-commission",
        ),
        (
            {"game": "baccarat", "mode": "no-comission", "cards": BACCARAT_CARDS},
            "unknown baccarat mode 'no-comission': did you mean 'no-commission'? (expected "
            "traditional or no-commission)",
        ),
    ],
)
def test_a_refused_line_says_what_it_expected(request_: dict[str, Any], error: str) -> None:
    assert replay_line(json.dumps(request_), 4) == {"line": 4, "error": f"line 4: {error}"}


def test_a_truncated_line_is_reported_where_it_stops() -> None:
    whole = json.dumps({"game": "baccarat", "cards": BACCARAT_CARDS})
    cut = whole[:30]  # '{"game": "baccarat", "cards": '
    status, answers, _ = _replay(whole, "", cut, whole)
    assert status == 1
    assert answers[0]["winner"] == "banker" and answers[2]["winner"] == "banker"
    assert answers[1] == {
        "line": 3,
        "error": f"line 3: malformed JSON at column {len(cut) + 1}: Expecting value "
        "(the line ends before its JSON does: cut short?)",
    }


def test_invalid_json_inside_a_line_names_its_column() -> None:
    line = '{"game": "baccarat", "cards": ["AS" "TD"]}'
    column = line.index('"TD"') + 1
    assert replay_line(line, 2) == {
        "line": 2,
        "error": f"line 2: malformed JSON at column {column}: Expecting ',' delimiter",
    }
    # A line with Windows line ending is one line too.
    assert replay_line(line + "\r\n", 2) == replay_line(line, 2)
