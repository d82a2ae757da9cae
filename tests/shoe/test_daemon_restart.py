"""The shoe's numbering across a daemon killed while the dealer draws: ``livetable run`` as a
subprocess, a real pty, a real mosquitto. The restarted daemon resumes the shoe's numbering
from its journal: Angel Eye names the cards sent while it was down (``cards_lost``), native
gets them resent and journals each once, in order."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from controller.client.api_client import Account, ApiClient
from controller.service.assembly import last_shoe_sequence
from controller.service.journal import Journal
from controller.table.events import CardDrawn
from simulators.shoe import ShoeSimulator
from tests.support.daemon import DaemonProcess, write_config
from tests.support.wait import wait_until

# Generous: the machine is shared; nothing here measures speed.
TIMEOUT_S = 30.0
DRAWN_WHILE_DOWN = 2


def journaled_cards(path: Path) -> list[tuple[int | None, str]]:
    with Journal(path, read_only=True) as journal:
        return [
            (event.sequence, str(event.card))
            for entry in journal.entries()
            if isinstance(event := entry.event(), CardDrawn)
        ]


def journal_resume_point(path: Path) -> int | None:
    with Journal(path, read_only=True) as journal:
        return last_shoe_sequence(journal)


def started(daemon: DaemonProcess) -> bool:
    """This start's process reads the shoe. Counted in its own lines: a native shoe whose
    heartbeat came late on a loaded machine goes offline and online again, so the process
    before may have said "shoe online" twice."""
    return daemon.alive() and "shoe online on" in daemon.log_of_this_start()


@pytest.mark.parametrize("protocol", ["angel-eye", "native"])
def test_cards_drawn_while_the_daemon_is_down_are_named_or_delivered(
    tmp_path: Path, mqtt_broker: tuple[str, int], protocol: str
) -> None:
    host, port = mqtt_broker
    link, journal = tmp_path / "shoe", tmp_path / "t1.journal"
    config = write_config(tmp_path / "t1.toml", shoe_port=link, broker_port=port, protocol=protocol)
    daemon = DaemonProcess(config, tmp_path / "daemon.log")
    viewer = ApiClient(host, port, "t1", Account("viewer", "watcher"))
    try:
        assert viewer.wait_connected(), "the broker refused the viewer"
        viewer.client.subscribe("livetable/t1/#", qos=1)
        with ShoeSimulator(protocol, link, seed=11) as shoe:
            daemon.start()
            wait_until(lambda: started(daemon), TIMEOUT_S, "the daemon reading the shoe")
            before = [shoe.draw() for _ in range(3)]
            wait_until(
                lambda: journal_resume_point(journal) == before[-1].sequence,
                TIMEOUT_S,
                "the cards in the journal",
            )
            assert daemon.kill(signal.SIGKILL) == -signal.SIGKILL
            down = [shoe.draw() for _ in range(DRAWN_WHILE_DOWN)]
            daemon.start()
            wait_until(lambda: started(daemon), TIMEOUT_S, "the restarted daemon")
            # From the last card journaled before the kill. Not always 3: the table locks
            # the shoe's gate, and the native shoe numbers a turn of its key too, so when
            # the lock lands between two draws (a loaded machine, or the shoe seen offline
            # and online again) the third card takes number 4.
            resumes_after = before[-1].sequence
            assert f"numbering resumes after {resumes_after} " in daemon.log_of_this_start(), (
                daemon.log()
            )
            after = shoe.draw()
            wait_until(
                lambda: journal_resume_point(journal) == after.sequence,
                TIMEOUT_S,
                "the card after the restart in the journal",
                interval_s=0.05,
            )
            cards = journaled_cards(journal)
            if protocol == "native":
                # Resent by the shoe, journaled once each, in order.
                assert cards == [(r.sequence, r.card) for r in [*before, *down, after]]
            else:
                assert cards == [(r.sequence, r.card) for r in [*before, after]]

                def lost_published() -> list[dict[str, object]]:
                    return [e["data"] for e in viewer.events if e["type"] == "cards_lost"]

                wait_until(lost_published, TIMEOUT_S, "cards_lost published")
                assert lost_published() == [{"count": DRAWN_WHILE_DOWN}]
        assert daemon.alive(), daemon.why()
    finally:
        daemon.stop()
        viewer.close()
