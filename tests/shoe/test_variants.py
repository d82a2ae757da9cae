"""Angel Eye variant profiles: SEQ wrap and alphabet, data bit 7, auto-detection, impossible
fields, the shoe's own result and signals. Pure sessions: bytes in, events out."""

from __future__ import annotations

import logging

import pytest

from controller.kernel.cards import parse_card
from controller.kernel.errors import ConfigurationError
from drivers.shoe.driver import ShoeConfig
from drivers.shoe.events import CardDrawn, CardMisread, CardsLost, ShoeEvent
from drivers.shoe.protocols.angel_eye import codec as angel_eye
from drivers.shoe.protocols.angel_eye.options import AngelEyeOptions
from drivers.shoe.protocols.angel_eye.session import AngelEyeSession
from drivers.shoe.protocols.angel_eye.variants import SequenceCounter

AT = 1_700_000_000.0
HAND = [("player", 1), ("banker", 1), ("player", 2), ("banker", 2)]


def symbol(number: int, variant: str) -> int:
    """The SEQ symbol a shoe of ``variant`` sends for its ``number``-th frame."""
    if variant.startswith("wrap9"):
        return (number - 1) % 9 + 1
    if variant == "any-seq":
        return ord("A") + (number - 1) % 26
    return number % 10


def card_frame(number: int, variant: str, card: str = "AS", dealt: int | None = None) -> bytes:
    target, index = HAND[(number - 1 if dealt is None else dealt) % 4]
    frame = angel_eye.EventFrame.card(symbol(number, variant), parse_card(card), target, index)
    return frame.to_bytes()


def sequences(events: list[ShoeEvent]) -> list[tuple[str, object]]:
    return [
        (type(e).__name__, getattr(e, "sequence", None) or getattr(e, "sequences", None))
        for e in events
    ]


@pytest.mark.parametrize(
    "variant", ["mod10", "mod10-free-signals", "wrap9", "wrap9-free-signals", "auto"]
)
def test_no_card_lost_at_any_wrap_for_a_shoe_of_that_variant(variant: str) -> None:
    shoe = "wrap9" if variant == "auto" else variant
    session = AngelEyeSession(variant=variant)
    stream = b"".join(card_frame(n, shoe) for n in range(1, 41))
    events = session.receive(stream, AT, 0.0).events
    assert sequences(events) == [("CardDrawn", n) for n in range(1, 41)]
    assert session.variant == shoe


@pytest.mark.parametrize("shoe", ["mod10", "wrap9"])
def test_auto_detection_within_the_first_wrap(shoe: str) -> None:
    session = AngelEyeSession()
    assert session.variant == "auto"
    for number in range(1, 21):
        session.receive(card_frame(number, shoe), AT, 0.0)
        if number >= 10:
            assert session.variant == shoe, number
    assert session.counter.detection.decided_at_frame == 10
    assert session.session_stats.sequences_lost == 0


def test_auto_reads_an_unproven_9_to_1_as_a_gap() -> None:
    # '9' then '1' between frames that do not prove nothing is missing (two Player 1 cards):
    # a mod10 shoe that lost its '0' looks the same, so the '0' is reported lost (a pause).
    session = AngelEyeSession()
    frames = [card_frame(n, "wrap9", dealt=0) for n in range(1, 11)]
    events = session.receive(b"".join(frames), AT, 0.0).events
    assert ("CardsLost", (10,)) in sequences(events)
    assert session.variant == "auto" and session.counter.detection.ambiguous_wraps == 1
    # The next proof (9 then 1 on Banker 1 after Player 1) decides; no spurious loss after.
    later = [card_frame(n, "wrap9") for n in range(11, 31)]
    events = session.receive(b"".join(later), AT, 0.0).events
    assert not any(isinstance(e, CardsLost) for e in events)
    assert session.variant == "wrap9"


def test_auto_keeps_reporting_a_real_gap_across_the_wrap() -> None:
    session = AngelEyeSession()
    frames = [card_frame(n, "wrap9") for n in range(1, 9)]  # ... '8'
    frames.append(card_frame(11, "wrap9"))  # '2': frames 9 and 10 never arrived
    events = session.receive(b"".join(frames), AT, 0.0).events
    lost = [e for e in events if isinstance(e, CardsLost)]
    assert lost and lost[0].sequences == (9, 10, 11)  # read modulo 10 until proven otherwise


def test_auto_detects_letters_and_a_zero_contradiction() -> None:
    session = AngelEyeSession()
    stream = b"".join(card_frame(n, "any-seq") for n in range(1, 5))
    events = session.receive(stream + card_frame(4, "any-seq"), AT, 0.0).events
    assert [type(e) for e in events] == [CardDrawn] * 4  # the repeat is a duplicate
    assert session.variant == "any-seq"
    # Fixed mod10 never takes a letter for a SEQ: such a frame is noise.
    strict = AngelEyeSession(variant="mod10")
    assert strict.receive(stream, AT, 0.0).events == []
    assert strict.decoder_stats.malformed >= 4


def test_wrap9_decided_then_a_zero_switches_to_mod10(caplog: pytest.LogCaptureFixture) -> None:
    session = AngelEyeSession()
    session.receive(b"".join(card_frame(n, "wrap9") for n in range(1, 12)), AT, 0.0)
    assert session.variant == "wrap9"
    with caplog.at_level(logging.ERROR):
        frame = angel_eye.EventFrame.card(0, parse_card("2D"), "player", 1).to_bytes()
        session.receive(frame, AT, 0.0)
    assert session.variant == "mod10"
    assert "contradicts" in caplog.text


