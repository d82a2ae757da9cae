"""The pure protocol sessions, without a port or a thread: bytes and times in, events out."""

from __future__ import annotations

import pytest

from controller.kernel.cards import parse_card
from controller.kernel.errors import ConfigurationError
from drivers.shoe.events import (
    CardDrawn,
    CardMisread,
    CardsLost,
    ShoeFault,
    ShoeLockChanged,
)
from drivers.shoe.protocols.angel_eye import codec as angel_eye
from drivers.shoe.protocols.angel_eye.session import AngelEyeSession
from drivers.shoe.protocols.ascii_lines.session import AsciiLineSession
from drivers.shoe.protocols.native import codec as native
from drivers.shoe.protocols.native.session import NativeSession
from drivers.shoe.registry import protocol
from drivers.shoe.sessions import HostCommand

AT = 1_700_000_000.0


def ae_card(sequence: int, card: str = "AS") -> bytes:
    return angel_eye.EventFrame.card(sequence % 10, parse_card(card)).to_bytes()


def test_angel_eye_unwraps_the_digit_and_names_lost_numbers() -> None:
    session = AngelEyeSession()
    stream = b"".join(ae_card(n) for n in (1, 2, 8, 9, 10, 11, 11, 11, 14))
    events = session.receive(stream, AT, 0.0).events
    assert [
        (type(e).__name__, getattr(e, "sequence", None) or getattr(e, "sequences", None))
        for e in events
    ] == [
        ("CardDrawn", 1),
        ("CardDrawn", 2),
        ("CardsLost", (3, 4, 5, 6, 7)),
        ("CardDrawn", 8),
        ("CardDrawn", 9),
        ("CardDrawn", 10),
        ("CardDrawn", 11),
        ("CardsLost", (12, 13)),
        ("CardDrawn", 14),
    ]
    assert session.session_stats.duplicates_dropped == 2


def test_angel_eye_keeps_its_count_across_a_reconnect() -> None:
    session = AngelEyeSession()
    session.receive(ae_card(5), AT, 0.0)
    session.receive(ae_card(6)[:4], AT, 0.0)  # the cable goes mid-frame
    session.closed()
    events = session.receive(ae_card(8), AT, 1.0).events
    assert events == [CardsLost((6, 7), AT), CardDrawn(parse_card("AS"), 8, AT, "player")]


def test_angel_eye_bad_card_payload_is_a_misread() -> None:
    frame = angel_eye.EventFrame(1, "D", angel_eye.CardPayload(0, 1, 0, 5).to_data())
    assert AngelEyeSession().receive(frame.to_bytes(), AT, 0.0).events == [CardMisread(1, AT)]


def test_angel_eye_lock_ack_and_nak() -> None:
    session = AngelEyeSession()
    assert session.command(HostCommand.LOCK) == bytes.fromhex("02 4F 50 4C 4B 30 32 03 31 42")
    assert session.receive(b"\x06", AT, 0.0).events == [ShoeLockChanged(True, AT)]
    session.command(HostCommand.UNLOCK)
    retry = session.receive(b"\x15\x02", AT, 0.0)  # BCC error: try the other convention
    assert (
        retry.events == [] and retry.to_send == angel_eye.HostCommand("LK", "01", False).to_bytes()
    )
    refused = session.receive(b"\x15\x21", AT, 0.0).events
    assert refused == [ShoeFault("NAK21", "shoe refused LK 01: shoe busy", AT)]
    assert session.receive(b"\x06", AT, 0.0).events == []  # nothing outstanding any more


def test_native_resends_after_a_gap_and_acknowledges() -> None:
    session = NativeSession()
    hello = session.opened(0.0)
    assert native.NativeFrame.from_bytes(hello) == native.NativeFrame(native.RESEND, 1)
    frames = [native.NativeFrame(native.CARD, n, "QH").to_bytes() for n in (1, 2, 3, 4)]
    first = session.receive(frames[0] + frames[2], AT, 1.0)  # 2 is missing
    assert [e.sequence for e in first.events] == [1]  # type: ignore[union-attr]
    sent = native.NativeDecoder().feed(first.to_send)
    assert sent == [native.NativeFrame(native.ACKNOWLEDGE, 1), native.NativeFrame(native.RESEND, 2)]
    again = session.receive(frames[3], AT, 1.05)  # too soon to ask again
    assert again.events == [] and native.NativeDecoder().feed(again.to_send) == []
    assert native.NativeDecoder().feed(session.poll(1.3)) == [native.NativeFrame(native.RESEND, 2)]
    resent = session.receive(b"".join(frames[1:]) + frames[1], AT, 1.4)
    assert [e.sequence for e in resent.events] == [2, 3, 4]  # type: ignore[union-attr]
    assert session.session_stats.duplicates_dropped == 1


