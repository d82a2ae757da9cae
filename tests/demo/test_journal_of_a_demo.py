"""``journal verify``, ``journal rounds`` and ``journal export`` on a journal the real daemon
wrote: ``livetable demo`` (shoe simulator on a pty, MQTT, people as bots) runs two rounds,
then every listing and every export format is read off its journal and checked against the
others (the same rounds, rows and cards), against what the demo printed, and against the
cards the simulated shoe gave out."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.tools.demo_view import settled_summary

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
REPO_ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 2
# A row of a text export or listing starts with its time, to the millisecond (UTC).
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}"
ROUND_COLUMNS = ["round", "shoe", "game", "opened", "outcome", "at", "by", "pauses", "rows"]
CARD_DEALT = re.compile(r"card_dealt (\S+) to (\S+) \((\w+)\)")


def livetable(*args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LIVETABLE, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=REPO_ROOT,
        check=False,
    )


class DemoRun:
    """One ``livetable demo`` run, its output and its work folder."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.done = livetable(
            "demo",
            "--rounds",
            str(ROUNDS),
            "--pace-s",
            "0",
            "--plain",
            "--work-dir",
            str(work),
            timeout_s=240.0,
        )
        self.journal = work / "demo" / "demo.journal"

    def command(self, *args: str) -> str:
        """A ``livetable journal`` command on the demo's journal; its stdout (exit 0)."""
        done = livetable("journal", args[0], str(self.journal), *args[1:])
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        assert done.stderr == "", (args, done.stderr)
        return done.stdout

    def export(self, round_id: int, *args: str) -> str:
        return self.command("export", "--round", str(round_id), *args)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    run = DemoRun(tmp_path_factory.mktemp("demo") / "work")
    assert run.done.returncode == 0, run.done.stdout[-3000:] + run.done.stderr[-3000:]
    assert f"table demo: {ROUNDS} round(s) settled, 0 voided" in run.done.stdout, run.done.stdout[
        -2000:
    ]
    assert run.journal.is_file(), sorted(str(path) for path in run.work.rglob("*"))
    return run


@pytest.fixture(scope="module")
def rounds(demo: DemoRun) -> list[dict[str, Any]]:
    """``journal rounds --json``: one object per round."""
    return [json.loads(line) for line in demo.command("rounds", "--json").splitlines()]


