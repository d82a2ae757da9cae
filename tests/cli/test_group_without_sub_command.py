"""A command group run without its sub-command prints its help on stderr and fails."""

from __future__ import annotations

import pytest

from controller.tools.cli import main

GROUPS = ("journal", "rules", "shoe", "camera", "vision", "sim", "bench")


@pytest.mark.parametrize("argv", [[], *([group] for group in GROUPS)])
def test_an_incomplete_command_prints_its_help_and_fails(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"usage: livetable {' '.join(argv)}".rstrip())
