"""The driver against the simulator over a real pty: the contract suite
(:mod:`tests.shoe.contract`) over every protocol livetable ships, then what is particular to
one protocol."""

from __future__ import annotations

import queue
import time
from pathlib import Path

import pytest

from controller.kernel.errors import ConfigurationError, DeviceError
from drivers.shoe.driver import ShoeConfig, ShoeDriver, open_port
from drivers.shoe.events import (
    CardDrawn,
    CardMisread,
    CardsLost,
    ShoeEvent,
    ShoeLockChanged,
    ShoeOffline,
    ShoeOnline,
)
from drivers.shoe.protocols.angel_eye.session import AngelEyeSession
from drivers.shoe.registry import PROTOCOL_NAMES, protocol
from simulators.shoe import FaultPlan, ShoeSimulator
from tests.shoe.contract import ShoeContract, cards_of, generate
from tests.shoe.rig import ANGEL_EYE_VARIANTS, expected_variant, shoe_rig
from tests.support.wait import wait_for_item, wait_until


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    generate(metafunc)


class TestEveryProtocol(ShoeContract):
    """The contract suite over livetable's own protocols and their kinds of shoe."""

    protocols = tuple(protocol(name) for name in PROTOCOL_NAMES)


def test_ascii_garbage_becomes_a_misread_not_a_card(tmp_path: Path) -> None:
    with shoe_rig(tmp_path, "ascii", FaultPlan(garbage_rate=1.0), seed=5) as rig:
        rig.simulator.draw()
        rig.simulator.faults = FaultPlan()
        closing = rig.simulator.draw()
        rig.wait_for(lambda e: isinstance(e, CardDrawn))
        misreads = [e for e in rig.seen if isinstance(e, CardMisread)]
        assert cards_of(rig.seen) == [(None, closing.card)]
        assert len(misreads) >= 1


def test_angel_eye_switches_command_bcc_convention_after_nak(tmp_path: Path) -> None:
    # The shoe wants STX excluded from the command BCC; the driver starts with it included.
    with shoe_rig(tmp_path, "angel-eye", bcc_includes_stx=False) as rig:
        rig.driver.lock()
        locked = rig.wait_for(lambda e: isinstance(e, ShoeLockChanged))
        assert isinstance(locked, ShoeLockChanged) and locked.locked
        session = rig.driver.session
        assert isinstance(session, AngelEyeSession) and session.bcc_includes_stx is False
        assert rig.simulator.commands == ["LK 02"]


def test_native_silence_is_offline_and_heartbeat_brings_it_back(tmp_path: Path) -> None:
    with shoe_rig(tmp_path, "native") as rig:
        rig.simulator.stuck(2.0)
        offline = rig.wait_for(lambda e: isinstance(e, ShoeOffline), timeout=3.0)
        assert isinstance(offline, ShoeOffline) and "no frame" in offline.reason
        rig.wait_online()
        card = rig.simulator.draw()
        rig.wait_for(lambda e: isinstance(e, CardDrawn) and e.sequence == card.sequence)


def test_angel_eye_stuck_card_is_silence_not_offline(tmp_path: Path) -> None:
    # No heartbeat in this protocol: a jammed card is indistinguishable from an idle shoe.
    with shoe_rig(tmp_path, "angel-eye") as rig:
        rig.simulator.stuck(0.5)
        started = time.monotonic()
        card = rig.simulator.draw()
        assert time.monotonic() - started >= 0.5
        rig.wait_for(lambda e: isinstance(e, CardDrawn) and e.sequence == card.sequence)
        assert not any(isinstance(e, ShoeOffline) for e in rig.seen)