def _utc(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()


def _text_rows(text: str) -> list[list[str]]:
    """The rows of a text table: columns apart by two spaces or more; the last column's
    extra lines (indented under it) joined to it by newlines, as in the CSV."""
    rows: list[list[str]] = []
    for line in text.splitlines()[1:]:
        if re.match(TIME, line):
            rows.append(re.split(r"\s{2,}", line.rstrip(), maxsplit=4))
        else:
            assert rows and line.startswith(" "), line
            rows[-1][-1] += "\n" + line.strip()
    return rows


def test_the_demos_journal_verifies(demo: DemoRun, rounds: list[dict[str, Any]]) -> None:
    lines = demo.command("verify").splitlines()
    match = re.fullmatch(
        rf"{re.escape(str(demo.journal))}: (\d+) rows, hash chain intact", lines[0]
    )
    assert match, lines
    rows = int(match[1])
    assert rows >= rounds[-1]["rows"][1]  # every round's rows are in the chain
    (document,) = [json.loads(line) for line in demo.command("verify", "--json").splitlines()]
    assert document["rows"] == rows
    head = document["journal"]
    assert lines[1] == f"head: row {head['seq']}, hash {head['hash']}"
    assert "expected head: row" in demo.command("verify", "--expect-head", json.dumps(head))


def test_rounds_agree_in_every_format(demo: DemoRun, rounds: list[dict[str, Any]]) -> None:
    assert [r["round_id"] for r in rounds] == list(range(1, ROUNDS + 1))
    assert all(r["outcome"] == "settled" and r["game"] == "baccarat" for r in rounds), rounds
    assert all(r["shoe_id"] == 1 for r in rounds), rounds
    table = list(csv.DictReader(io.StringIO(demo.command("rounds", "--format", "csv"))))
    text = demo.command("rounds").splitlines()
    assert re.split(r"\s{2,}", text[0].rstrip()) == list(table[0]) == ROUND_COLUMNS
    listed = [re.split(r"\s{2,}", line.rstrip()) for line in text[1:]]
    assert listed == [list(row.values()) for row in table]
    for row, one in zip(table, rounds, strict=True):
        assert (row["round"], row["shoe"], row["game"], row["outcome"]) == (
            str(one["round_id"]),
            str(one["shoe_id"]),
            one["game"],
            one["outcome"],
        )
        assert row["rows"] == f"{one['rows'][0]}-{one['rows'][1]}"
        assert row["pauses"] == (", ".join(one["pauses"]) or "-")
        assert abs(_utc(row["opened"]) - one["opened_at"]) < 0.001
        assert abs(_utc(row["at"]) - one["settled_at"]) < 0.001


@pytest.mark.parametrize("round_id", range(1, ROUNDS + 1))
def test_each_rounds_export_agrees_in_every_format(
    demo: DemoRun, rounds: list[dict[str, Any]], round_id: int
) -> None:
    listed = rounds[round_id - 1]
    lines = [json.loads(line) for line in demo.export(round_id, "--json").splitlines()]
    table = list(csv.DictReader(io.StringIO(demo.export(round_id, "--format", "csv"))))
    text = demo.export(round_id)
    heading, columns = text.splitlines()[:2]
    assert heading == f"round {round_id} (baccarat, table demo), from {demo.journal}"
    assert columns.split() == ["time", "(UTC)", "row", "event", "who", "effect"]

    # The same rows, from the round's request to its last card, in every format.
    seqs = [line["seq"] for line in lines]
    assert (seqs[0], seqs[-1]) == tuple(listed["rows"])
    assert seqs == sorted(seqs)
    assert [int(row["row"]) for row in table] == seqs
    assert _text_rows("\n".join(text.splitlines()[1:])) == [list(row.values()) for row in table]
    assert [row["who"] for row in table] == [line["who"] for line in lines]
    assert [row["event"].split()[0] for row in table] == [line["kind"] for line in lines]
    assert lines[0]["kind"] == "RoundRequested"

    # The same cards: the JSON's published card_dealt events, the CSV's and the text's.
    dealt = [
        (effect["payload"]["card"], effect["payload"]["position"], effect["payload"]["source"])
        for line in lines
        for effect in line["effects"]
        if effect["effect"] == "PublishEvent" and effect["name"] == "card_dealt"
    ]
    assert len(dealt) >= 4, dealt
    assert CARD_DEALT.findall("\n".join(row["effect"] for row in table)) == dealt
    assert CARD_DEALT.findall(text) == dealt
    # A card the shoe read is dealt by the CardDrawn row that journaled it.
    for line in lines:
        dealt_by_row = [
            effect["payload"]
            for effect in line["effects"]
            if effect["effect"] == "PublishEvent" and effect["name"] == "card_dealt"
        ]
        if dealt_by_row and dealt_by_row[0]["source"] == "shoe":
            assert line["kind"] == "CardDrawn", line
            assert [d["card"] for d in dealt_by_row] == [line["event"]["card"]]

    # The result the journal holds is the one the demo showed, hands made of those cards.
    (settled,) = [
        effect["payload"]
        for line in lines
        for effect in line["effects"]
        if effect["effect"] == "PublishEvent" and effect["name"] == "round_settled"
    ]
    assert settled["round_id"] == round_id
    result = settled["result"]
    for position in ("player", "banker"):
        assert result[position] == [card for card, where, _source in dealt if where == position]
    assert settled_summary(settled, "baccarat") in demo.done.stdout


def test_the_rounds_cards_came_out_of_the_shoe_in_that_order(
    demo: DemoRun, rounds: list[dict[str, Any]]
) -> None:
    """The simulated shoe's own record of every card it gave out (read or misread), burn
    and out-of-turn cards included: the rounds' cards are those, in the order dealt."""
    truth = [
        json.loads(line)
        for line in (demo.work / "demo" / "shoe-truth.jsonl").read_text().splitlines()
    ]
    given = iter(record["card"] for record in truth if record.get("card"))
    for listed in rounds:
        lines = [
            json.loads(line) for line in demo.export(listed["round_id"], "--json").splitlines()
        ]
        for line in lines:
            for effect in line["effects"]:
                if effect["effect"] == "PublishEvent" and effect["name"] == "card_dealt":
                    card = effect["payload"]["card"]
                    assert card in given, (card, listed["round_id"])
