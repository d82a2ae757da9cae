"""The journal as evidence: its head anchors it against truncation, it is read without a
byte written beside it (also from read-only media), and its rounds and their histories are
listed for people (text), spreadsheets (CSV) and tools (JSON lines)."""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.kernel.errors import JournalError
from controller.service.journal import Journal, check_head
from controller.service.journaled_table import (
    JournaledTable,
    describe_reused_journal,
    log_reused_journal,
)
from controller.tools.cli import main
from tests.table.driver import Driver, config_for, play_rounds, write_journal


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    path = tmp_path / "evidence" / "t1.journal"
    path.parent.mkdir()
    write_journal(path)
    return path


def head_of(path: Path) -> tuple[int, str]:
    with Journal(path, read_only=True) as journal:
        return journal.head


def beside(path: Path) -> list[str]:
    return sorted(entry.name for entry in path.parent.iterdir())


# -- the head --------------------------------------------------------------------------------


def test_verify_prints_the_head_the_daemon_publishes(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seq, digest = head_of(journal)
    assert main(["journal", "verify", str(journal)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{journal}: {seq} rows, hash chain intact",
        f"head: row {seq}, hash {digest}",
    ]
    assert main(["journal", "verify", str(journal), "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    document = json.loads(line)
    assert document["journal"] == {"seq": seq, "hash": digest}  # the state's own shape
    assert document["rows"] == seq


def test_an_expected_head_that_the_journal_reaches_passes(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seq, digest = head_of(journal)
    assert main(["journal", "verify", str(journal), "--expect-head", f"{seq}:{digest}"]) == 0
    assert "expected head: row" in capsys.readouterr().out
    # An anchor taken earlier still holds while the journal grows after it.
    with Journal(journal, read_only=True) as opened:
        earlier = opened.hash_at(seq - 3)
    anchor = json.dumps({"seq": seq - 3, "hash": earlier.upper() if earlier else ""})
    assert main(["journal", "verify", str(journal), "--expect-head", anchor]) == 0
    assert "3 row(s) after it" in capsys.readouterr().out


@pytest.mark.parametrize("deleted", [1, 2, 10])
def test_a_truncated_journal_fails_against_its_head(
    journal: Path, deleted: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """Deleting the journal's last row, or its last 10, fails ``journal verify
    --expect-head`` with a one-line cause."""
    seq, digest = head_of(journal)
    assert seq > deleted
    with sqlite3.connect(journal) as db:
        db.execute("DELETE FROM events WHERE seq > ?", (seq - deleted,))
    assert main(["journal", "verify", str(journal)]) == 0  # the chain alone cannot tell
    capsys.readouterr()
    assert main(["journal", "verify", str(journal), "--expect-head", f"{seq}:{digest}"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line == (
        f"livetable: error: {journal} ends at row {seq - deleted}, before the expected head "
        f"row {seq}: {deleted} row(s) are missing (the journal was truncated or replaced)"
    )


def test_a_rewritten_history_fails_against_its_head(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows rewritten and their chain recomputed: intact, but not the history anchored."""
    seq, digest = head_of(journal)
    rewritten = journal.with_name("rewritten.journal")
    config = config_for("baccarat", journal.parent)
    table, _ = JournaledTable.open(config, at=1.0, path=rewritten)
    driver = Driver(table)
    try:
        driver.new_shoe()
        hands = [("9S", "TD", "KC", "3H"), ("8S", "TC", "KD", "3D"), ("9H", "TS", "KH", "3C")]
        for round_number in range(7):
            driver.open_and_close_betting()
            driver.draw(*hands[round_number % 3])
        assert table.journal.last_seq > seq
    finally:
        table.close()
    assert main(["journal", "verify", str(rewritten), "--expect-head", f"{seq}:{digest}"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert f"row {seq} has hash" in line and "was rewritten" in line
    with Journal(rewritten, read_only=True) as opened, pytest.raises(JournalError):
        check_head(opened, seq, digest)


@pytest.mark.parametrize("head", ["12", "0:" + "a" * 64, "3:abc", "x:" + "a" * 64, "{}"])
def test_a_malformed_head_is_a_usage_error(
    journal: Path, head: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["journal", "verify", str(journal), "--expect-head", head])
    assert exit_.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .startswith("livetable journal verify: error: argument --expect-head: ")
    )


# -- read-only ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["journal", "verify"],
        ["journal", "rounds"],
        ["journal", "export", "--round", "2"],
        ["journal", "verify", "--immutable"],
    ],
)
def test_nothing_appears_beside_the_evidence(
    journal: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = beside(journal)
    assert before == ["t1.journal"]
    assert main([*argv[:2], str(journal), *argv[2:]]) == 0
    assert beside(journal) == before
    assert capsys.readouterr().out


@pytest.fixture
def read_only_directory(journal: Path) -> Iterator[Path]:
    """The journal's directory made unwritable, as on read-only media.

    As root, permissions do not stop writes, so the directory is made immutable
    (``chattr +i``, which stops root too); otherwise it is made mode 0555. The test is
    skipped where neither works (a file system without the attribute)."""
    directory = journal.parent
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("chattr is not installed")
        done = subprocess.run(["chattr", "+i", str(directory)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i failed: {done.stderr.decode().strip()}")
        undo = ["chattr", "-i", str(directory)]
    else:
        directory.chmod(0o555)
        undo = []
    try:
        assert not os.access(directory, os.W_OK)
        with pytest.raises(OSError):
            (directory / "probe").write_text("")
        yield directory
    finally:
        if undo:
            subprocess.run(undo, check=True)
        directory.chmod(0o755)


def test_a_journal_on_read_only_media_verifies_and_exports(
    journal: Path, read_only_directory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seq, digest = head_of(journal)
    assert main(["journal", "verify", str(journal), "--expect-head", f"{seq}:{digest}"]) == 0
    assert main(["journal", "export", str(journal), "--round", "1"]) == 0
    assert main(["journal", "rounds", str(journal), "--json"]) == 0
    assert "hash chain intact" in capsys.readouterr().out
    assert beside(journal) == ["t1.journal"]


def test_a_journal_being_written_is_read_with_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A running table's rows may still wait in the write-ahead log: a plain read-only
    open reads them; an immutable one would miss them, so it is refused."""
    config = config_for("baccarat", tmp_path)
    table, _ = JournaledTable.open(config, at=1.0)
    try:
        Driver(table).new_shoe()
        rows = table.journal.last_seq
        path = table.journal.path
        assert path.with_name(path.name + "-wal").stat().st_size > 0
        assert main(["journal", "verify", str(path)]) == 0
        assert f"{rows} rows, hash chain intact" in capsys.readouterr().out
        assert main(["journal", "verify", str(path), "--immutable"]) == 1
        (line,) = capsys.readouterr().err.splitlines()
        assert "write-ahead log" in line
    finally:
        table.close()


# -- rounds and export ----------------------------------------------------------------------


def test_rounds_lists_each_round_with_its_outcome_and_pauses(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "rounds", str(journal), "--json"]) == 0
    rounds = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["round_id"], r["shoe_id"], r["outcome"]) for r in rounds] == [
        (1, 1, "settled"),
        (2, 1, "cancelled"),
        (3, 1, "settled"),
    ]
    assert rounds[1]["pauses"] == ["supervisor"]
    assert rounds[1]["cancelled_by"] and rounds[1]["cancelled_at"] is not None
    assert all(r["game"] == "baccarat" and r["opened_at"] is not None for r in rounds)

    assert main(["journal", "rounds", str(journal)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split() == [
        "round",
        "shoe",
        "game",
        "opened",
        "outcome",
        "at",
        "by",
        "pauses",
        "rows",
    ]
    assert "cancelled" in text[2] and "supervisor" in text[2]

    assert main(["journal", "rounds", str(journal), "--format", "csv"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [row["outcome"] for row in table] == ["settled", "cancelled", "settled"]


def test_export_reads_as_a_history_by_default(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "export", str(journal), "--round", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("round 2 (baccarat, table ")
    assert lines[1].split()[:4] == ["time", "(UTC)", "row", "event"]
    history = "\n".join(lines)
    assert "RoundRequested" in history and "card_dealt 8S to player (shoe)" in history
    assert "pause (reason a dispute at the table)" in history
    assert "table_paused supervisor" in history and "round_voided" in history
    assert "(supervisor)" in history  # who: the supervisor's account and role


def test_export_as_csv_and_as_json_lines(journal: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "export", str(journal), "--round", "1", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert list(rows[0]) == ["time (UTC)", "row", "event", "who", "effect"]
    assert [row["event"] for row in rows if row["event"].startswith("CardDrawn")] == [
        "CardDrawn 9S",
        "CardDrawn TD",
        "CardDrawn KC",
        "CardDrawn 3H",
    ]
    assert main(["journal", "export", str(journal), "--round", "1", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["seq"] for line in lines] == [int(row["row"]) for row in rows]
    assert {"seq", "hash", "kind", "event", "effects", "who"} <= set(lines[0])


# -- a reused journal says so ----------------------------------------------------------------


def test_a_reused_journal_is_described_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = config_for("baccarat", tmp_path)
    table, _ = JournaledTable.open(config, at=1.0)
    try:
        assert describe_reused_journal(table) is None  # a new journal
        play_rounds(Driver(table), rounds=1)
        rows = table.journal.last_seq
    finally:
        table.close()
    table, _ = JournaledTable.open(config, at=2.0)
    try:
        line = describe_reused_journal(table)
        assert line == (
            f"table {config.table_id} (baccarat) carries on the journal "
            f"{config.journal_path}: {rows} rows, shoe 1, last round 1"
        )
        with caplog.at_level(logging.INFO, logger="controller.service.journaled_table"):
            log_reused_journal(table, logging.WARNING)
        assert [(r.levelno, r.getMessage()) for r in caplog.records][-1] == (
            logging.WARNING,
            line,
        )
    finally:
        table.close()