def test_driver_started_before_the_shoe_exists(tmp_path: Path) -> None:
    link = tmp_path / "late-shoe"
    events: queue.Queue[ShoeEvent] = queue.Queue()
    watch_s = 0.05
    config = ShoeConfig(str(link), "angel-eye", reconnect_watch_s=watch_s)
    started = time.monotonic()
    with ShoeDriver(config, events.put) as driver:
        first = wait_for_item(events, lambda e: True, 5, "the driver's first event")
        assert isinstance(first, ShoeOffline) and "cannot open" in first.reason
        with pytest.raises(DeviceError):
            driver.lock()
        # The shoe appears once the driver has retried at least once, however slow the machine.
        wait_until(lambda: driver.failed_opens >= 2, 10, "a second failed open")
        with ShoeSimulator("angel-eye", link) as simulator:
            online = wait_for_item(events, lambda e: True, 5, "the shoe online")
            assert isinstance(online, ShoeOnline)
            online_after = time.monotonic() - started
            # Counted now: once the simulator stops below, the driver fails to reopen it.
            failed_before_online = driver.failed_opens
            card = simulator.draw()
            drawn = wait_for_item(events, lambda e: True, 5, "the card")
            assert isinstance(drawn, CardDrawn) and str(drawn.card) == card.card
    assert driver.connects == 1 and failed_before_online >= 2
    # A port that is not there is looked for at the fixed watch interval, never in a tight
    # loop: n failed opens are n waits of that length before the open that worked, however
    # slow the machine (a driver that did not wait would fail this at once). The 10 ms are
    # for the timers' granularity, not for speed.
    assert failed_before_online * watch_s <= online_after + 0.01, (
        failed_before_online,
        online_after,
    )


def test_config_and_port_errors_are_ours(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        ShoeConfig("/dev/ttyUSB0", "beetle")
    with pytest.raises(ConfigurationError):
        ShoeConfig("/dev/ttyUSB0", parity="X")
    with pytest.raises(DeviceError):
        open_port(ShoeConfig(str(tmp_path / "absent")))
    with pytest.raises(DeviceError):
        open_port(ShoeConfig("socket://127.0.0.1:1"))


def test_config_from_a_toml_table() -> None:
    config = ShoeConfig.from_mapping(
        {"port": "socket://10.0.0.5:4001", "protocol": "angel-eye", "baudrate": 9600}
    )
    assert config.effective_baudrate == 9600
    assert ShoeConfig.from_mapping({"port": "/dev/ttyUSB0"}).effective_baudrate == 4800
    for bad in (
        {"port": "/dev/ttyUSB0", "baud": 4800},
        {"protocol": "ascii"},
        {"port": "/dev/ttyUSB0", "baudrate": "fast"},
        {"port": "/dev/ttyUSB0", "baudrate": True},
        {"port": "/dev/ttyUSB0", "command_bcc_includes_stx": 1},
    ):
        with pytest.raises(ConfigurationError):
            ShoeConfig.from_mapping(bad)


@pytest.mark.parametrize("protocol", ["angel-eye", *ANGEL_EYE_VARIANTS])
def test_angel_eye_signals_and_wraps_never_make_a_gap(tmp_path: Path, protocol: str) -> None:
    """A shoe that starts with S and P, then 30 cards (three wraps of the digit), then S
    after the cut card, from every kind of shoe: the driver (variant auto) finds the
    profile, reports nothing lost and delivers every card in order."""
    with shoe_rig(tmp_path, protocol, decks=1, cut_card_depth=52 - 31) as rig:
        rig.simulator.signal("S")
        rig.simulator.signal("P")
        for _ in range(32):
            rig.simulator.draw()
        assert rig.simulator.truth[-1].event == "cut_card"
        rig.simulator.signal("S")  # a new shoe confirmed
        rig.simulator.new_shoe()
        rig.wait_for_card(rig.simulator.draw())
        faces = [record.card for record in rig.simulator.truth if record.event == "card"]
        assert [card for _, card in cards_of(rig.seen)] == faces
        assert not any(isinstance(e, CardsLost) for e in rig.seen), rig.seen
        session = rig.driver.session
        assert isinstance(session, AngelEyeSession)
        assert session.variant == expected_variant(protocol)
        assert session.observed.new_shoes_confirmed == 1
        # Signals with no number (the free-signal and any-byte shoes) are proven by a signal
        # on a number already taken; numbered ones are never "proven", only read as numbered.
        free = "free-signals" in protocol or "any-seq" in protocol
        detection = session.counter.detection
        assert detection.signals_numbered is (False if free else None)
