"""Every large file under tests/ is a fixture listed in tests/fixtures/README.md with how it
was made: a large binary is kept once, never made again per change and committed anew (git
keeps every version of it)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS = REPO_ROOT / "tests"
STATED = (TESTS / "fixtures" / "README.md").read_text()
# Over this size a file is large: the journal fixtures (about 250 KB each) are under it.
LARGE_BYTES = 512 * 1024


def _large_files() -> list[str]:
    return sorted(
        str(path.relative_to(REPO_ROOT))
        for path in TESTS.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.stat().st_size > LARGE_BYTES
    )


def test_the_deck_fixture_is_large() -> None:
    # The premise: the size bound catches the one large fixture there is.
    assert "tests/fixtures/camera/plastic-demo-deck.npz" in _large_files()


def test_every_large_file_under_tests_is_stated_with_how_it_was_made() -> None:
    unstated = [path for path in _large_files() if f"`{path}`" not in STATED]
    assert not unstated, f"large files not listed in tests/fixtures/README.md: {unstated}"