@pytest.mark.parametrize("wrap", ["mod10", "wrap9"])
def test_free_signals_take_no_number(wrap: str) -> None:
    session = AngelEyeSession(variant=f"{wrap}-free-signals")
    stream = card_frame(1, wrap) + card_frame(2, wrap)
    stream += angel_eye.EventFrame(2, "S").to_bytes()  # carries the last number
    stream += card_frame(3, wrap)
    events = session.receive(stream, AT, 0.0).events
    assert sequences(events) == [("CardDrawn", 1), ("CardDrawn", 2), ("CardDrawn", 3)]
    # Under auto, the same stream proves it.
    auto = AngelEyeSession()
    assert sequences(auto.receive(stream, AT, 0.0).events) == sequences(events)
    assert auto.counter.detection.signals_numbered is False
    # A numbered-signal shoe puts its S on the next number: no gap either.
    numbered = AngelEyeSession(variant=wrap)
    stream = card_frame(1, wrap) + angel_eye.EventFrame(2, "S").to_bytes()
    stream += card_frame(3, wrap)
    assert sequences(numbered.receive(stream, AT, 0.0).events) == [
        ("CardDrawn", 1),
        ("CardDrawn", 3),
    ]


def test_data_bit7_required_ignored_auto() -> None:
    # Banker K♥ with bit 7 clear in both data bytes (a test vector of the other reading).
    raw_span = b"1D\x11\x4d\x03"
    frame = b"\x05" + raw_span + angel_eye.bcc(raw_span)
    required = AngelEyeSession(data_bit7="required")
    assert required.receive(frame, AT, 0.0).events == []
    assert required.decoder.bit7_rejected == 1
    for setting in ("ignored", "auto"):
        session = AngelEyeSession(data_bit7=setting)
        assert session.receive(frame, AT, 0.0).events == [
            CardDrawn(parse_card("KH"), 1, AT, "banker")
        ]
        assert session.observed.bit7_clear == 1


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (angel_eye.CardPayload(0, 0, 3, 1), "player card index 0"),
        (angel_eye.CardPayload(1, 4, 3, 1), "banker card index 4"),
        (angel_eye.CardPayload(0, 1, 0, 1), "suit code 0"),
        (angel_eye.CardPayload(0, 1, 5, 1), "suit code 5"),
        (angel_eye.CardPayload(0, 1, 3, 0), "rank 0"),
        (angel_eye.CardPayload(0, 1, 3, 14), "rank 14"),
        (angel_eye.CardPayload(0b011, 1, 3, 1), "unknown target"),
    ],
)
@pytest.mark.parametrize("data_bit7", ["required", "auto"])
def test_an_impossible_field_is_a_misread_never_a_card(
    payload: angel_eye.CardPayload, reason: str, data_bit7: str, caplog: pytest.LogCaptureFixture
) -> None:
    session = AngelEyeSession(data_bit7=data_bit7)
    frame = angel_eye.EventFrame(1, "D", payload.to_data()).to_bytes()
    with caplog.at_level(logging.WARNING):
        events = session.receive(frame, AT, 0.0).events
    assert events == [CardMisread(1, AT)]
    assert reason in caplog.text


def test_burn_count_and_outside_game_cards_keep_their_index() -> None:
    session = AngelEyeSession()
    burn_count = angel_eye.EventFrame(1, "D", angel_eye.CardPayload(0b101, 7, 3, 7).to_data())
    outside = angel_eye.EventFrame(2, "d", angel_eye.CardPayload(0b001, 0, 1, 2).to_data())
    events = session.receive(burn_count.to_bytes() + outside.to_bytes(), AT, 0.0).events
    assert [type(e) for e in events] == [CardDrawn, CardDrawn]


def test_game_result_goes_to_the_results_in_stream_order() -> None:
    session = AngelEyeSession()
    result = angel_eye.GameResult.of("banker", player_pair=True)
    assert result.to_data() == b"\xc1" and result.text == "banker wins, player pair"
    stream = card_frame(1, "mod10") + angel_eye.EventFrame(2, "G", result.to_data()).to_bytes()
    stream += card_frame(3, "mod10")
    reaction = session.receive(stream, AT, 0.0)
    assert [(place, r.result, r.sequence) for place, r in reaction.results] == [(1, result, 2)]
    assert angel_eye.GameResult.from_data(b"\xf0").outcome == "force-quit"
    assert "unknown outcome" in angel_eye.GameResult.from_data(b"\xb0").text


def test_s_after_the_cut_card_confirms_a_new_shoe() -> None:
    session = AngelEyeSession(variant="mod10")
    stream = angel_eye.EventFrame(1, "C").to_bytes() + angel_eye.EventFrame(2, "S").to_bytes()
    stream += angel_eye.EventFrame(3, "S").to_bytes()  # a second S confirms nothing more
    session.receive(stream, AT, 0.0)
    assert session.observed.new_shoes_confirmed == 1


def test_config_keys_are_validated() -> None:
    config = ShoeConfig.from_mapping(
        {"port": "/dev/ttyUSB0", "variant": "wrap9", "data_bit7": "ignored"}
    )
    session = config.make_session()
    assert isinstance(session, AngelEyeSession) and session.variant == "wrap9"
    options = ShoeConfig.from_mapping({"port": "/dev/ttyUSB0"}).options
    assert isinstance(options, AngelEyeOptions) and options.variant == "auto"
    for bad in (
        {"port": "/dev/ttyUSB0", "variant": "wrap8"},
        {"port": "/dev/ttyUSB0", "variant": 9},
        {"port": "/dev/ttyUSB0", "data_bit7": True},
        {"port": "/dev/ttyUSB0", "data_bit7": "maybe"},
    ):
        with pytest.raises(ConfigurationError):
            ShoeConfig.from_mapping(bad)
    with pytest.raises(ValueError):
        SequenceCounter("mod9")
