"""A restarted table's driver numbers on from where its journal ends (the resume point).

The shoe keeps drawing while no driver reads its port (the daemon is down); a new driver,
given the last sequence number the first one delivered (what the table's journal holds),
reads the first frame after the restart against it: the cards drawn in between are named
lost (Angel Eye: they were sent to nobody) or resent and delivered once, in order (native).
Real pty, real driver, for every protocol and Angel Eye numbering that can show a gap.
"""

from __future__ import annotations

import queue
from pathlib import Path

import pytest

from controller.kernel.cards import parse_card
from controller.service.assembly import last_shoe_sequence
from controller.service.journal import Journal
from drivers.shoe.driver import ShoeConfig, ShoeDriver
from drivers.shoe.events import (
    CardDrawn,
    CardMisread,
    CardsLost,
    CutCardDrawn,
    ShoeEvent,
    ShoeOffline,
    ShoeOnline,
)
from drivers.shoe.protocols.angel_eye.options import AngelEyeOptions
from tests.shoe.rig import (
    EVENT_TIMEOUT_S,
    GAPS_VISIBLE,
    expected_variant,
    protocol_of,
    shoe_rig,
)
from tests.support.wait import wait_for_item

BEFORE = 12  # across the wrap of a one-character SEQ (modulo 10 or 9)


def last_sequence(events: list[ShoeEvent]) -> int | None:
    """What the table's journal would end with: the last shoe sequence number delivered."""
    last = None
    for event in events:
        if isinstance(event, CardDrawn | CutCardDrawn | CardMisread) and event.sequence:
            last = event.sequence
        elif isinstance(event, CardsLost) and event.sequences:
            last = max(event.sequences)
    return last


def driver_settings(label: str, variant: str | None) -> dict[str, object]:
    if protocol_of(label) != "angel-eye":
        return {}
    return {"options": AngelEyeOptions(variant=variant or expected_variant(label))}


def restart_while_drawing(
    tmp_path: Path, label: str, drawn_while_down: int, variant: str | None = None
) -> tuple[list[int], list[ShoeEvent], list[int]]:
    """Deal BEFORE cards to a driver, stop it, draw ``drawn_while_down`` cards, start a new
    driver with the resume point and draw one more. Returns the numbers drawn while it was
    down, what the new driver delivered up to that last card, and the last card's number."""
    settings = driver_settings(label, variant)
    with shoe_rig(tmp_path, label, **settings) as rig:
        simulator = rig.simulator
        before = [simulator.draw() for _ in range(BEFORE)]
        rig.wait_for_card(before[-1])
        resume = last_sequence(rig.seen)
        assert resume == before[-1].sequence
        rig.driver.stop()  # the daemon is gone: nobody reads the port
        down = [simulator.draw().sequence for _ in range(drawn_while_down)]
        events: queue.Queue[ShoeEvent] = queue.Queue()
        seen: list[ShoeEvent] = []
        config = ShoeConfig(
            str(simulator.link),
            protocol_of(label),
            reconnect_initial_s=0.05,
            **settings,  # type: ignore[arg-type]  # options: a ProtocolOptions
        )
        with ShoeDriver(config, events.put, resume_after=resume) as driver:
            assert driver.session.session_stats.sequences_lost == 0
            # The port is open (what was sent before is gone with the old reader's buffer).
            wait_for_item(
                events, lambda e: isinstance(e, ShoeOnline), EVENT_TIMEOUT_S, "online", taken=seen
            )
            marker = simulator.draw()
            wait_for_item(
                events,
                lambda e: isinstance(e, CardDrawn) and e.sequence == marker.sequence,
                EVENT_TIMEOUT_S,
                f"card {marker.sequence} from the restarted driver",
                taken=seen,
            )
        return down, seen, marker.sequence


