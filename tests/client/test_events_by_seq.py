"""The API client's series of events by ``seq``: the next one applied, a repeat dropped, a
gap named (the catch-up against a real daemon is in tests/daemon/test_ctl.py), and another
epoch starting the series again."""

from __future__ import annotations

from typing import Any

from controller.client.api_client import EventSeries


def event(seq: int) -> dict[str, Any]:
    return {"api": 1, "seq": seq, "table": "t1", "type": "shoe_online", "data": {"port": "p"}}


def test_events_are_applied_by_seq_repeats_dropped_and_gaps_named() -> None:
    series = EventSeries()
    assert not series.epoch_is("a" * 32)
    assert [series.add(event(seq)) for seq in (1, 2, 2, 1, 4)] == [
        "new",
        "new",
        "repeat",
        "repeat",
        "gap",
    ]
    assert series.last_seq == 2 and [e["seq"] for e in series.events] == [1, 2]
    assert series.add(event(3)) == "new" and series.add(event(4)) == "new"


def test_another_epoch_starts_the_series_again() -> None:
    series = EventSeries()
    series.epoch_is("a" * 32)
    for seq in (1, 2, 3):
        series.add(event(seq))
    assert not series.epoch_is("a" * 32) and series.last_seq == 3
    assert series.epoch_is("b" * 32)
    assert (series.epoch, series.last_seq, series.events) == ("b" * 32, 0, [])
    assert series.add(event(1)) == "new"
