"""The contract suite: what the driver and the simulated shoe of *every* protocol keep, over
a real pty (and a serial-to-Ethernet link), whatever the protocol is called.

A test module runs it by subclassing :class:`ShoeContract` with the protocols it covers
(``protocols``) and passing its ``pytest_generate_tests`` to :func:`generate`. A test runs
over every kind of shoe (a protocol's plain shoe, ``<name>``, and each of its speaker's
variants, ``<name>@<variant>``) whose declared capabilities it needs (``@needs``); what it
expects follows from those capabilities (:class:`~drivers.shoe.sessions.Capabilities`), never
from a protocol's name. The protocols must be registered when the tests run.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from controller.kernel.errors import ConfigurationError
from drivers.shoe.events import (
    CardDrawn,
    CardMisread,
    CardsLost,
    CutCardDrawn,
    ShoeEvent,
    ShoeFault,
    ShoeFaultCleared,
    ShoeLockChanged,
    ShoeOffline,
    ShoeOnline,
)
from drivers.shoe.registry import ShoeProtocol
from drivers.shoe.sessions import Capabilities, HostCommand
from drivers.shoe.speaker import ShoeVariant
from simulators.shoe import FaultPlan
from tests.shoe.rig import Rig, capabilities, gaps_visible, shoe_rig

TRANSPORTS = ["pty", "tcp"]  # tcp: socket:// through a serial-to-Ethernet server

Need = Callable[[Capabilities, ShoeVariant | None], bool]


def needs(need: Need) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Run the test only over the shoes whose capabilities (and variant) ``need`` accepts."""

    def mark(test: Callable[..., None]) -> Callable[..., None]:
        test.needs = need  # type: ignore[attr-defined]
        return test

    return mark


def numbered(caps: Capabilities, variant: ShoeVariant | None) -> bool:
    return caps.numbered


def with_commands(caps: Capabilities, variant: ShoeVariant | None) -> bool:
    return bool(caps.commands >= {HostCommand.LOCK, HostCommand.UNLOCK, HostCommand.CLEAR_ERROR})


def generate(metafunc: pytest.Metafunc) -> None:
    """Parametrize a :class:`ShoeContract` subclass's tests with its shoes' labels."""
    cls = metafunc.cls
    if cls is None or not issubclass(cls, ShoeContract) or "label" not in metafunc.fixturenames:
        return
    need: Need = getattr(metafunc.function, "needs", lambda caps, variant: True)
    chosen = [
        label
        for parts in cls.protocols
        for label, variant in [
            (parts.name, None),
            *((f"{parts.name}@{name}", v) for name, v in parts.speaker.variants.items()),
        ]
        if need(parts.session.capabilities, variant)
    ]
    metafunc.parametrize("label", chosen)


def cards_of(events: list[ShoeEvent]) -> list[tuple[int | None, str]]:
    return [(e.sequence, str(e.card)) for e in events if isinstance(e, CardDrawn)]


def expected_cards(rig: Rig, label: str) -> list[tuple[int | None, str]]:
    sequenced = capabilities(label).numbered
    return [
        (record.sequence if sequenced else None, record.card or "")
        for record in rig.simulator.truth
        if record.event == "card"
    ]


