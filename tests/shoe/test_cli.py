"""The shoe commands (sim, monitor) and the simulator's control language."""

from __future__ import annotations

import json
import queue
import subprocess
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from controller.kernel.cards import parse_card
from controller.table.events import encode_event
from drivers.shoe.cli import event_record
from drivers.shoe.driver import ShoeConfig, ShoeDriver
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
from drivers.shoe.protocols.angel_eye.commissioning import angel_eye_report
from drivers.shoe.protocols.angel_eye.session import AngelEyeSession
from simulators.daemon_process import LIVETABLE
from simulators.shoe import ShoeSimulator
from simulators.shoe.control import execute
from tests.shoe.monitor import shoe_monitor
from tests.support.wait import wait_for_item, wait_until


@contextmanager
def sim_shoe(protocol: str, *options: str, stdin: bool = True) -> Iterator[subprocess.Popen[str]]:
    """``livetable sim shoe --protocol PROTOCOL OPTIONS`` as a child process, its standard
    output (and input, with ``stdin``) piped as text; killed if it still runs at the end,
    its pipes closed."""
    command = [*LIVETABLE, "sim", "shoe", "--protocol", protocol, *options]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE if stdin else None, stdout=subprocess.PIPE, text=True
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


def test_control_language(tmp_path: Path) -> None:
    with ShoeSimulator("angel-eye", tmp_path / "shoe", seed=4, decks=1, cut_card_depth=50) as sim:
        answer = execute(sim, "draw 2 banker 3")
        assert answer == f"ok 1 card {sim.truth[0].card}; 2 card {sim.truth[1].card}"
        assert execute(sim, "key lock") == "ok 3 lock" and sim.locked
        assert execute(sim, "status").startswith("ok protocol=angel-eye plugged=True")
        assert execute(sim, "unplug") == "ok unplugged" and not sim.plugged
        assert execute(sim, "replug").startswith("ok plugged /dev/pts/")
        assert execute(sim, "draw 1").endswith("cut_card")
        assert execute(sim, "draw lots").startswith("error")
        assert execute(sim, "fault x").startswith("error")
        assert execute(sim, 'draw "unclosed').startswith("error")
        assert execute(sim, "").startswith("ok")


def test_sim_shoe_command_driven_by_stdin(tmp_path: Path) -> None:
    link, truth = tmp_path / "shoe", tmp_path / "truth.jsonl"
    options = ("--link", str(link), "--seed", "9", "--truth", str(truth))
    events: queue.Queue[ShoeEvent] = queue.Queue()
    with sim_shoe("native", *options) as process:
        assert process.stdout is not None and process.stdin is not None
        assert "shoe (native) on" in process.stdout.readline()
        with ShoeDriver(ShoeConfig(str(link), "native", reconnect_initial_s=0.05), events.put):
            assert isinstance(events.get(timeout=10), ShoeOnline)
            process.stdin.write("draw 3\n")
            process.stdin.flush()
            answer = process.stdout.readline()
            drawn = [events.get(timeout=10) for _ in range(3)]
            process.stdin.write("quit\n")
            process.stdin.flush()
            assert process.wait(timeout=10) == 0
    records = [json.loads(line) for line in truth.read_text().splitlines()]
    assert answer.startswith("ok 1 card")
    assert [(e.sequence, str(e.card)) for e in drawn if isinstance(e, CardDrawn)] == [
        (r["sequence"], r["card"]) for r in records
    ]
    assert not link.exists()


def test_sim_shoe_command_with_a_variant_read_on_auto(tmp_path: Path) -> None:
    """``livetable sim shoe --variant``: a shoe of the other reading (modulo 9, signals with
    no number, bit 7 clear) read by the driver on its default profile, auto, which must find
    the whole profile, lose nothing, and say in its commissioning report what to configure."""
    link, truth = tmp_path / "shoe", tmp_path / "truth.jsonl"
    options = ["--variant", "wrap9-free-signals", "--data-bit7-clear"]
    options += ["--link", str(link), "--seed", "9", "--truth", str(truth)]
    events: queue.Queue[ShoeEvent] = queue.Queue()
    seen: list[ShoeEvent] = []
    driver = ShoeDriver(ShoeConfig(str(link), "angel-eye", reconnect_initial_s=0.05), events.put)
    with sim_shoe("angel-eye", *options) as process:
        assert process.stdout is not None and process.stdin is not None
        assert "shoe (angel-eye) on" in process.stdout.readline()
        assert process.stdout.readline().strip() == (
            "Angel Eye variant wrap9-free-signals, data bit 7 clear"
        )
        with driver:
            wait_for_item(events, lambda e: isinstance(e, ShoeOnline), 10, "the shoe online")
            process.stdin.write("signal S\ndraw 20\n")  # a shoe starts with S, then deals
            process.stdin.flush()
            answers = [process.stdout.readline(), process.stdout.readline()]
            # The twentieth card is the marker: once it is here, everything before it is too.
            wait_for_item(
                events,
                lambda e: isinstance(e, CardDrawn) and e.sequence == 20,
                10,
                "the twentieth card",
                taken=seen,
            )
            process.stdin.write("quit\n")
            process.stdin.flush()
            assert process.wait(timeout=10) == 0
    assert answers[0].strip() == "ok signal (no number)" and answers[1].startswith("ok 1 card")
    records = [json.loads(line) for line in truth.read_text().splitlines()]
    assert [(e.sequence, str(e.card)) for e in seen if isinstance(e, CardDrawn)] == [
        (r["sequence"], r["card"]) for r in records
    ]
    assert len(records) == 20 and not any(isinstance(e, CardsLost) for e in seen)
    session = driver.session
    assert isinstance(session, AngelEyeSession)
    assert session.variant == "wrap9-free-signals"
    report = angel_eye_report(session)
    assert "Numbering: '1'-'9', back to '1' after '9' (modulo 9); decided at frame" in report
    assert "Signals (S, P): 1 seen; they take no number" in report
    assert 'variant = "wrap9-free-signals"' in report and 'data_bit7 = "ignored"' in report
    assert "gaps: 0" in report


