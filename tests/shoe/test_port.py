"""The shoe's port against the real world: a second program opening it, and a cable pulled
and plugged back while the dealer carries on. Real pty, real driver, real ``shoe monitor``."""

from __future__ import annotations

import logging
import queue
import re
import time
from pathlib import Path

import pytest

from controller.tools.cli import main
from drivers.shoe.driver import ShoeConfig, ShoeDriver
from drivers.shoe.events import CardDrawn, CardsLost, ShoeEvent, ShoeOffline, ShoeOnline
from tests.shoe.rig import ALL, shoe_rig
from tests.support.wait import wait_for_item, wait_until

# The driver's defaults, spelled out: the rig's own are quicker than a table's.
TABLE_RECONNECT = {"reconnect_initial_s": 0.1, "reconnect_max_s": 5.0}


@pytest.mark.parametrize("protocol", ["angel-eye", "ascii", "native"])
def test_a_second_opener_fails_at_once_and_the_first_loses_nothing(
    tmp_path: Path, protocol: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with shoe_rig(tmp_path, protocol) as rig:
        port = str(rig.simulator.link)
        started = time.monotonic()
        status = main(
            ["shoe", "monitor", "--port", port, "--protocol", protocol, "--duration-s", "3"]
        )
        assert time.monotonic() - started < 5.0  # at once, not after a wait for the port
        captured = capsys.readouterr()
        lines = captured.err.splitlines()
        assert status == 1 and captured.out == ""
        assert len(lines) == 1, lines
        assert port in lines[0] and "in use" in lines[0] and "Traceback" not in lines[0]
        sent = [rig.simulator.draw() for _ in range(20)]
        rig.wait_for_card(sent[-1])
        delivered = [e for e in rig.seen if isinstance(e, CardDrawn)]
        assert [str(e.card) for e in delivered] == [r.card for r in sent]
        assert not any(isinstance(e, CardsLost) for e in rig.seen)


def test_the_tables_driver_says_the_port_is_held_and_retries_until_it_is_free(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with shoe_rig(tmp_path, "angel-eye") as rig:
        port = str(rig.simulator.link)
        events: queue.Queue[ShoeEvent] = queue.Queue()
        config = ShoeConfig(port, "angel-eye", reconnect_initial_s=0.05, reconnect_max_s=0.4)
        with caplog.at_level(logging.DEBUG, logger="drivers.shoe.driver"):
            second = ShoeDriver(config, events.put)
            with second:
                offline = wait_for_item(events, lambda e: True, 5, "the second driver's event")
                assert isinstance(offline, ShoeOffline)
                assert port in offline.reason and "in use by another program" in offline.reason
                wait_until(lambda: second.failed_opens >= 3, 10, "three attempts")
                sent = [rig.simulator.draw() for _ in range(10)]
                rig.wait_for_card(sent[-1])
                assert [str(e.card) for e in rig.seen if isinstance(e, CardDrawn)] == [
                    r.card for r in sent
                ]
                assert events.empty()  # the second reads nothing while the first holds it
                rig.driver.stop()  # the first lets go: the second takes the shoe
                assert isinstance(
                    wait_for_item(events, lambda e: True, 10, "the second online"), ShoeOnline
                )
                card = rig.simulator.draw()
                drawn = wait_for_item(events, lambda e: True, 5, "the card")
                assert isinstance(drawn, CardDrawn) and str(drawn.card) == card.card
        held = [
            r
            for r in caplog.records
            if r.levelno == logging.ERROR and "in use by another program" in r.getMessage()
        ]
        assert held and all(port in r.getMessage() for r in held)
        # Retried at a slowing pace: the waits between attempts grow.
        waits = [float(re.search(r"retrying in ([0-9.]+) s", r.getMessage())[1]) for r in held]
        assert waits == sorted(waits) and waits[-1] > waits[0], waits


@pytest.mark.parametrize("protocol", ALL)
def test_cards_drawn_just_after_the_cable_is_back_reach_the_sink(
    tmp_path: Path, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.DEBUG, logger="drivers.shoe.driver"),
        shoe_rig(tmp_path, protocol, **TABLE_RECONNECT) as rig,  # type: ignore[arg-type]
    ):
        simulator = rig.simulator
        before = [simulator.draw() for _ in range(15)]
        rig.wait_for_card(before[-1])
        simulator.unplug(1.5)  # nothing drawn while it is out; the simulator plugs it back
        rig.wait_for(lambda e: isinstance(e, ShoeOffline))
        wait_until(lambda: simulator.plugged, 10, "the cable back in", interval_s=0.005)
        time.sleep(0.5)  # the scenario: the dealer draws again half a second after the replug
        after = [simulator.draw() for _ in range(15)]
        rig.wait_for_card(after[-1])
        sent = [r.card for r in before + after]
        delivered = [str(e.card) for e in rig.seen if isinstance(e, CardDrawn)]
        # All of them: the port is open again before the dealer draws, so nothing is lost
        # (and nothing needs announcing).
        assert delivered == sent, f"{len(delivered)} of {len(sent)} delivered"
        assert not any(isinstance(e, CardsLost) for e in rig.seen)
    # The log stays quiet: offline once, the retries below INFO.
    offline_lines = [
        r for r in caplog.records if r.levelno >= logging.WARNING and "offline" in r.getMessage()
    ]
    assert len(offline_lines) == 1, [r.getMessage() for r in offline_lines]
