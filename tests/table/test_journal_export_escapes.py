"""``livetable journal export`` and ``rounds`` print what came from outside (a supervisor's
reason and account, the shoe's fault text, the table id) with its control characters
escaped: an auditor's terminal must show them, not obey them, in every format."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from pathlib import Path

import pytest

from controller.service.journaled_table import JournaledTable
from controller.table.events import ShoeFault
from controller.tools.cli import main
from controller.tools.journal_cli import printable
from tests.table.driver import Driver, config_for

# Clear the screen, set the terminal's title, a C1 CSI, a bidi override that reverses what
# follows, a line break that would forge a row, a bell, a delete.
HOSTILE = "a\x1b[2J\x1b]0;owned\x07 b\x9b31m c\u202edesrever\u2028d\ne\r\x7ff"
ESCAPED = "a\\x1b[2J\\x1b]0;owned\\x07 b\\x9b31m c\\u202edesrever\\u2028d\\ne\\r\\x7ff"
ACCOUNT = "eve\x1b[8m"


def unsafe(text: str) -> list[str]:
    """Characters a terminal may act on: controls (but the line breaks the output itself
    writes), formats such as bidi overrides, line and paragraph separators, surrogates."""
    return [
        char
        for char in text
        if char != "\n" and unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")
    ]


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    """A baccarat round that a supervisor paused and cancelled with hostile reasons, while
    the shoe reported a fault with a hostile message."""
    path = tmp_path / "t1.journal"
    table, _ = JournaledTable.open(config_for("baccarat", tmp_path), at=1.0, path=path)
    try:
        driver = Driver(table)
        driver.new_shoe()
        driver.open_and_close_betting()
        driver.draw("9S")
        driver.send(ShoeFault("E\x1b[1m", HOSTILE, driver.tick()))
        assert table.machine.state.pause is not None
        assert driver.command("cancel", who=(ACCOUNT, "supervisor"), reason=HOSTILE).ok
    finally:
        table.close()
    return path


def export(journal: Path, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    assert main(["journal", "export", str(journal), "--round", "1", *options]) == 0
    return capsys.readouterr().out


def test_export_as_text_escapes_control_characters(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = export(journal, capsys)
    assert unsafe(out) == [], unsafe(out)
    assert f"reason {ESCAPED}" in out  # the cancel, with its reason
    assert "eve\\x1b[8m (supervisor)" in out  # who
    assert "shoe_fault" in out and "E\\x1b[1m" in out


def test_export_as_csv_escapes_them_and_keeps_one_line_per_effect(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = export(journal, capsys, "--format", "csv")
    assert unsafe(out) == [], unsafe(out)
    rows = list(csv.DictReader(io.StringIO(out)))
    (cancel,) = [row for row in rows if row["event"].startswith("cancel")]
    assert cancel["event"] == f"cancel (reason {ESCAPED})"
    assert cancel["who"] == "eve\\x1b[8m (supervisor)"


def test_export_as_json_keeps_the_text_exactly_and_escapes_it_in_the_json(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = export(journal, capsys, "--json")
    assert unsafe(out) == [], unsafe(out)
    lines = [json.loads(line) for line in out.splitlines()]
    (cancel,) = [line for line in lines if line["event"].get("command") == "cancel"]
    # The evidence is the journal's text, character for character, once decoded.
    assert cancel["event"]["reason"] == HOSTILE
    assert cancel["event"]["by"] == ACCOUNT


def test_rounds_escapes_the_account_that_cancelled(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for options in ((), ("--format", "csv"), ("--json",)):
        assert main(["journal", "rounds", str(journal), *options]) == 0
        out = capsys.readouterr().out
        assert unsafe(out) == [], (options, unsafe(out))
        assert "eve\\x1b[8m" in out or "eve\\u001b[8m" in out, (options, out)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a dispute at the table", "a dispute at the table"),
        ("Müller: carte à l'envers", "Müller: carte à l'envers"),  # letters are letters
        ("typed \\x1b, not ESC", "typed \\\\x1b, not ESC"),  # never mistaken for an escape
        ("tab\there", "tab\\there"),
        ("\u00adsoft hyphen, tag \U000e0041", "\\xadsoft hyphen, tag \\U000e0041"),
    ],
)
def test_printable_escapes_only_what_a_terminal_acts_on(text: str, shown: str) -> None:
    assert printable(text) == shown
