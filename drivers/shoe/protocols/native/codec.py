"""livetable's native shoe protocol: sequence numbers, acknowledgements, retransmission.

For shoes a studio builds itself (a scanner on a microcontroller), so that no card is lost
across a cable pull: the shoe keeps every event until the host acknowledges it, and resends
from any sequence number the host asks for. Frames are printable ASCII between STX and ETX,
followed by a CRC-16 so a technician can read them on a terminal::

    STX KIND SEQ(8 hex) PAYLOAD(0..48 printable) ETX CRC(4 hex)
    02  43   30303030303030 31  4153               03  xxxx        card #1, ace of spades

``CRC`` is CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) of KIND..ETX, upper-case hex.
Pure code: no I/O, no clock.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass
from typing import Final

from drivers.shoe.codec import (
    BufferedDecoder,
    ShoeProtocolError,
    hunt_start,
    require_bytes,
)

STX: Final = 0x02
ETX: Final = 0x03
SEQUENCE_DIGITS: Final = 8
MAX_SEQUENCE: Final = 16**SEQUENCE_DIGITS - 1
MAX_PAYLOAD: Final = 48
MAX_FRAME: Final = 1 + 1 + SEQUENCE_DIGITS + MAX_PAYLOAD + 1 + 4
HEARTBEAT_S: Final = 0.2  # an idle shoe sends H at least this often
_HEX: Final = frozenset(b"0123456789ABCDEF")

# Shoe to host. Events (C X U F f L) use consecutive sequence numbers starting at 1.
CARD: Final = "C"  # payload: the card, e.g. "AS", "TD"
CUT_CARD: Final = "X"
UNREADABLE: Final = "U"  # a card left the shoe but its face could not be read
FAULT: Final = "F"  # payload: "code message"
FAULT_CLEARED: Final = "f"  # payload: "code"
LOCK: Final = "L"  # payload: "1" locked, "0" unlocked
HEARTBEAT: Final = "H"  # sequence: the last event the shoe has sent (0 if none); not an event
GONE: Final = "N"  # sequence: the oldest event still held; those before it cannot be resent
EVENT_KINDS: Final = frozenset((CARD, CUT_CARD, UNREADABLE, FAULT, FAULT_CLEARED, LOCK))

# Host to shoe.
ACKNOWLEDGE: Final = "A"  # sequence: every event up to and including it was delivered
RESEND: Final = "R"  # sequence: send again every event from this one on
COMMAND: Final = "K"  # payload: LOCK, UNLOCK or CLEAR; sequence: a command number
HOST_KINDS: Final = frozenset((ACKNOWLEDGE, RESEND, COMMAND))
COMMAND_WORDS: Final = frozenset(("LOCK", "UNLOCK", "CLEAR"))

KINDS: Final = EVENT_KINDS | {HEARTBEAT, GONE} | HOST_KINDS


def crc16(data: bytes) -> bytes:
    """CRC-16/CCITT-FALSE of ``data`` as four upper-case hex characters."""
    return b"%04X" % binascii.crc_hqx(data, 0xFFFF)


@dataclass(frozen=True, slots=True)
class NativeFrame:
    """One native frame, in either direction."""

    kind: str
    sequence: int
    payload: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ShoeProtocolError(f"unknown native frame kind {self.kind!r}")
        if not 0 <= self.sequence <= MAX_SEQUENCE:
            raise ShoeProtocolError(f"sequence {self.sequence} out of range")
        if len(self.payload) > MAX_PAYLOAD or not all(" " <= c <= "~" for c in self.payload):
            raise ShoeProtocolError(f"payload must be ≤ {MAX_PAYLOAD} printable ASCII")

    def to_bytes(self) -> bytes:
        body = f"{self.kind}{self.sequence:0{SEQUENCE_DIGITS}X}{self.payload}".encode("ascii")
        return b"\x02" + body + b"\x03" + crc16(body + b"\x03")

    @classmethod
    def from_bytes(cls, raw: bytes) -> NativeFrame:
        raw = require_bytes(raw)
        if len(raw) < 1 + 1 + SEQUENCE_DIGITS + 1 + 4 or raw[0] != STX or raw[-5] != ETX:
            raise ShoeProtocolError(f"not a native frame: {raw!r}")
        checked = raw[1:-4]
        if raw[-4:] != crc16(checked):
            raise ShoeProtocolError(f"bad CRC in {raw!r}: expected {crc16(checked)!r}")
        digits = raw[2 : 2 + SEQUENCE_DIGITS]
        if not set(digits) <= _HEX:
            raise ShoeProtocolError(f"bad sequence field in {raw!r}")
        try:
            payload = raw[2 + SEQUENCE_DIGITS : -5].decode("ascii")
        except UnicodeDecodeError as error:
            raise ShoeProtocolError(f"payload is not ASCII in {raw!r}") from error
        return cls(chr(raw[1]), int(digits, 16), payload)


class NativeDecoder(BufferedDecoder):
    """Incremental decoder for native frames (either direction): bytes in, frames out."""

    def feed(self, data: bytes) -> list[NativeFrame]:
        self._buffer += require_bytes(data)
        frames: list[NativeFrame] = []
        buffer = self._buffer
        while buffer and hunt_start(buffer, STX, self.stats):
            outcome = self._frame_end()
            if outcome is None:
                break
            if outcome < 0:
                self.stats.malformed += 1
                del buffer[:1]
                continue
            raw = bytes(buffer[:outcome])
            try:
                frame = NativeFrame.from_bytes(raw)
            except ShoeProtocolError:
                if raw[-4:] != crc16(raw[1:-4]):
                    self.stats.bad_checksum += 1
                else:
                    self.stats.malformed += 1
                del buffer[:1]
                continue
            del buffer[:outcome]
            frames.append(frame)
            self.stats.frames += 1
        return frames

    def _frame_end(self) -> int | None:
        """Length of the candidate frame at the buffer's start; None: wait; -1: not a frame."""
        buffer = self._buffer
        for index in range(1, min(len(buffer), MAX_FRAME - 4)):
            byte = buffer[index]
            if byte == ETX:
                if index < 1 + 1 + SEQUENCE_DIGITS:
                    return -1
                end = index + 5
                return end if len(buffer) >= end else None
            if not 0x20 <= byte <= 0x7E:  # STX, noise or a control byte inside the body
                return -1
        return -1 if len(buffer) >= MAX_FRAME - 4 else None
