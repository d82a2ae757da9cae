"""``livetable report``: the studio's figures, read from real journals of played tables.

Two tables play through :class:`JournaledTable` (the daemon's path to the journal): t1 a
baccarat table (a round settled, one paused by a supervisor and cancelled, two more
settled), t2 a Dragon Tiger table with a card out of turn, a misread
read by the camera and one entered by a supervisor. The report must give back exactly
what was fed, through the command line as shipped.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.service.journaled_table import JournaledTable
from controller.tools.cli import main
from controller.tools.report import NOBODY, Pause, Record, Round, groups
from tests.table.driver import Driver, config_for, sign_in

# 2026-12-06 10:00 UTC and 11:00 UTC: t1 plays in the first hour, t2 in the second.
T1_START = datetime(2026, 12, 6, 10, 0, tzinfo=UTC).timestamp()
T2_START = datetime(2026, 12, 6, 11, 0, tzinfo=UTC).timestamp()


def journal_t1(path: Path) -> dict[str, float]:
    """t1's journal: a baccarat shoe; round 1 settled, round 2 paused by a supervisor after
    one card and cancelled 5 minutes later, rounds 3 and 4 settled. Returns the play time
    (betting open to result or cancel) and the pause's length, from the times fed."""
    table, _ = JournaledTable.open(config_for("baccarat", path.parent), at=T1_START, path=path)
    driver = Driver(table, now=T1_START)
    try:
        driver.new_shoe()
        driver.open_and_close_betting()
        driver.draw("9S", "TD", "KC", "3H")
        driver.open_and_close_betting()
        driver.draw("8S")
        assert driver.command("pause", reason="a dispute at the table").ok
        driver.tick(300)  # five minutes of dispute
        assert driver.command("cancel", reason="dealer error").ok
        for _ in range(2):
            driver.open_and_close_betting()
            driver.draw("8S", "TC", "KD", "3D")
    finally:
        table.close()
    opened = [event.at for event in driver.events if type(event).__name__ == "RoundRequested"]
    cards = [event.at for event in driver.events if type(event).__name__ == "CardDrawn"]
    commands = [event for event in driver.events if type(event).__name__ == "SupervisorCommanded"]
    pause, cancel = (c.at for c in commands if c.command in ("pause", "cancel"))
    # Round 1 ends with card 4 of the round (cards 1-3 are the shoe's reveal and burn).
    return {
        "play": (cards[6] - opened[0])
        + (cancel - opened[1])
        + (cards[11] - opened[2])
        + (cards[15] - opened[3]),
        "pause": cancel - pause,
    }


def journal_t2(path: Path) -> dict[str, float]:
    """t2, Dragon Tiger: round 1 settled with a card out of turn during its betting (burnt)
    and its tiger card misread then read by the camera; round 2's dragon card misread,
    unread by the camera, entered by a supervisor."""
    config = config_for("dragon-tiger", path.parent, table_id="t2")
    table, _ = JournaledTable.open(config, at=T2_START, path=path)
    driver = Driver(table, now=T2_START)
    try:
        driver.new_shoe()
        assert driver.request_round().ok
        driver.draw("5H")  # out of turn: betting is open
        out_of_turn_at = driver.now
        driver.tick(120)  # two minutes before a supervisor burns it
        assert driver.command("resume", resolution="burn").ok
        resumed_at = driver.now
        driver.expire("betting")
        driver.draw("9S")
        driver.misread()
        driver.camera("tiger", "KC")
        assert driver.published_events("round_settled"), driver.effects[-3:]
        driver.open_and_close_betting()
        driver.misread()
        driver.camera("dragon", None)
        misread_at = driver.now
        driver.tick(450)  # seven and a half minutes to read it off the felt
        assert driver.command("resume", resolution="enter_card", card="7D").ok
        entered_at = driver.now
        driver.draw("2C")
        assert len(driver.published_events("round_settled")) == 2
    finally:
        table.close()
    return {"out_of_turn": resumed_at - out_of_turn_at, "misread": entered_at - misread_at}


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, float]]:
    folder = tmp_path_factory.mktemp("report")
    (folder / "t1").mkdir()
    (folder / "t2").mkdir()
    t1, t2 = folder / "t1" / "t1.journal", folder / "t2" / "t2.journal"
    times = {f"t1 {k}": v for k, v in journal_t1(t1).items()}
    times |= {f"t2 {k}": v for k, v in journal_t2(t2).items()}
    return t1, t2, times


