"""`livetable bench rules` runs and reports rates; speed itself is never asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from controller.games.baccarat import play_baccarat
from controller.tools.bench_rules import baccarat_card_stream, play_baccarat_rounds

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_bench_deals_rounds_exactly_as_play_baccarat_does() -> None:
    cards = baccarat_card_stream(seed=3, shoes=1)
    position = 0
    for _ in range(50):
        expected = play_baccarat(cards[position:])
        after = play_baccarat_rounds(cards, position, 1)
        assert after - position == expected.cards_used
        position = after


def test_bench_rules_reports_percentiles_as_json() -> None:
    command = ["bench", "rules", "--game", "baccarat", "--batches", "3"]
    command += ["--baccarat-rounds", "500", "--json"]
    result = subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", *command],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)["baccarat"]
    assert figures["batches"] == 3
    assert figures["rounds"] == 500
    for prefix in ("", "cpu_"):
        rates = [figures[prefix + key] for key in ("min", "p10", "p50", "p90", "max")]
        assert rates[0] > 0
        assert rates == sorted(rates)
    assert figures["meets_target"] == (figures["cpu_p50"] >= 100_000)
    assert figures["target"] == 100_000