def test_shoe_monitor_prints_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "shoe"
    options = ("--json", "--count", "3", "--duration-s", "20")
    with (
        ShoeSimulator("angel-eye", link, seed=1) as sim,
        # Draws once the monitor has the port open (its ShoeOnline line), not after a guess.
        shoe_monitor(capsys, link, "angel-eye", *options) as monitor,
    ):
        first, second = sim.draw(), sim.draw("banker", 1)
    output = monitor.printed + capsys.readouterr().out
    lines = [json.loads(line) for line in output.splitlines()]
    assert monitor.status == 0
    assert [line["event"] for line in lines] == ["ShoeOnline", "CardDrawn", "CardDrawn"]
    assert [(line["card"], line["position"]) for line in lines[1:]] == [
        (first.card, "player"),
        (second.card, "banker"),
    ]


def test_shoe_monitor_names_events_as_the_journal_does() -> None:
    # The monitor's "event" field is a wire format: the journal's kind, spelt out here, not
    # whatever the Python class happens to be called.
    at = 1_700_000_000.0
    events: list[ShoeEvent] = [
        CardDrawn(parse_card("AS"), 1, at, "player"),
        CutCardDrawn(2, at),
        CardMisread(3, at),
        CardsLost((4, 5), at),
        ShoeFault("E2", "overdraw", at),
        ShoeFaultCleared("E2", at),
        ShoeLockChanged(True, at),
        ShoeOnline("/dev/ttyUSB0", at),
        ShoeOffline("/dev/ttyUSB0", "port lost", at),
    ]
    assert {type(event) for event in events} == set(typing.get_args(ShoeEvent))
    names = [event_record(event)["event"] for event in events]
    assert names == [
        "CardDrawn",
        "CutCardDrawn",
        "CardMisread",
        "CardsLost",
        "ShoeFault",
        "ShoeFaultCleared",
        "ShoeLockChanged",
        "ShoeOnline",
        "ShoeOffline",
    ]
    assert names == [encode_event(event)[0] for event in events]
    assert event_record(CardsLost((4, 5), at)) == {
        "event": "CardsLost",
        "sequences": [4, 5],
        "at": at,
    }


def test_shoe_monitor_text_lines() -> None:
    from drivers.shoe.cli import event_line

    line = event_line(ShoeLockChanged(True, 1_700_000_000.25))
    assert line.endswith("ShoeLockChanged locked=True")


def test_sim_shoe_control_socket_and_sigterm(tmp_path: Path) -> None:
    import signal
    import socket

    link, control = tmp_path / "shoe", tmp_path / "shoe.ctl"
    options = ("--link", str(link), "--control", str(control), "--no-stdin", "--seed", "3")
    events: queue.Queue[ShoeEvent] = queue.Queue()
    with sim_shoe("angel-eye", *options, stdin=False) as process:
        assert process.stdout is not None
        assert "shoe (angel-eye) on" in process.stdout.readline()
        wait_until(control.exists, 10, "the simulator's control socket")
        with (
            ShoeDriver(ShoeConfig(str(link), "angel-eye"), events.put),
            socket.socket(socket.AF_UNIX) as client,
        ):
            assert isinstance(events.get(timeout=10), ShoeOnline)
            client.settimeout(10)  # a missing answer fails the test instead of hanging it
            client.connect(str(control))
            stream = client.makefile("rw")
            stream.write("draw 2\nbogus\n")
            stream.flush()
            answers = [stream.readline().strip(), stream.readline().strip()]
            drawn = [events.get(timeout=10), events.get(timeout=10)]
            stream.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    assert answers[0].startswith("ok 1 card") and answers[1].startswith("error unknown command")
    assert [e.sequence for e in drawn if isinstance(e, CardDrawn)] == [1, 2]
    assert not link.exists() and not control.exists()