@pytest.mark.parametrize("drawn_while_down", [1, 2])
@pytest.mark.parametrize("label", GAPS_VISIBLE)
def test_cards_drawn_while_no_driver_reads_are_named_or_delivered(
    tmp_path: Path, label: str, drawn_while_down: int
) -> None:
    down, seen, marker = restart_while_drawing(tmp_path, label, drawn_while_down)
    cards = [e.sequence for e in seen if isinstance(e, CardDrawn)]
    lost = [e.sequences for e in seen if isinstance(e, CardsLost)]
    if protocol_of(label) == "native":
        # The shoe held what nobody acknowledged: resent, delivered once, in order.
        assert cards == [*down, marker] and lost == []
    else:
        # Sent to nobody: named lost, every one, by the first frame after the restart.
        assert lost == [tuple(down)] and cards == [marker]


@pytest.mark.parametrize("label", ["angel-eye", "angel-eye@mod10-free-signals"])
def test_under_auto_the_resume_point_is_read_modulo_10(tmp_path: Path, label: str) -> None:
    """The profile is found again after a restart; until then auto counts modulo 10, as it
    did before, so for a shoe that counts so the gap is named exactly."""
    down, seen, marker = restart_while_drawing(tmp_path, label, 2, variant="auto")
    assert [e.sequences for e in seen if isinstance(e, CardsLost)] == [tuple(down)]
    assert [e.sequence for e in seen if isinstance(e, CardDrawn)] == [marker]


def test_nothing_drawn_while_down_is_nothing_lost(tmp_path: Path) -> None:
    for label in ("angel-eye", "native"):
        (tmp_path / label).mkdir()
        down, seen, marker = restart_while_drawing(tmp_path / label, label, 0)
        assert down == []
        assert [e.sequence for e in seen if isinstance(e, CardDrawn | CardsLost)] == [marker]


def test_native_events_the_shoe_forgot_but_the_journal_lacks_are_named_lost(
    tmp_path: Path,
) -> None:
    """The shoe forgets what was acknowledged; a journal that ends before that (a daemon killed
    between the acknowledgement and the journal's write) gets those numbers as lost, never
    a wait for a resend that cannot come."""
    with shoe_rig(tmp_path, "native") as rig:
        sent = [rig.simulator.draw() for _ in range(5)]
        rig.wait_for_card(sent[-1])
        rig.driver.stop()
        events: queue.Queue[ShoeEvent] = queue.Queue()
        seen: list[ShoeEvent] = []
        config = ShoeConfig(str(rig.simulator.link), "native", reconnect_initial_s=0.05)
        with ShoeDriver(config, events.put, resume_after=3):
            lost = wait_for_item(
                events, lambda e: isinstance(e, CardsLost), EVENT_TIMEOUT_S, "lost", taken=seen
            )
            marker = rig.simulator.draw()
            wait_for_item(
                events,
                lambda e: isinstance(e, CardDrawn) and e.sequence == marker.sequence,
                EVENT_TIMEOUT_S,
                "the next card",
                taken=seen,
            )
        assert lost == CardsLost((4, 5), lost.at)
        assert [e.sequence for e in seen if isinstance(e, CardDrawn)] == [marker.sequence]


def test_the_resume_point_is_the_journals_last_shoe_number(tmp_path: Path) -> None:
    with Journal(tmp_path / "t1.journal") as journal:
        assert last_shoe_sequence(journal) is None  # a new table: the first frame is the start
        journal.append(CardDrawn(parse_card("AS"), 7, 1.0))
        journal.append(CardsLost((8, 9), 2.0))
        journal.append(ShoeOffline("/dev/shoe", "pulled", 3.0))
        assert last_shoe_sequence(journal) == 9
        journal.append(CutCardDrawn(10, 4.0))
        journal.append(CardDrawn(parse_card("KD"), None, 5.0))  # no number: looked past
        assert last_shoe_sequence(journal) == 10
        journal.append(
            CardMisread(3, 6.0)
        )  # a shoe that restarted its count: the last, not the top
        assert last_shoe_sequence(journal) == 3
