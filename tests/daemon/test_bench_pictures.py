"""`livetable bench pictures`: a short run deals its rounds, pictures every card it dealt and
each round's end, misses none, and reports what it measured as JSON."""

from __future__ import annotations

import json

import pytest

from controller.tools.cli import main


def test_a_short_run_pictures_every_card_and_each_round_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "pictures", "--rounds", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tables_pictured"] == 2 and result["missed"] == 0
    # Baccarat deals four to six cards a round.
    assert 8 <= result["cards_pictured"] <= 12
    assert result["frame"] == [1280, 720]
    assert 0 < result["card_bytes"]["mean"] < result["table_bytes"]["mean"]
    assert result["card_cpu_ms"]["p50"] > 0 and result["table_cpu_ms"]["p50"] > 0
    expected = (
        result["card_bytes"]["mean"] * result["cards_pictured"]
        + result["table_bytes"]["mean"] * result["tables_pictured"]
    ) / 2
    # Pictures are stored by content: the same bytes twice would be one file.
    assert result["bytes_per_round"] <= expected + 1


def test_an_unknown_game_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "pictures", "--game", "bacarat", "--rounds", "1"]) == 1
    assert "unknown game 'bacarat'" in capsys.readouterr().err
