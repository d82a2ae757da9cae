"""The dispute worked through in docs/operations.md runs as written: its journal is made
again from the command the page gives (the scripted table is deterministic), and the head,
the round list and the export the page shows are what the commands print today."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from controller.service.journal import Journal
from controller.tools.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
DOC = REPO_ROOT / "docs" / "operations.md"
SECTION = DOC.read_text().split("## 5. A dispute, worked through", 1)[1].split("\n## ", 1)[0]
SCRIPTED = SECTION.split("### The same, on a round the demo played", 1)[0]


def _blocks(text: str) -> list[str]:
    return re.findall(r"```(?:sh)?\n(.*?)```", text, re.DOTALL)


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    make = next(block for block in _blocks(SCRIPTED) if "controller.tools.crash_runner" in block)
    argv = make.split(">")[0].split()
    assert argv[:3] == ["python", "-m", "controller.tools.crash_runner"], argv
    path = tmp_path / "t1.journal"
    argv = [sys.executable, *argv[1:]]
    argv[argv.index("--journal") + 1] = str(path)
    subprocess.run(argv, cwd=REPO_ROOT, check=True, capture_output=True, timeout=120)
    return path


def test_the_stored_head_verifies(journal: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verify = next(block for block in _blocks(SCRIPTED) if "--expect-head" in block)
    head = re.search(r"--expect-head (\d+):([0-9a-f]{64})\b", verify)
    assert head is not None
    # The page's hash is the one its own run gave: every card row carries a random salt, so
    # a journal made again has the same rows with other hashes. The command as the page
    # gives it, with this journal's hash of the same row:
    with Journal(journal, read_only=True) as made_again:
        digest = made_again.hash_at(int(head[1]))
    assert digest is not None and digest != head[2]
    assert main(["journal", "verify", str(journal), "--expect-head", f"{head[1]}:{digest}"]) == 0
    assert f"row {head[1]} is there with that hash" in capsys.readouterr().out


def test_the_round_list_says_what_the_page_says(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "rounds", str(journal)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("4 "))
    fields = row.split()
    assert fields[:3] == ["4", "1", "baccarat"]
    # "opened 08:00:26 UTC, settled 08:00:31, no pause, rows 26 to 31"
    assert "08:00:26" in row and "08:00:31" in row and "settled" in row
    assert fields[-1] == "26-31"


def test_the_export_is_the_one_the_page_shows(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = next(block for block in _blocks(SCRIPTED) if block.startswith("round 4 (baccarat"))
    assert main(["journal", "export", str(journal), "--round", "4"]) == 0
    printed = capsys.readouterr().out
    expected = [line.rstrip() for line in shown.splitlines()]
    actual = [line.rstrip() for line in printed.splitlines()]
    assert len(actual) == len(expected)
    for mine, theirs in zip(actual, expected, strict=True):
        theirs = theirs.replace("/tmp/t1.journal", str(journal))
        if "round_settled" in theirs:  # shortened on the page: each "..." leaves some out
            pieces = theirs.split("...")
            assert mine.startswith(pieces[0]) and mine.endswith(pieces[-1]), (mine, theirs)
            at = 0
            for piece in pieces:
                found = mine.find(piece, at)
                assert found >= 0, (piece, mine)
                at = found + len(piece)
        else:
            assert mine == theirs


def test_the_rules_replay_agrees(capsys: pytest.CaptureFixture[str]) -> None:
    replay = next(block for block in _blocks(SCRIPTED) if "rules replay" in block)
    line = re.search(r"echo '(.*)' \|", replay)
    assert line is not None
    sys.stdin = io.StringIO(line[1] + "\n")
    try:
        assert main(["rules", "replay"]) == 0
    finally:
        sys.stdin = sys.__stdin__
    out = capsys.readouterr().out
    assert '"player_total": 4, "banker_total": 9, "winner": "banker"' in out
    assert '"player": -1.0' in out