def report(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    assert main(["report", *map(str, args)]) == 0
    return capsys.readouterr().out


def rows_of(text: str) -> dict[str, dict[str, str]]:
    rows = list(csv.DictReader(io.StringIO(text)))
    first = next(iter(rows[0])) if rows else ""
    return {row[first]: row for row in rows}


def test_csv_by_table_gives_back_what_the_tables_played(journals, capsys) -> None:
    t1, t2, times = journals
    before = (t1.read_bytes(), t2.read_bytes())
    rows = rows_of(report(capsys, t1, t2, "--format", "csv"))
    assert set(rows) == {"t1", "t2"}
    one, two = rows["t1"], rows["t2"]
    assert (one["rounds settled"], one["rounds cancelled"]) == ("3", "1")
    # Rounds 1, 3, 4: four cards each; round 2: one before the pause. All from the shoe.
    assert (one["cards shoe"], one["cards camera"], one["cards supervisor"]) == ("13", "0", "0")
    assert (one["pauses"], one["pauses supervisor"], one["cards out of turn"]) == ("1", "1", "0")
    assert times["t1 pause"] > 300
    assert one["pause minutes"] == f"{times['t1 pause'] / 60:.1f}" == "5.0"
    assert one["play minutes"] == f"{times['t1 play'] / 60:.1f}"
    assert one["rounds per hour"] == f"{3 * 3600 / times['t1 play']:.1f}"
    assert (two["rounds settled"], two["rounds cancelled"]) == ("2", "0")
    assert (two["cards shoe"], two["cards camera"], two["cards supervisor"]) == ("2", "1", "1")
    assert (two["pauses"], two["cards out of turn"], two["pauses misread"]) == ("2", "1", "1")
    assert two["pause minutes card_out_of_turn"] == f"{times['t2 out_of_turn'] / 60:.1f}" == "2.0"
    assert two["pause minutes misread"] == f"{times['t2 misread'] / 60:.1f}" == "7.5"
    assert two["pause minutes"] == "9.5"
    assert (t1.read_bytes(), t2.read_bytes()) == before, "the report wrote to a journal"
    assert sorted(p.name for p in t1.parent.iterdir()) == ["t1.journal"]


def test_by_game_hour_and_dealer(journals, capsys) -> None:
    t1, t2, _ = journals
    games = rows_of(report(capsys, t1, t2, "--format", "csv", "--by", "game"))
    assert {name: row["rounds settled"] for name, row in games.items()} == {
        "baccarat": "3",
        "dragon-tiger": "2",
    }
    hours = rows_of(report(capsys, t1, t2, "--format", "csv", "--by", "hour"))
    assert {name: row["rounds settled"] for name, row in hours.items()} == {
        "2026-12-06 10:00": "3",
        "2026-12-06 11:00": "2",
    }
    # These journals carry no dealer (written before dealers signed in): one group.
    dealers = rows_of(report(capsys, t1, t2, "--format", "csv", "--by", "dealer"))
    assert list(dealers) == [NOBODY]
    assert (dealers[NOBODY]["rounds settled"], dealers[NOBODY]["pauses"]) == ("5", "3")


def test_from_and_to_keep_the_rounds_opened_in_the_window(journals, capsys) -> None:
    t1, t2, _ = journals
    late = rows_of(report(capsys, t1, t2, "--format", "csv", "--from", "2026-12-06 10:30"))
    assert list(late) == ["t2"]
    early = rows_of(
        report(
            capsys, t1, t2, "--format", "csv", "--from", "2026-12-06", "--to", "2026-12-06T10:30"
        )
    )
    assert list(early) == ["t1"] and early["t1"]["rounds settled"] == "3"
    text = report(capsys, t1, t2, "--from", "2026-12-07")
    assert "no rounds" in text


def test_text_is_aligned_columns(journals, capsys) -> None:
    t1, t2, _ = journals
    lines = report(capsys, t1, t2).splitlines()
    header = lines.index(next(line for line in lines if line.startswith("table ")))
    table = lines[header : header + 3]
    assert [line.split()[0] for line in table] == ["table", "t1", "t2"]
    # Figures right-aligned under their headings: every line of the table ends together.
    assert len({len(line) for line in table}) == 1, table
    assert re.search(r"^t2 +card_out_of_turn +1 +2\.0$", "\n".join(lines), re.MULTILINE)


def test_html_is_one_page_with_the_chart_library_inline(journals, tmp_path, capsys) -> None:
    t1, t2, _ = journals
    out = tmp_path / "report.html"
    assert main(["report", str(t1), str(t2), "--format", "html", "--output", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    page = out.read_text()
    shipped = (Path(__file__).parents[2] / "controller/tools/static/chart.umd.js").read_text()
    assert "Chart.js v4" in shipped and "Released under the MIT License" in shipped
    assert shipped.replace("</", "<\\/") in page  # the whole library, inline
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert not re.search(r"<(script|link|img)[^>]*\b(src|href)=", page, re.IGNORECASE)
    for chart in ("rounds-per-hour", "pause-minutes-table", "pause-minutes-dealer"):
        assert f'id="{chart}"' in page
    assert '"labels": ["t1", "t2"]' in page and NOBODY in page


@pytest.mark.parametrize("what", ["missing", "corrupt", "altered"])
def test_a_bad_journal_is_a_one_line_error(journals, tmp_path, capsys, what) -> None:
    t1, t2, _ = journals
    bad = tmp_path / "bad.journal"
    if what == "corrupt":
        bad.write_bytes(b"not a journal at all\n" * 50)
    elif what == "altered":
        shutil.copyfile(t2, bad)
        with contextlib.closing(sqlite3.connect(bad)) as db, db:
            db.execute("UPDATE events SET body = replace(body, '5H', '6H') WHERE seq = 7")
    assert main(["report", str(t1), str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("livetable: error:") and str(bad) in line, line
    if what == "altered":
        assert "row 7 was altered" in line, line


def test_a_time_that_is_not_one_is_a_usage_error(journals, capsys) -> None:
    t1, _, _ = journals
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(t1), "--from", "yesterday"])
    assert exit_.value.code == 2
    assert "is not a time" in capsys.readouterr().err


def test_by_dealer_groups_the_rounds_of_each_dealer_signed_in() -> None:
    """Rounds that carry a dealer (round_opened.dealer) group under that staff id; a
    pause goes with its round's dealer."""
    rounds = [
        Round("t1", "baccarat", 1, "d7", T1_START, T1_START + 60, "settled"),
        Round("t1", "baccarat", 2, None, T1_START + 60, T1_START + 90, "cancelled"),
        Round("t2", "baccarat", 1, "d7", T2_START, T2_START + 120, "settled"),
    ]
    pauses = [Pause("t2", "baccarat", "misread", T2_START + 10, rounds[2], T2_START + 40)]
    found = {item.name: item for item in groups(Record(rounds, pauses), "dealer")}
    assert sorted(found) == [NOBODY, "d7"]
    assert (found["d7"].settled, found["d7"].play_seconds, found["d7"].rounds_per_hour) == (
        2,
        180.0,
        40.0,
    )
    assert found["d7"].pause_seconds == {"misread": 30.0}
    assert (found[NOBODY].settled, found[NOBODY].cancelled) == (0, 1)


def test_a_journal_of_dealers_signed_in_gives_each_dealer_their_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """D-1043 deals two rounds, D-2001 one (after a dealer change between rounds): the report
    by dealer, read from the journal the table wrote, gives each their rounds."""
    path = tmp_path / "t1.journal"
    table, _ = JournaledTable.open(config_for("baccarat", tmp_path), at=T1_START, path=path)
    driver = Driver(table, now=T1_START)
    try:
        assert sign_in(driver, "D-1043").ok
        driver.new_shoe()
        for _ in range(2):
            driver.open_and_close_betting()
            driver.draw("9S", "TD", "KC", "3H")
        assert sign_in(driver, "D-2001").ok
        driver.open_and_close_betting()
        driver.draw("8S", "TC", "KD", "3D")
    finally:
        table.close()
    dealers = rows_of(report(capsys, path, "--format", "csv", "--by", "dealer"))
    assert {name: row["rounds settled"] for name, row in dealers.items()} == {
        "D-1043": "2",
        "D-2001": "1",
    }
