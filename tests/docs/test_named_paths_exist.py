"""Every repository path the documentation names exists: a reader who opens the file or
folder a page points to finds it.

A path is a word in backticks whose first part is a top-level entry of the repository
(``controller/...``, ``tests/...``, ``pyproject.toml``), or the target of a relative
Markdown link. ``<name>`` or ``*`` in a path stands for any name: at least one must match.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((REPO_ROOT / "docs").glob("*.md")), REPO_ROOT / "README.md"]
# What the repository holds at its top: the folders and files a path may start with.
TOP_LEVEL = {
    path.name for path in REPO_ROOT.iterdir() if not path.name.startswith(".") or path.name == ".ci"
} - {"livetable.egg-info"}
IN_BACKTICKS = re.compile(r"`([^`\n\s]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PLACEHOLDER = re.compile(r"<[^>/]+>")


def _exists(base: Path, path: str) -> bool:
    pattern = PLACEHOLDER.sub("*", path.rstrip("/"))
    if "*" in pattern:
        return any(base.glob(pattern))
    return (base / pattern).exists()


def _named_paths(page: Path) -> list[tuple[Path, str]]:
    """(the folder the path is relative to, the path) of every path ``page`` names."""
    text = page.read_text()
    named = [
        (REPO_ROOT, word)
        for word in IN_BACKTICKS.findall(text)
        if word.split("/")[0] in TOP_LEVEL and ("/" in word or (REPO_ROOT / word).is_file())
    ]
    for target in LINK.findall(text):
        target = target.split("#")[0]
        if target and not re.match(r"[a-z]+:", target):
            named.append((page.parent, target))
    return named


def test_the_pages_name_paths() -> None:
    # The premise: the pattern finds what the pages point to (a pattern finding nothing
    # would let every test below pass).
    assert len(_named_paths(REPO_ROOT / "docs" / "architecture.md")) > 30
    assert (REPO_ROOT, "controller/kernel/cards.py") in _named_paths(
        REPO_ROOT / "docs" / "architecture.md"
    )


def test_a_missing_path_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("See `controller/table/journal.py`, `drivers/shoe/protocols/<name>/`.\n")
    missing = [path for base, path in _named_paths(page) if not _exists(base, path)]
    assert missing == ["controller/table/journal.py"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_path_a_page_names_exists(page: Path) -> None:
    missing = sorted({path for base, path in _named_paths(page) if not _exists(base, path)})
    assert not missing, f"{page.relative_to(REPO_ROOT)} names paths that are not there: {missing}"
