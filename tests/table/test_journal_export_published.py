"""``livetable journal export`` shows a round's result as the table published it: a hand a
dealer blackjack ended is ``stood`` there, as on the wire (controller/service/wire.py), although the
rules engine replaying the journal still holds it as never played."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.service.journaled_table import JournaledTable
from controller.tools.cli import main
from tests.table.driver import Driver, config_for


def test_export_shows_a_hand_ended_by_a_dealer_blackjack_as_stood(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t1.journal"
    table, _ = JournaledTable.open(config_for("blackjack-classic", tmp_path), at=1.0, path=path)
    try:
        driver = Driver(table)
        driver.new_shoe()
        driver.open_and_close_betting(boxes=1)
        driver.draw("9S", "AH", "7D", "KH")  # box 1, the hole card, box 1, the up card
        assert driver.published_events("round_settled")
    finally:
        table.close()
    assert main(["journal", "export", str(path), "--round", "1"]) == 0
    (settled,) = [line for line in capsys.readouterr().out.splitlines() if "round_settled" in line]
    result = json.loads(settled.split("round_settled ", 1)[1])
    assert [hand["state"] for hand in result["boxes"][0]["hands"]] == ["stood"], settled