class ShoeContract:
    """The suite; subclass it with ``protocols`` set."""

    protocols: ClassVar[tuple[ShoeProtocol, ...]] = ()

    @pytest.mark.parametrize("transport", TRANSPORTS)
    def test_every_card_arrives_once_in_order(
        self, tmp_path: Path, label: str, transport: str
    ) -> None:
        with shoe_rig(tmp_path, label, transport=transport) as rig:
            for _ in range(30):
                rig.simulator.draw()
            rig.wait_for(lambda e: isinstance(e, CardDrawn) and len(cards_of(rig.seen)) == 30)
            assert cards_of(rig.seen) == expected_cards(rig, label)
            truth_lines = (tmp_path / f"truth-{label}.jsonl").read_text().splitlines()
            assert [json.loads(line)["card"] for line in truth_lines] == [
                card for _, card in expected_cards(rig, label)
            ]

    @pytest.mark.parametrize("transport", TRANSPORTS)
    def test_frames_written_one_byte_at_a_time(
        self, tmp_path: Path, label: str, transport: str
    ) -> None:
        with shoe_rig(tmp_path, label, FaultPlan(bytewise_rate=1.0), transport=transport) as rig:
            for _ in range(5):
                rig.simulator.draw()
            rig.wait_for(lambda e: len(cards_of(rig.seen)) == 5)
            assert cards_of(rig.seen) == expected_cards(rig, label)
            assert rig.simulator.wire.bytewise == 5

    def test_cut_card_and_unreadable_card(self, tmp_path: Path, label: str) -> None:
        caps = capabilities(label)
        with shoe_rig(tmp_path, label, decks=1, cut_card_depth=50) as rig:
            rig.simulator.draw()
            rig.simulator.draw()
            cut = rig.simulator.draw()
            assert cut.event == "cut_card"
            rig.simulator.faults = FaultPlan(unreadable_rate=1.0)
            misread = rig.simulator.draw()
            assert misread.event == "misread" and misread.card is not None
            misreads_expected = 1 if caps.cut_card else 2
            last = rig.wait_for(
                lambda e: sum(isinstance(x, CardMisread) for x in rig.seen) == misreads_expected
            )
            assert last.sequence == (misread.sequence if caps.numbered else None)
            kinds = [type(e) for e in rig.seen if not isinstance(e, ShoeOnline)]
            if not caps.cut_card:
                # No cut-card message: the simulated shoe sends what reads as a bad frame.
                assert kinds == [CardDrawn, CardDrawn, CardMisread, CardMisread]
            else:
                assert kinds == [CardDrawn, CardDrawn, CutCardDrawn, CardMisread]
                cut_event = next(e for e in rig.seen if isinstance(e, CutCardDrawn))
                assert cut_event.sequence == cut.sequence

    def test_foreign_card_is_delivered_for_the_table_to_judge(
        self, tmp_path: Path, label: str
    ) -> None:
        with shoe_rig(tmp_path, label) as rig:
            first = rig.simulator.draw()
            rig.simulator.faults = FaultPlan(foreign_rate=1.0)
            foreign = rig.simulator.draw()
            assert foreign.foreign and foreign.card == first.card
            rig.wait_for(lambda e: len(cards_of(rig.seen)) == 2)
            assert [card for _, card in cards_of(rig.seen)] == [first.card, first.card]

    def test_cable_pull_offline_then_online_behind_the_same_link(
        self, tmp_path: Path, label: str
    ) -> None:
        caps = capabilities(label)
        with shoe_rig(tmp_path, label) as rig:
            simulator = rig.simulator
            for _ in range(3):
                simulator.draw()
            rig.wait_for(lambda e: len(cards_of(rig.seen)) == 3)
            tty_before = simulator.slave_path
            pulled_at = time.time()
            simulator.unplug()
            offline = rig.wait_for(lambda e: isinstance(e, ShoeOffline), timeout=1.0)
            assert isinstance(offline, ShoeOffline)
            assert offline.at - pulled_at < 1.0  # requirement: offline within 1 s
            assert not os.path.lexists(simulator.link)
            lost = [simulator.draw() for _ in range(2)]  # the dealer carries on meanwhile
            time.sleep(0.3)
            simulator.replug()
            rig.wait_online()
            assert simulator.slave_path is not None and os.path.realpath(simulator.link) == (
                simulator.slave_path
            )
            after = simulator.draw()
            rig.wait_for_card(after)
            delivered = cards_of(rig.seen)
            truth = expected_cards(rig, label)
            if caps.retransmits:
                assert delivered == truth  # resent after the reconnect
            elif gaps_visible(label):
                assert delivered == [c for c in truth if c[0] not in {r.sequence for r in lost}]
                reported = [e for e in rig.seen if isinstance(e, CardsLost)]
                assert [e.sequences for e in reported] == [tuple(r.sequence for r in lost)]
            elif caps.numbered:
                # Numbers that show repeats but not gaps: lost without a trace.
                lost_numbers = {r.sequence for r in lost}
                assert [card for _, card in delivered] == [
                    card for number, card in truth if number not in lost_numbers
                ]
                assert not any(isinstance(e, CardsLost) for e in rig.seen)
            else:
                assert delivered == truth[:3] + truth[5:]  # lost without a trace: no numbers
            assert tty_before is not None and rig.driver.connects >= 2

    @needs(numbered)
    @pytest.mark.parametrize("transport", TRANSPORTS)
    def test_duplicates_are_dropped(self, tmp_path: Path, label: str, transport: str) -> None:
        faults = FaultPlan(duplicate_rate=1.0)
        with shoe_rig(tmp_path, label, faults, transport=transport) as rig:
            for _ in range(12):  # past a one-digit count's wrap
                rig.simulator.draw()
            # A last card sent once: delivered, it shows every copy before it was read.
            rig.simulator.faults = FaultPlan()
            rig.wait_for_card(rig.simulator.draw())
            assert cards_of(rig.seen) == expected_cards(rig, label)
            assert rig.driver.session.session_stats.duplicates_dropped >= 12

    @needs(numbered)
    def test_garbage_and_corruption_never_invent_a_card(self, tmp_path: Path, label: str) -> None:
        caps = capabilities(label)
        faults = FaultPlan(garbage_rate=0.5, corrupt_rate=0.2, drop_rate=0.1)
        with shoe_rig(tmp_path, label, faults, seed=11) as rig:
            for _ in range(40):
                rig.simulator.draw()
            rig.simulator.faults = FaultPlan()
            rig.wait_for_card(rig.simulator.draw())  # sent intact, after all the damage
            delivered = cards_of(rig.seen)
            truth = expected_cards(rig, label)
            lost = [s for e in rig.seen if isinstance(e, CardsLost) for s in e.sequences]
            if caps.retransmits:
                assert delivered == truth and not lost
            elif not gaps_visible(label):
                # Repeats told, gaps not: intact cards arrive once, in order; others vanish.
                damaged = rig.simulator.wire.damaged
                assert [card for _, card in delivered] == [
                    card for number, card in truth if number not in damaged
                ]
                assert not lost
            else:
                assert set(delivered) <= set(truth)
                assert [c[0] for c in delivered] == sorted(c[0] for c in delivered)
                assert sorted(lost + [c[0] for c in delivered]) == [c[0] for c in truth]
                assert set(lost) <= rig.simulator.wire.damaged
                assert lost, "with 20 % corruption and 10 % drops some frames must be lost"
            stats = rig.driver.session.decoder_stats
            assert stats.bad_checksum >= 1 and stats.garbage_bytes >= 1

    @needs(with_commands)
    @pytest.mark.parametrize("transport", TRANSPORTS)
    def test_lock_unlock_and_clear_error(self, tmp_path: Path, label: str, transport: str) -> None:
        with shoe_rig(tmp_path, label, transport=transport) as rig:
            rig.driver.lock()
            assert rig.wait_for(lambda e: isinstance(e, ShoeLockChanged)) == ShoeLockChanged(
                True, rig.seen[-1].at
            )
            assert rig.simulator.locked
            rig.driver.unlock()
            unlocked = rig.wait_for(lambda e: isinstance(e, ShoeLockChanged))
            assert isinstance(unlocked, ShoeLockChanged) and not unlocked.locked
            rig.simulator.report_fault(2)
            rig.wait_for(lambda e: isinstance(e, ShoeFault))
            rig.driver.clear_error()
            cleared = rig.wait_for(lambda e: isinstance(e, ShoeFaultCleared))
            assert isinstance(cleared, ShoeFaultCleared) and cleared.code == "E2"
            assert rig.simulator.error_code is None
            assert rig.simulator.host_commands == [
                HostCommand.LOCK,
                HostCommand.UNLOCK,
                HostCommand.CLEAR_ERROR,
            ]
            assert len(rig.simulator.commands) == 3

    @needs(lambda caps, variant: variant is None and bool(set(HostCommand) - caps.commands))
    def test_a_command_the_protocol_lacks_is_refused(self, tmp_path: Path, label: str) -> None:
        caps = capabilities(label)
        missing = [command for command in HostCommand if command not in caps.commands]
        with shoe_rig(tmp_path, label) as rig:
            for command in missing:
                with pytest.raises(ConfigurationError):
                    rig.driver.send(command)

    @needs(lambda caps, variant: variant is None)
    def test_a_session_bug_reports_offline_and_the_driver_recovers(
        self, tmp_path: Path, label: str
    ) -> None:
        with shoe_rig(tmp_path, label) as rig:
            session = rig.driver.session
            original = session.receive
            failures = iter([True])

            def failing_once(data: bytes, at: float, now: float):  # type: ignore[no-untyped-def]
                if next(failures, False):
                    raise RuntimeError("a bug")
                return original(data, at, now)

            session.receive = failing_once  # type: ignore[method-assign]
            rig.simulator.draw()
            offline = rig.wait_for(lambda e: isinstance(e, ShoeOffline))
            assert isinstance(offline, ShoeOffline) and "a bug" in offline.reason
            rig.wait_online()
            card = rig.simulator.draw()
            rig.wait_for(lambda e: isinstance(e, CardDrawn) and str(e.card) == card.card)