def test_native_gone_events_become_cards_lost() -> None:
    session = NativeSession()
    session.receive(native.NativeFrame(native.CARD, 1, "2C").to_bytes(), AT, 0.0)
    gone = native.NativeFrame(native.GONE, 5).to_bytes()
    card = native.NativeFrame(native.UNREADABLE, 5).to_bytes()
    assert session.receive(gone + card, AT, 0.0).events == [
        CardsLost((2, 3, 4), AT),
        CardMisread(5, AT),
    ]


def test_native_heartbeat_reveals_a_lost_last_event() -> None:
    session = NativeSession()
    reaction = session.receive(native.NativeFrame(native.HEARTBEAT, 3).to_bytes(), AT, 5.0)
    assert native.NativeDecoder().feed(reaction.to_send) == [native.NativeFrame(native.RESEND, 1)]


def test_ascii_session_and_unknown_protocols() -> None:
    session = AsciiLineSession()
    assert session.receive(b"HQ\r\nZZ\r\n", AT, 0.0).events == [
        CardDrawn(parse_card("QH"), None, AT),
        CardMisread(None, AT),
    ]
    with pytest.raises(ConfigurationError):
        session.command(HostCommand.LOCK)
    with pytest.raises(ConfigurationError):
        protocol("angel-ear")


def test_native_resume_asks_from_the_first_event_after_the_resume_point() -> None:
    session = NativeSession()
    session.resume(41)
    assert native.NativeDecoder().feed(session.opened(0.0)) == [
        native.NativeFrame(native.RESEND, 42)
    ]
    card = native.NativeFrame(native.CARD, 42, "2C").to_bytes()
    assert session.receive(card, AT, 0.0).events == [CardDrawn(parse_card("2C"), 42, AT)]


def test_native_gone_before_anything_is_this_tables_is_where_it_starts() -> None:
    """No resume point and nothing delivered: events the shoe dropped were someone else's."""
    session = NativeSession()
    gone = native.NativeFrame(native.GONE, 7).to_bytes()
    card = native.NativeFrame(native.CARD, 7, "2C").to_bytes()
    assert session.receive(gone + card, AT, 0.0).events == [CardDrawn(parse_card("2C"), 7, AT)]


def test_native_shoe_that_restarted_its_count_is_asked_from_1() -> None:
    session = NativeSession()
    session.resume(50)
    session.opened(0.0)
    reaction = session.receive(native.NativeFrame(native.HEARTBEAT, 2).to_bytes(), AT, 1.0)
    assert native.NativeDecoder().feed(reaction.to_send) == [native.NativeFrame(native.RESEND, 1)]
    cards = b"".join(native.NativeFrame(native.CARD, n, "2C").to_bytes() for n in (1, 2))
    assert [e.sequence for e in session.receive(cards, AT, 1.1).events] == [1, 2]


def test_angel_eye_resume_reads_the_next_seq_against_the_resume_point() -> None:
    session = AngelEyeSession(variant="mod10")
    session.resume(22)
    events = session.receive(ae_card(25), AT, 0.0).events
    assert events == [CardsLost((23, 24), AT), CardDrawn(parse_card("AS"), 25, AT, "player")]
    wrap9 = AngelEyeSession(variant="wrap9")
    wrap9.resume(18)  # SEQ '9' under wrap9
    frame = angel_eye.EventFrame.card(1, parse_card("AS")).to_bytes()
    assert [e.sequence for e in wrap9.receive(frame, AT, 0.0).events] == [19]
    letters = AngelEyeSession(variant="any-seq")
    letters.resume(30)
    frame = angel_eye.EventFrame.card(ord("Q"), parse_card("AS")).to_bytes()
    assert [e.sequence for e in letters.receive(frame, AT, 0.0).events] == [31]
