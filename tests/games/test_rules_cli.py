"""`livetable rules replay` and `livetable rtp` as another program sees them: a real process."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import types
from pathlib import Path

import pytest

from controller.kernel.errors import RulesError
from controller.tools import rules_cli

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60

BACCARAT_LINE = {
    "game": "baccarat",
    "mode": "traditional",
    "cards": ["AS", "TD", "5H", "KC", "9S", "3D", "2C"],
}


def _run(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LIVETABLE, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=REPO_ROOT,
        check=False,
    )


def test_replay_answers_each_line_before_the_next_is_written() -> None:
    """Flushed after each line: a caller can wait for each answer (no read-ahead, no buffer)."""
    process = subprocess.Popen(
        [*LIVETABLE, "rules", "replay"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        line = {"game": "baccarat", "mode": "no-commission"}
        for cards, winner in (
            (["KS", "3H", "5D", "3C", "KD"], "banker"),
            (["4S", "2H", "5D", "3C"], "player"),
            (["3S", "3H", "3D", "3C"], "tie"),
        ):
            process.stdin.write(json.dumps({**line, "cards": cards}) + "\n")
            process.stdin.flush()
            answer = json.loads(process.stdout.readline())
            assert answer["winner"] == winner
        process.stdin.close()
        assert process.wait(timeout=TIMEOUT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()


def test_replay_output_format_and_error_lines_keep_the_stream_going() -> None:
    lines = [
        json.dumps(BACCARAT_LINE),
        "this is not json",
        json.dumps({"game": "baccarat", "mode": "traditional", "cards": ["AS", "TD"]}),
        json.dumps({"game": "baccarat", "mode": "traditional", "cards": ["AS", "XX", "5H"]}),
        json.dumps({"game": "baccarat", "mode": "commission", "cards": ["AS"]}),
        json.dumps({"game": "poker", "cards": []}),
        json.dumps(["not", "an", "object"]),
        "",
        json.dumps(
            {"game": "baccarat", "mode": "no-commission", "cards": ["10S", "3H", "5D", "3C", "KD"]}
        ),
    ]
    result = _run(["rules", "replay"], "\n".join(lines) + "\n")
    # Any line that failed fails the run, and stderr counts them in one line.
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "livetable: error: rules replay: 6 of 8 line(s) could not be played (line 2, 3, 4, 5, 6, 7)"
    ]
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == len(lines) - 1  # the blank line is skipped
    first = answers[0]
    assert first == {
        "player": ["AS", "5H"],
        "banker": ["TD", "KC", "9S"],
        "player_total": 6,
        "banker_total": 9,
        "winner": "banker",
        "cards_used": 5,
        "bets": first["bets"],
    }
    assert len(first["bets"]) == 18
    assert first["bets"]["banker"] == 0.95
    assert first["bets"]["player"] == -1.0
    assert "malformed JSON" in answers[1]["error"]
    assert "too few cards" in answers[2]["error"]
    assert "unknown card 'XX'" in answers[3]["error"]
    assert "mode" in answers[4]["error"]
    assert "unknown game" in answers[5]["error"]
    assert "JSON object" in answers[6]["error"]
    # Each error names its input line: a lab finds the line in a file of thousands.
    for number, answer in enumerate(answers[1:7], start=2):
        assert answer["line"] == number
        assert answer["error"].startswith(f"line {number}: ")
    assert answers[1]["error"].startswith("line 2: malformed JSON at column 1: ")
    last = answers[7]
    assert last["player"] == ["TS", "5D", "KD"]  # 10S normalised
    assert last["bets"]["banker"] == 0.5  # no-commission Banker 6
    assert set(answers[0]) == set(last)


def test_blackjack_lines_go_to_the_blackjack_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    received: list[dict[str, object]] = []

    def replay(request: dict[str, object]) -> dict[str, object]:
        received.append(request)
        if request.get("decisions") == [["X"]]:
            raise RulesError("box 1: unknown token 'X'")
        return {"boxes": [], "dealer": [], "cards_used": 0}

    monkeypatch.setitem(
        sys.modules, "controller.games.blackjack_replay", types.SimpleNamespace(replay=replay)
    )
    request = {"game": "blackjack-21", "cards": ["AS"], "decisions": [["H"]]}
    assert rules_cli.replay_line(json.dumps(request)) == {
        "boxes": [],
        "dealer": [],
        "cards_used": 0,
    }
    assert received == [request]
    bad = rules_cli.replay_line(json.dumps({**request, "decisions": [["X"]]}))
    assert bad == {"error": "box 1: unknown token 'X'"}


def test_blackjack_lines_without_the_blackjack_rules_get_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "controller.games.blackjack_replay", None)  # import fails
    answer = rules_cli.replay_line(json.dumps({"game": "blackjack-classic", "cards": []}))
    assert "cannot be replayed" in answer["error"]
    # Baccarat is unaffected.
    assert rules_cli.replay_line(json.dumps(BACCARAT_LINE))["winner"] == "banker"


def test_a_bug_in_the_rules_is_an_error_line_not_a_dead_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(request: dict[str, object]) -> dict[str, object]:
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(
        sys.modules, "controller.games.blackjack_replay", types.SimpleNamespace(replay=broken)
    )
    answer = rules_cli.replay_line(json.dumps({"game": "blackjack-21"}))
    assert answer == {"error": "internal error: ZeroDivisionError: boom"}


def test_rtp_exact_json_reproduces_the_published_main_bets() -> None:
    result = _run(["rtp", "--game", "baccarat", "--exact", "--json"])
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no progress bar off a terminal
    document = json.loads(result.stdout)
    assert document["method"] == "exact"
    bets = document["bets"]
    assert len(bets) == 18
    # Published 8-deck figures (the rule page's maximum RTP, Wizard of Odds): to 0.01 %.
    assert round(bets["banker"]["rtp"] * 100, 2) == 98.94
    assert round(bets["player"]["rtp"] * 100, 2) == 98.76
    assert round(bets["tie"]["rtp"] * 100, 2) == 85.64


def test_rtp_exact_text_output_no_commission() -> None:
    result = _run(["rtp", "--game", "baccarat", "--mode", "no-commission", "--exact"])
    assert result.returncode == 0, result.stderr
    banker_line = next(line for line in result.stdout.splitlines() if line.startswith("banker "))
    assert "98.5419%" in banker_line  # 1.458 % house edge with Banker 6 paying 1:2


def test_rtp_simulation_json_has_intervals_and_is_reproducible() -> None:
    args = ["rtp", "--game", "baccarat", "--rounds", "20000", "--seed", "7", "--json"]
    first = _run(args)
    assert first.returncode == 0, first.stderr
    document = json.loads(first.stdout)
    assert document["method"] == "simulation"
    assert (document["rounds"], document["seed"]) == (20000, 7)
    for bet, figures in document["bets"].items():
        assert figures["ci_low"] <= figures["rtp"] <= figures["ci_high"], bet
    # Seeded: the same seed gives the same figures, another seed different ones.
    assert json.loads(_run(args).stdout)["bets"] == document["bets"]
    other = json.loads(_run([*args[:-2], "8", "--json"]).stdout)
    assert other["bets"] != document["bets"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rtp", "--game", "blackjack-classic", "--exact"], "baccarat, dragon-tiger only"),
    ],
)
def test_rtp_refuses_what_it_cannot_do(args: list[str], message: str) -> None:
    result = _run(args)
    assert result.returncode == 1
    assert message in result.stderr


def test_rtp_refuses_a_nonsensical_number_of_rounds_as_a_usage_error() -> None:
    result = _run(["rtp", "--game", "baccarat", "--rounds", "0"])
    assert result.returncode == 2
    assert "argument --rounds: 0 is not a positive whole number" in result.stderr


def test_rtp_needs_a_method() -> None:
    result = _run(["rtp", "--game", "baccarat"])
    assert result.returncode == 2
    assert "--exact" in result.stderr


def test_rtp_draws_a_progress_bar_when_stderr_is_a_terminal() -> None:
    """The bar goes to stderr on a real pty; stdout keeps only the result."""
    master, slave = pty.openpty()
    try:
        process = subprocess.Popen(
            [*LIVETABLE, "rtp", "--game", "baccarat", "--rounds", "3000", "--json"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
            cwd=REPO_ROOT,
        )
        os.close(slave)
        slave = -1
        stdout, _ = process.communicate(timeout=TIMEOUT_S)
        terminal = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child has closed the terminal and all was read
                break
            if not chunk:
                break
            terminal += chunk
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    assert process.returncode == 0
    assert json.loads(stdout)["rounds"] == 3000
    text = terminal.decode()
    assert "3000/3000" in text
    assert "100.0%" in text
    assert "[" + "#" * 40 + "]" in text


def test_replay_mixes_games_with_the_real_blackjack_rules() -> None:
    classic = {
        "game": "blackjack-classic",
        "cards": ["TS", "9H", "7D", "KC", "5S"],
        "boxes": 1,
        "insurance": [False],
        "decisions": [["S"]],
    }
    lines = [
        json.dumps(classic),
        json.dumps(BACCARAT_LINE),
        json.dumps({**classic, "decisions": [["Z"]]}),
        json.dumps({**classic, "game": "blackjack-boundless", "cards": ["TS", "9H"]}),
        json.dumps(BACCARAT_LINE),
    ]
    result = _run(["rules", "replay"], "\n".join(lines) + "\n")
    assert result.returncode == 1, result.stderr
    assert "2 of 5 line(s) could not be played (line 3, 4)" in result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == 5
    assert set(answers[0]) >= {"boxes", "dealer", "cards_used"}
    assert answers[0]["boxes"][0]["hands"] == [["TS", "7D"]]
    # Each hand's total and outcome, as baccarat gives each hand's total and the winner.
    assert answers[0]["boxes"][0]["totals"] == [17]
    assert answers[0]["boxes"][0]["outcomes"] == ["lose"]
    assert answers[0]["dealer"] == ["9H", "KC"] and answers[0]["dealer_total"] == 19
    assert answers[1]["winner"] == "banker"
    assert "error" in answers[2]
    assert "error" in answers[3]  # two cards cannot finish a boundless round
    assert answers[4] == answers[1]
