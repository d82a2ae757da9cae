"""``livetable shoe monitor``'s end of run (commissioning report, plain statistics, exit
status) and ``livetable shoe ports``."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.kernel.cards import parse_card
from controller.tools.cli import main
from drivers.shoe.protocols.angel_eye import codec as angel_eye
from drivers.shoe.protocols.angel_eye.commissioning import angel_eye_report
from drivers.shoe.protocols.angel_eye.session import AngelEyeSession
from simulators.shoe import ShoeSimulator
from tests.shoe.monitor import shoe_monitor


def test_monitor_reports_the_variant_it_saw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "shoe"
    with (
        ShoeSimulator("angel-eye", link, seed=3, variant="wrap9", data_bit7=False) as sim,
        shoe_monitor(capsys, link, "angel-eye", "--count", "22", "--duration-s", "30") as monitor,
    ):
        for _ in range(21):
            sim.draw()
    captured = capsys.readouterr()
    assert monitor.status == 0
    report = captured.err
    assert "Frames decoded: 21; bad checksums: 0" in report
    assert "DecoderStats(" not in report and "SessionStats(" not in report
    assert "Numbering: '1'-'9', back to '1' after '9' (modulo 9); decided at frame 10" in report
    assert "Data bit 7: clear in" in report
    assert "card in a game (D) 21" in report
    assert 'variant = "wrap9"' in report and 'data_bit7 = "ignored"' in report
    assert "gaps: 0" in report


def _cards(numbers: range) -> bytes:
    """Cards numbered as a modulo-10 shoe numbers them, dealt Player 1, Banker 1, ..."""
    deal = [("player", 1), ("banker", 1), ("player", 2), ("banker", 2)]
    return b"".join(
        angel_eye.EventFrame.card(n % 10, parse_card("9C"), *deal[(n - 1) % 4]).to_bytes()
        for n in numbers
    )


def test_report_without_a_signal_leaves_the_signal_part_open() -> None:
    # Twelve cards of a modulo-10 shoe: the numbering is proven, whether signals take a
    # number is not (no signal came), and the lines to configure say so.
    session = AngelEyeSession()
    session.receive(_cards(range(1, 13)), 1.0, 0.0)
    report = angel_eye_report(session)
    assert "decided at frame 10 because the shoe sent SEQ '0'" in report
    assert "Signals (S, P): none seen, so whether they take a number is unknown." in report
    assert 'variant = "mod10"      # no signal seen: check S/P numbering once' in report


def test_report_of_a_modulo_10_shoe_whose_signals_take_no_number() -> None:
    # The same shoe, then its cut card and an S on the cut card's number: the signal part is
    # found at that S, a shoe after the numbering.
    session = AngelEyeSession()
    stream = _cards(range(1, 13)) + angel_eye.EventFrame(13 % 10, "C").to_bytes()
    stream += angel_eye.EventFrame(13 % 10, "S").to_bytes() + _cards(range(14, 16))
    events = session.receive(stream, 1.0, 0.0).events
    assert [getattr(event, "sequence", None) for event in events] == list(range(1, 16))
    assert session.variant == "mod10-free-signals"
    report = angel_eye_report(session)
    assert "decided at frame 10 because the shoe sent SEQ '0'" in report
    assert "Signals (S, P): 1 seen; they take no number (signal 'S' carried the number" in report
    assert 'variant = "mod10-free-signals"\n' in report and "gaps: 0" in report


def test_monitor_on_a_port_that_cannot_be_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    absent = str(tmp_path / "absent")
    assert main(["shoe", "monitor", "--port", absent, "--protocol", "angel-eye"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "cannot open shoe port" in lines[0] and "--wait" in lines[0]
    arguments = ["shoe", "monitor", "--port", absent, "--protocol", "native"]
    assert main([*arguments, "--wait", "--duration-s", "0.5"]) == 1
    err = capsys.readouterr().err
    assert "waiting for it" in err and "was never online" in err


def test_ports_lists_something_or_says_there_is_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shoe", "ports"]) == 0
    out = capsys.readouterr().out
    assert out.strip()
    assert "Traceback" not in out
