"""A game is a plug-in: the last game added (Dragon Tiger) is named by its rules, its RTP,
the registry's entry and its presentation, and by no other code file. A front end that
names it is one that guesses a game from its id instead of reading the game's description;
catalogues, docs and examples are data and do not count."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
GAME = "dragon-tiger"
MOST_FILES = 4


def code_files_naming(game: str) -> list[str]:
    """The tracked .py and .js files outside tests/ whose text holds the game's id, in
    either spelling (``dragon-tiger``, ``dragon_tiger``)."""
    spellings = {game, game.replace("-", "_")}
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.py", "*.js"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    found = []
    for name in filter(None, listed.split("\0")):
        if name.startswith("tests/"):
            continue
        text = (REPO_ROOT / name).read_text(encoding="utf-8", errors="replace").lower()
        if any(spelling in text for spelling in spellings):
            found.append(name)
    return sorted(found)


def test_the_last_game_added_is_named_in_at_most_four_code_files() -> None:
    files = code_files_naming(GAME)
    # The scan finds the registry's entry: it reads the files it means to.
    assert "controller/games/registry.py" in files, files
    assert len(files) <= MOST_FILES, files
