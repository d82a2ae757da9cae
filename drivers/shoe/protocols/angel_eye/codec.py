"""Angel Eye II-EX style frames: ENQ event telegrams in, STX host commands out, ACK/NAK.

Reconstructed from an integrator's bridge code, not from a vendor specification; see
``docs/shoe-protocol.md`` for what is known and what is guessed. Pure code: no I/O, no clock.

Shoe to host::

    ENQ SEQ CODE DATA(0..6) ETX BCC_hi BCC_lo     05 31 44 81 B1 03 34 36  (Player #1, A♠)

``BCC`` is the XOR of SEQ..ETX as two upper-case hex characters. The data length is fixed by
the code, so the decoder knows where ETX must be and resyncs on the next start byte when it
is not there.

Host to shoe::

    STX 'O' 'P' T1 T2 D1 D2 ETX BCC_hi BCC_lo      02 4F 50 4C 4B 30 32 03 31 42  (lock)

Whether the command BCC includes STX is unresolved (the spec's own example only works with
STX included): :class:`HostCommand` takes it as a setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from controller.kernel.cards import Card
from controller.kernel.errors import RulesError
from drivers.shoe.codec import (
    BufferedDecoder,
    ShoeProtocolError,
    hunt_start,
    require_bytes,
)

STX: Final = 0x02
ETX: Final = 0x03
ENQ: Final = 0x05
ACK_BYTE: Final = 0x06
NAK_BYTE: Final = 0x15
START_BYTES: Final = frozenset((STX, ENQ, ACK_BYTE, NAK_BYTE))
CONTROL_BYTES: Final = frozenset((STX, ETX, ENQ, ACK_BYTE, NAK_BYTE))

# How SEQ and the data bytes are read (see docs/shoe-protocol.md, "the two readings"):
# "digits" takes only '0'-'9' as SEQ (anything else is noise), "any" takes any byte from
# 0x20 up; a data byte with bit 7 clear is noise under "required", masked under "ignored".
SEQ_ALPHABETS: Final = ("digits", "any")
BIT7_RULES: Final = ("required", "ignored")

# Data bytes that follow each event code; a code not listed here is not a frame we accept.
DATA_LENGTH: Final[dict[str, int]] = {
    "S": 0,  # start of communication
    "P": 0,  # stand by
    "C": 0,  # cutting card drawn
    "D": 2,  # card drawn in a game
    "d": 2,  # card drawn outside a game (lock, error or setting mode)
    "R": 2,  # card retransmission (the card for the next round after an overdraw)
    "G": 1,  # game result
    "E": 1,  # error occurred
    "e": 1,  # error cancelled
    "L": 1,  # lock status (physical key)
    "M": 6,  # preset changed: 2 ASCII address + 4 ASCII value
}
CARD_CODES: Final = frozenset("DdR")

# Bits 6-4 of card byte 1 for D and R.
TARGETS: Final[dict[int, str]] = {
    0b000: "player",
    0b001: "banker",
    0b010: "burn",
    0b100: "first",
    0b101: "burn-count",
}
TARGET_CODES: Final[dict[str, int]] = {name: code for code, name in TARGETS.items()}
# Bits 6-4 of card byte 1 for d.
MODES: Final[dict[int, str]] = {0b000: "lock", 0b001: "error", 0b010: "setting"}

# Bits 6-4 of card byte 2, and our suit letters.
SUIT_CODES: Final[dict[str, int]] = {"D": 1, "C": 2, "S": 3, "H": 4}
SUITS_BY_CODE: Final[dict[int, str]] = {code: suit for suit, code in SUIT_CODES.items()}
RANKS: Final = "A23456789TJQK"

ERROR_MESSAGES: Final[dict[int, str]] = {
    1: "card could not be read",
    2: "overdraw (too many cards drawn)",
    3: "button mishandled",
    4: "card pulled back at the exit",
    5: "card pulled back midway",
    6: "card code error",
    7: "draw timed out",
}
UNREADABLE_CARD_ERROR: Final = 1

NAK_MESSAGES: Final[dict[int, str]] = {
    0x01: "overrun, framing or parity error",
    0x02: "BCC error",
    0x03: "no ETX",
    0x11: "telegram format or length error",
    0x12: "invalid setting address",
    0x13: "invalid command",
    0x14: "invalid operation type",
    0x21: "shoe busy",
    0x22: "write in progress",
    0xFF: "other error",
}

COMMAND_LENGTH: Final = 10  # STX O P T1 T2 D1 D2 ETX BCC BCC
MAX_REPLY_LENGTH: Final = 64  # STX replies: the bridge never saw one; generous, bounded
DEFAULT_MAX_BUFFER: Final = 128  # the bridge clears its buffer past 128 bytes without ETX


def bcc(span: bytes) -> bytes:
    """XOR of ``span`` as two upper-case ASCII hex characters (the bridge compares text)."""
    value = 0
    for byte in span:
        value ^= byte
    return b"%02X" % value


@dataclass(frozen=True, slots=True)
class CardPayload:
    """The two data bytes of a ``D``, ``d`` or ``R`` event, unpacked but not yet judged."""

    target: int
    index: int
    suit: int
    rank: int

    @classmethod
    def from_data(cls, data: bytes) -> CardPayload:
        if len(data) != 2:
            raise ShoeProtocolError(f"a card payload has 2 bytes, not {len(data)}")
        return cls(
            target=(data[0] >> 4) & 0b111,
            index=data[0] & 0x0F,
            suit=(data[1] >> 4) & 0b111,
            rank=data[1] & 0x0F,
        )

    @classmethod
    def for_card(cls, card: Card, target: str = "player", index: int = 1) -> CardPayload:
        if target not in TARGET_CODES:
            raise ShoeProtocolError(f"unknown card target {target!r}")
        return cls(TARGET_CODES[target], index, SUIT_CODES[card.suit], card.rank_index)

    def to_data(self) -> bytes:
        if not (0 <= self.target <= 7 and 0 <= self.index <= 15):
            raise ShoeProtocolError(f"card target/index out of range: {self}")
        if not (0 <= self.suit <= 7 and 0 <= self.rank <= 15):
            raise ShoeProtocolError(f"card suit/rank out of range: {self}")
        return bytes((0x80 | self.target << 4 | self.index, 0x80 | self.suit << 4 | self.rank))

    def card(self) -> Card:
        """The face, or :class:`ShoeProtocolError` for a suit or rank the shoe cannot send."""
        suit = SUITS_BY_CODE.get(self.suit)
        if suit is None or not 1 <= self.rank <= 13:
            raise ShoeProtocolError(f"no such card: suit code {self.suit}, rank {self.rank}")
        try:
            return Card(RANKS[self.rank - 1], suit)
        except RulesError as error:  # pragma: no cover - the table above is complete
            raise ShoeProtocolError(str(error)) from error

    @property
    def target_name(self) -> str | None:
        return TARGETS.get(self.target)

    def impossible(self, code: str = "D") -> str | None:
        """Why no shoe can have sent these fields (for event ``code``), or None.

        A Player or Banker card is the 1st to 3rd of its hand; a suit is one of four codes;
        a rank is 1-13. ``d`` carries a mode instead of a target, its index is not checked.
        """
        if code != "d":
            name = self.target_name
            if name is None:
                return f"unknown target code {self.target:03b}"
            if name in ("player", "banker") and not 1 <= self.index <= 3:
                return f"{name} card index {self.index} (a hand holds cards 1-3)"
        if self.suit not in SUITS_BY_CODE:
            return f"suit code {self.suit} (1-4 only)"
        if not 1 <= self.rank <= 13:
            return f"rank {self.rank} (1-13 only)"
        return None


@dataclass(frozen=True, slots=True)
class ErrorPayload:
    """The data byte of an ``E`` event: ``1 M CCCCCC``, the shoe's error ``code`` (see
    :data:`ERROR_MESSAGES`; 1 is a card that could not be read) and ``M``, whether the shoe
    is now in error mode."""

    code: int
    error_mode: bool = True

    @classmethod
    def from_data(cls, data: bytes) -> ErrorPayload:
        if len(data) != 1:
            raise ShoeProtocolError(f"an error has 1 byte, not {len(data)}")
        return cls(data[0] & 0x3F, bool(data[0] & 0x40))

    def to_data(self) -> bytes:
        if not 0 <= self.code <= 0x3F:
            raise ShoeProtocolError(f"error code {self.code} out of range (0-63)")
        return bytes((0x80 | self.error_mode << 6 | self.code,))

    @property
    def unreadable_card(self) -> bool:
        return self.code == UNREADABLE_CARD_ERROR

    @property
    def message(self) -> str:
        return ERROR_MESSAGES.get(self.code, "unknown error")


@dataclass(frozen=True, slots=True)
class ErrorClearedPayload:
    """The data byte of an ``e`` event: ``1 CCCCCCC``, the code of the error cancelled."""

    code: int

    @classmethod
    def from_data(cls, data: bytes) -> ErrorClearedPayload:
        if len(data) != 1:
            raise ShoeProtocolError(f"a cancelled error has 1 byte, not {len(data)}")
        return cls(data[0] & 0x7F)

    def to_data(self) -> bytes:
        if not 0 <= self.code <= 0x7F:
            raise ShoeProtocolError(f"error code {self.code} out of range (0-127)")
        return bytes((0x80 | self.code,))


@dataclass(frozen=True, slots=True)
class LockPayload:
    """The data byte of an ``L`` event: bit 0 set while the physical key is locked."""

    locked: bool

    @classmethod
    def from_data(cls, data: bytes) -> LockPayload:
        if len(data) != 1:
            raise ShoeProtocolError(f"a lock status has 1 byte, not {len(data)}")
        return cls(bool(data[0] & 0x01))

    def to_data(self) -> bytes:
        return bytes((0x80 | self.locked,))


@dataclass(frozen=True, slots=True)
class EventFrame:
    """An unsolicited event from the shoe (ENQ telegram).

    ``sequence`` is the SEQ symbol: 0-9 for the digits ``'0'``-``'9'`` (how the shoe counts
    with them is the session's business, see :mod:`drivers.shoe.protocols.angel_eye.variants`); any
    other SEQ byte (0x20-0xFF, a letter for instance) is the byte itself, so the two ranges
    never overlap. ``data`` has bit 7 set in every byte except for ``M``, whose data is
    ASCII, unless the shoe is read with bit 7 ignored; it never holds a control byte.
    """

    sequence: int
    code: str
    data: bytes = b""

    def __post_init__(self) -> None:
        sequence = self.sequence
        if not (0 <= sequence <= 9 or (0x20 <= sequence <= 0xFF and not 0x30 <= sequence <= 0x39)):
            raise ShoeProtocolError(
                f"SEQ must be a digit 0-9 or a byte 0x20-0xFF that is no digit, not {sequence}"
            )
        expected = DATA_LENGTH.get(self.code)
        if expected is None:
            raise ShoeProtocolError(f"unknown event code {self.code!r}")
        if len(self.data) != expected:
            raise ShoeProtocolError(
                f"event {self.code!r} carries {expected} data bytes, not {len(self.data)}"
            )
        if self.code == "M":
            if not all(0x20 <= byte < 0x7F for byte in self.data):
                raise ShoeProtocolError("event 'M' carries printable ASCII only")
        elif any(byte in CONTROL_BYTES for byte in self.data):
            raise ShoeProtocolError(f"event {self.code!r} data holds a control byte")

    @classmethod
    def card(
        cls, sequence: int, card: Card, target: str = "player", index: int = 1, code: str = "D"
    ) -> EventFrame:
        """A ``D`` (or ``d``/``R``) frame for ``card``."""
        return cls(sequence, code, CardPayload.for_card(card, target, index).to_data())

    @property
    def seq_byte(self) -> int:
        """The SEQ byte on the wire."""
        return 0x30 + self.sequence if self.sequence <= 9 else self.sequence

    @property
    def seq_text(self) -> str:
        """The SEQ as a person reads it: ``'7'``, ``'A'``, or ``0x8F`` for an unprintable."""
        byte = self.seq_byte
        return chr(byte) if 0x20 <= byte < 0x7F else f"0x{byte:02X}"

    @property
    def bit7_set(self) -> bool:
        """Whether every data byte has bit 7 set (``M`` carries ASCII: always True)."""
        return self.code == "M" or all(byte & 0x80 for byte in self.data)

    @property
    def card_payload(self) -> CardPayload:
        if self.code not in CARD_CODES:
            raise ShoeProtocolError(f"event {self.code!r} carries no card")
        return CardPayload.from_data(self.data)

    @property
    def error(self) -> ErrorPayload:
        if self.code != "E":
            raise ShoeProtocolError(f"event {self.code!r} carries no error")
        return ErrorPayload.from_data(self.data)

    @property
    def error_cleared(self) -> ErrorClearedPayload:
        if self.code != "e":
            raise ShoeProtocolError(f"event {self.code!r} cancels no error")
        return ErrorClearedPayload.from_data(self.data)

    @property
    def lock(self) -> LockPayload:
        if self.code != "L":
            raise ShoeProtocolError(f"event {self.code!r} carries no lock status")
        return LockPayload.from_data(self.data)

    @property
    def game_result(self) -> GameResult:
        if self.code != "G":
            raise ShoeProtocolError(f"event {self.code!r} carries no game result")
        return GameResult.from_data(self.data)

    def to_bytes(self) -> bytes:
        span = bytes((self.seq_byte,)) + self.code.encode("ascii") + self.data + b"\x03"
        return b"\x05" + span + bcc(span)

    @classmethod
    def from_bytes(
        cls, raw: bytes, seq_alphabet: str = "digits", data_bit7: str = "required"
    ) -> EventFrame:
        """Parse one frame; the defaults are livetable's strict reading (see the module)."""
        raw = require_bytes(raw)
        if len(raw) < 6 or raw[0] != ENQ:
            raise ShoeProtocolError(f"not an event frame: {raw!r}")
        if raw[-3] != ETX:
            raise ShoeProtocolError(f"event frame without ETX before the BCC: {raw!r}")
        if raw[-2:] != bcc(raw[1:-2]):
            raise ShoeProtocolError(f"bad BCC in {raw!r}: expected {bcc(raw[1:-2])!r}")
        if not seq_allowed(raw[1], seq_alphabet):
            raise ShoeProtocolError(f"SEQ {raw[1]:#04x} is not in the {seq_alphabet} alphabet")
        code = chr(raw[2])
        seq = raw[1] - 0x30 if 0x30 <= raw[1] <= 0x39 else raw[1]
        frame = cls(seq, code, raw[3:-3])
        if data_bit7 == "required" and not frame.bit7_set:
            raise ShoeProtocolError(f"event {code!r} data must have bit 7 set: {raw!r}")
        return frame


RESULT_OUTCOMES: Final[dict[int, str]] = {
    0b001: "player",
    0b010: "tie",
    0b100: "banker",
    0b111: "force-quit",
}


@dataclass(frozen=True, slots=True)
class GameResult:
    """The shoe's own result of a hand (``G``): ``1 OOO xx PP``.

    ``outcome`` is ``player``, ``banker``, ``tie``, ``force-quit`` (the hand was aborted) or
    None for an outcome code no one has documented.
    """

    outcome: str | None
    player_pair: bool
    banker_pair: bool
    raw: int

    @classmethod
    def from_data(cls, data: bytes) -> GameResult:
        if len(data) != 1:
            raise ShoeProtocolError(f"a game result has 1 byte, not {len(data)}")
        byte = data[0]
        return cls(RESULT_OUTCOMES.get((byte >> 4) & 0b111), bool(byte & 1), bool(byte & 2), byte)

    @classmethod
    def of(cls, outcome: str, player_pair: bool = False, banker_pair: bool = False) -> GameResult:
        codes = {name: code for code, name in RESULT_OUTCOMES.items()}
        if outcome not in codes:
            raise ShoeProtocolError(f"unknown game outcome {outcome!r}")
        byte = 0x80 | codes[outcome] << 4 | banker_pair << 1 | player_pair
        return cls(outcome, player_pair, banker_pair, byte)

    def to_data(self) -> bytes:
        return bytes((self.raw,))

    @property
    def text(self) -> str:
        """In plain words: ``banker wins, player pair``."""
        if self.outcome is None:
            words = f"unknown outcome code {(self.raw >> 4) & 0b111:03b}"
        elif self.outcome in ("player", "banker"):
            words = f"{self.outcome} wins"
        elif self.outcome == "tie":
            words = "tie"
        else:
            words = "hand aborted (force quit)"
        pairs = [
            f"{side} pair"
            for side, flag in (("player", self.player_pair), ("banker", self.banker_pair))
            if flag
        ]
        return ", ".join([words, *pairs])


@dataclass(frozen=True, slots=True)
class ReplyFrame:
    """``STX data ETX BCC`` from the shoe (an answer to a read/setting command)."""

    data: bytes

    def __post_init__(self) -> None:
        if STX in self.data or ETX in self.data or len(self.data) > MAX_REPLY_LENGTH - 4:
            raise ShoeProtocolError(f"unencodable reply data {self.data!r}")

    def to_bytes(self) -> bytes:
        span = self.data + b"\x03"
        return b"\x02" + span + bcc(span)

    @classmethod
    def from_bytes(cls, raw: bytes) -> ReplyFrame:
        raw = require_bytes(raw)
        if len(raw) < 4 or raw[0] != STX or raw[-3] != ETX or raw[-2:] != bcc(raw[1:-2]):
            raise ShoeProtocolError(f"not a valid reply frame: {raw!r}")
        return cls(raw[1:-3])


@dataclass(frozen=True, slots=True)
class Ack:
    """The one-byte positive answer to a host command."""

    def to_bytes(self) -> bytes:
        return b"\x06"

    @classmethod
    def from_bytes(cls, raw: bytes) -> Ack:
        if require_bytes(raw) != b"\x06":
            raise ShoeProtocolError(f"not an ACK: {raw!r}")
        return cls()


@dataclass(frozen=True, slots=True)
class Nak:
    """The negative answer: NAK then one raw code byte (see :data:`NAK_MESSAGES`)."""

    code: int

    def __post_init__(self) -> None:
        if not 0 <= self.code <= 0xFF:
            raise ShoeProtocolError(f"NAK code must be one byte, not {self.code}")

    @property
    def message(self) -> str:
        return NAK_MESSAGES.get(self.code, "unknown NAK code")

    def to_bytes(self) -> bytes:
        return bytes((NAK_BYTE, self.code))

    @classmethod
    def from_bytes(cls, raw: bytes) -> Nak:
        raw = require_bytes(raw)
        if len(raw) != 2 or raw[0] != NAK_BYTE:
            raise ShoeProtocolError(f"not a NAK: {raw!r}")
        return cls(raw[1])


# Commands the host may send, with the data values each accepts.
COMMANDS: Final[dict[str, frozenset[str]]] = {
    "LK": frozenset(("01", "02")),  # 02 lock, 01 unlock
    "EC": frozenset(("00", "01", "02")),  # clear error / overdraw keep card / discard card
    "GP": frozenset(("00",)),  # game-process confirmation
}


@dataclass(frozen=True, slots=True)
class HostCommand:
    """``STX 'OP' TYPE VALUE ETX BCC`` from host to shoe.

    ``bcc_includes_stx``: True follows the spec's worked example (Lock ON -> "1B") and the
    bridge; False follows the spec's prose. Unconfirmed on hardware, hence a setting.
    """

    command: str
    value: str
    bcc_includes_stx: bool = True

    def __post_init__(self) -> None:
        if self.value not in COMMANDS.get(self.command, ()):
            raise ShoeProtocolError(f"unknown host command {self.command} {self.value}")

    def to_bytes(self) -> bytes:
        span = b"OP" + self.command.encode("ascii") + self.value.encode("ascii") + b"\x03"
        checked = b"\x02" + span if self.bcc_includes_stx else span
        return b"\x02" + span + bcc(checked)

    @classmethod
    def from_bytes(cls, raw: bytes, bcc_includes_stx: bool | None = None) -> HostCommand:
        """Parse a command; ``bcc_includes_stx=None`` accepts either convention."""
        raw = require_bytes(raw)
        if len(raw) != COMMAND_LENGTH or raw[0] != STX or raw[1:3] != b"OP" or raw[7] != ETX:
            raise ShoeProtocolError(f"not a host command: {raw!r}")
        conventions = (True, False) if bcc_includes_stx is None else (bcc_includes_stx,)
        for includes_stx in conventions:
            checked = raw[:8] if includes_stx else raw[1:8]
            if raw[8:] == bcc(checked):
                try:
                    text = raw[3:7].decode("ascii")
                except UnicodeDecodeError as error:
                    raise ShoeProtocolError(f"not a host command: {raw!r}") from error
                return cls(text[:2], text[2:], includes_stx)
        raise ShoeProtocolError(f"bad BCC in host command {raw!r}")


ShoeFrame = EventFrame | ReplyFrame | Ack | Nak


def seq_allowed(byte: int, seq_alphabet: str) -> bool:
    """Whether ``byte`` can be a SEQ under ``seq_alphabet`` (``digits`` or ``any``)."""
    if seq_alphabet == "digits":
        return 0x30 <= byte <= 0x39
    return byte >= 0x20


class AngelEyeDecoder(BufferedDecoder):
    """Incremental decoder for what the shoe sends: bytes in, frames out.

    Bytes before a start byte are skipped; a span that starts like a frame but is not one is
    dropped one byte at a time so that a real frame inside it is still found; a complete
    event frame whose BCC does not match is dropped and counted. The buffer never grows past
    ``max_buffer`` bytes.
    """

    def __init__(
        self,
        max_buffer: int = DEFAULT_MAX_BUFFER,
        seq_alphabet: str = "digits",
        data_bit7: str = "required",
    ) -> None:
        if max_buffer < MAX_REPLY_LENGTH:
            raise ShoeProtocolError(f"max_buffer must be at least {MAX_REPLY_LENGTH}")
        if seq_alphabet not in SEQ_ALPHABETS or data_bit7 not in BIT7_RULES:
            raise ShoeProtocolError(f"unknown reading: SEQ {seq_alphabet!r}, bit 7 {data_bit7!r}")
        self.max_buffer = max_buffer
        self.seq_alphabet = seq_alphabet
        self.data_bit7 = data_bit7
        super().__init__()
        self.bit7_rejected = 0
        """Intact frames (right BCC) dropped only because a data byte had bit 7 clear."""

    def feed(self, data: bytes) -> list[ShoeFrame]:
        self._buffer += require_bytes(data)
        frames: list[ShoeFrame] = []
        while True:
            result = self._next()
            if result is None:
                break
            frames.append(result)
            self.stats.frames += 1
        if len(self._buffer) > self.max_buffer:  # unreachable with bounded frames; a backstop
            self.stats.overflows += 1
            self._buffer.clear()
        return frames

    def _skip(self, count: int, malformed: bool = False) -> None:
        del self._buffer[:count]
        if malformed:
            self.stats.malformed += 1
        else:
            self.stats.garbage_bytes += count

    def _next(self) -> ShoeFrame | None:
        buffer = self._buffer
        while buffer:
            start = buffer[0]
            if start not in START_BYTES:
                skip = 1
                while skip < len(buffer) and buffer[skip] not in START_BYTES:
                    skip += 1
                self._skip(skip)
                continue
            if start == ACK_BYTE:
                del buffer[:1]
                return Ack()
            if start == NAK_BYTE:
                if len(buffer) < 2:
                    return None
                code = buffer[1]
                if code not in NAK_MESSAGES:
                    # A stray 0x15 in noise must not swallow the ENQ of the next frame.
                    self._skip(1, malformed=True)
                    continue
                del buffer[:2]
                return Nak(code)
            if start == ENQ:
                frame, outcome = self._event()
            else:
                frame, outcome = self._reply()
            if outcome == "wait":
                return None
            if frame is not None:
                return frame
            if outcome == "bad_checksum":
                self.stats.bad_checksum += 1
                del buffer[:1]
            else:
                self._skip(1, malformed=True)
        return None

    def _event(self) -> tuple[EventFrame | None, str]:
        buffer = self._buffer
        if len(buffer) < 3:
            return None, "wait"
        length = DATA_LENGTH.get(chr(buffer[2]))
        if length is None or not seq_allowed(buffer[1], self.seq_alphabet):
            return None, "malformed"
        end = 3 + length + 3
        if len(buffer) > 3 + length and buffer[3 + length] != ETX:
            return None, "malformed"
        if len(buffer) < end:
            # An ETX or start byte where data should be means this span is not a frame.
            data = buffer[3 : 3 + length]
            if any(byte in START_BYTES or byte == ETX for byte in data):
                return None, "malformed"
            return None, "wait"
        raw = bytes(buffer[:end])
        if raw[-3] != ETX:
            return None, "malformed"
        try:
            frame = EventFrame.from_bytes(raw, self.seq_alphabet, "ignored")
        except ShoeProtocolError:
            return None, "bad_checksum" if raw[-2:] != bcc(raw[1:-2]) else "malformed"
        if self.data_bit7 == "required" and not frame.bit7_set:
            self.bit7_rejected += 1
            return None, "malformed"
        del buffer[:end]
        return frame, "ok"

    def _reply(self) -> tuple[ReplyFrame | None, str]:
        buffer = self._buffer
        limit = min(len(buffer), MAX_REPLY_LENGTH)
        for etx in range(1, limit):
            byte = buffer[etx]
            if byte == ETX:
                break
            if byte in START_BYTES:  # a frame starts inside: this span is not a reply
                return None, "malformed"
        else:
            return (None, "malformed") if len(buffer) >= MAX_REPLY_LENGTH else (None, "wait")
        if len(buffer) < etx + 3:
            return None, "wait"
        raw = bytes(buffer[: etx + 3])
        if raw[-2:] != bcc(raw[1:-2]):
            return None, "bad_checksum"
        del buffer[: etx + 3]
        return ReplyFrame(raw[1:-3]), "ok"


class HostCommandDecoder(BufferedDecoder):
    """The shoe's side: decodes host commands (either BCC convention, or only one)."""

    def __init__(self, bcc_includes_stx: bool | None = None) -> None:
        super().__init__()
        self.bcc_includes_stx = bcc_includes_stx
        self.rejected: list[tuple[bytes, int]] = []
        """Complete command spans that failed, with the NAK code the shoe should answer."""

    def feed(self, data: bytes) -> list[HostCommand]:
        self._buffer += require_bytes(data)
        commands: list[HostCommand] = []
        buffer = self._buffer
        while buffer and hunt_start(buffer, STX, self.stats):
            if len(buffer) < COMMAND_LENGTH:
                break
            raw = bytes(buffer[:COMMAND_LENGTH])
            try:
                command = HostCommand.from_bytes(raw, self.bcc_includes_stx)
            except ShoeProtocolError:
                well_framed = raw[7] == ETX
                self.stats.bad_checksum += well_framed
                self.stats.malformed += not well_framed
                self.rejected.append((raw, 0x02 if well_framed else 0x11))
                del buffer[:1]
                continue
            del buffer[:COMMAND_LENGTH]
            commands.append(command)
            self.stats.frames += 1
        return commands
