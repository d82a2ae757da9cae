"""No module of the tree and no script of the console is over 800 lines.

A file that long holds more than one idea; split where the ideas part (the daemon's broker
link, its request pipeline and its loop are three modules, ``livetable ctl``'s actions and
what it prints two). Third-party files shipped as they are (their opening comment says
"Vendored") are not ours to split and are left out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 800
PYTHON_ROOTS = ("controller", "drivers", "vision", "simulators")
SCRIPT_ROOT = "controller"
# Where a vendored file says so: in its first lines.
VENDORED_MARK = "Vendored"


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _vendored(path: Path) -> bool:
    return VENDORED_MARK in path.read_text(encoding="utf-8")[:400]


def checked_files(root: Path) -> list[Path]:
    """Every Python module under the tree's packages and every script under controller/
    (the console's among them), vendored ones left out."""
    files = [path for package in PYTHON_ROOTS for path in (root / package).rglob("*.py")]
    files += [path for path in (root / SCRIPT_ROOT).rglob("*.js") if not _vendored(path)]
    return sorted(files)


def too_long(files: list[Path], root: Path) -> list[str]:
    """``path: N lines`` for each file over :data:`MAX_LINES`."""
    return [
        f"{path.relative_to(root)}: {count} lines (at most {MAX_LINES})"
        for path in files
        if (count := _lines(path)) > MAX_LINES
    ]


def test_no_module_or_console_script_is_over_800_lines() -> None:
    files = checked_files(REPO_ROOT)
    assert any(path.suffix == ".js" for path in files)  # the console's scripts are seen
    assert REPO_ROOT / "controller/service/daemon.py" in files
    assert too_long(files, REPO_ROOT) == []


@pytest.mark.parametrize(("count", "flagged"), [(MAX_LINES, False), (MAX_LINES + 1, True)])
def test_the_check_names_a_file_over_the_limit(tmp_path: Path, count: int, flagged: bool) -> None:
    module = tmp_path / "controller" / "service" / "long.py"
    module.parent.mkdir(parents=True)
    module.write_text("x = 1\n" * count)
    script = tmp_path / "controller" / "console" / "static" / "long.js"
    script.parent.mkdir(parents=True)
    script.write_text("let x = 1;\n" * count)
    vendored = tmp_path / "controller" / "tools" / "static" / "lib.js"
    vendored.parent.mkdir(parents=True)
    vendored.write_text("/* Vendored below this comment: a library */\n" + "x;\n" * 2000)
    found = too_long(checked_files(tmp_path), tmp_path)
    expected = (
        [
            f"controller/console/static/long.js: {count} lines (at most {MAX_LINES})",
            f"controller/service/long.py: {count} lines (at most {MAX_LINES})",
        ]
        if flagged
        else []
    )
    assert found == expected
