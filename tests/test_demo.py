"""The demo runs a whole simulated table end to end: shoe simulator on a real pty, the
production shoe driver, the journal, the state machine and the simulated people."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from controller.games.cards import parse_card


def run_demo(*args: str, tmp_path: Path) -> list[dict]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "demo",
            "--json",
            "--pace-s",
            "0.01",
            "--betting-s",
            "0.2",
            # Generous deadlines: a loaded CI machine must not turn a slow answer into a
            # timeout (speed is not what this test is about).
            "--decision-s",
            "60",
            "--journal",
            str(tmp_path / "demo.journal"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize(
    ("game", "protocol"),
    [
        ("baccarat", "angel-eye"),
        ("blackjack-classic", "native"),
        ("blackjack-21", "angel-eye"),
        ("blackjack-boundless", "ascii"),
    ],
)
def test_demo_plays_rounds_of_every_game(game: str, protocol: str, tmp_path: Path) -> None:
    effects = run_demo(
        "--game",
        game,
        "--protocol",
        protocol,
        "--rounds",
        "3",
        "--dealer-idle-s",
        "60",
        tmp_path=tmp_path,
    )
    events = Counter(e["name"] for e in effects if e["effect"] == "PublishEvent")
    assert events["round_settled"] == 3
    assert events["shoe_started"] == 1
    assert events["burn_completed"] == 1
    assert not [e for e in effects if e["effect"] == "EventRejected"]
    assert not [e for e in effects if e["effect"] == "PublishState" and e["state"]["paused"]]
    dealt = [e["payload"] for e in effects if e.get("name") == "card_dealt"]
    for card in dealt:
        if card["face_down"]:
            assert "card" not in card  # the hole card is not published when it is dealt
        else:
            parse_card(card["card"])
    # Every round was journaled: the journal verifies afterwards.
    verify = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "journal",
            "verify",
            str(tmp_path / "demo.journal"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_demo_survives_a_noisy_serial_line(tmp_path: Path) -> None:
    effects = run_demo("--rounds", "4", "--line-noise", "0.05", "--seed", "7", tmp_path=tmp_path)
    events = Counter(e["name"] for e in effects if e["effect"] == "PublishEvent")
    assert events["round_settled"] + events["round_voided"] == 4
    assert events["round_settled"] >= 1
