"""The people around a simulated table act once per thing the table asks, not once per state
it publishes: the state is republished after every journaled row, also after the shoe's lock
confirmations, and a dealer who drew again on those drew a card out of turn (a console test's
blackjack round paused ``card_out_of_turn`` so, a card drawn 11 ms after the one the table
had asked for, before the table had read it)."""

from __future__ import annotations

import copy
from typing import Any

from simulators.mqtt_bots import progress


def _dealing(journal_seq: int, cards_drawn: int, seq: int = 40) -> dict[str, Any]:
    return {
        "epoch": "e1",
        "seq": seq,
        "phase": "DEALING",
        "awaiting": {"what": "card", "position": "box1.hand2"},
        "shoe": {"cards_drawn": cards_drawn},
        "journal": {"seq": journal_seq},
        "pause": None,
    }


def test_a_lock_confirmation_asks_nothing_new() -> None:
    asked = _dealing(journal_seq=39, cards_drawn=14)
    confirmed = _dealing(journal_seq=40, cards_drawn=14)
    assert progress(asked) == progress(confirmed)


def test_a_card_drawn_or_a_new_request_is_progress() -> None:
    asked = _dealing(journal_seq=39, cards_drawn=14)
    assert progress(asked) != progress(_dealing(journal_seq=41, cards_drawn=15, seq=41))
    deciding = copy.deepcopy(asked)
    deciding["phase"] = "DECIDING"
    assert progress(asked) != progress(deciding)
    elsewhere = copy.deepcopy(asked)
    elsewhere["awaiting"] = {"what": "card", "position": "dealer"}
    assert progress(asked) != progress(elsewhere)


def test_the_console_studio_keys_its_people_on_that_progress() -> None:
    """The console tests' studio drives its dealer from the same function as the bots."""
    from pathlib import Path

    source = (Path(__file__).parent.parent / "support" / "console.py").read_text(encoding="utf-8")
    assert "progress(state)" in source and 'state["journal"]["seq"])' not in source
