"""A toy shoe protocol, whole in one test module: the proof that a protocol is one plug-in.

Frames are NMEA-like text, the same both ways::

    $ KIND SEQ(4 digits) PAYLOAD * XX          $C0001AS*4B   card #1, ace of spades

``XX`` is the XOR of KIND..PAYLOAD as two upper-case hex digits. The shoe numbers its events
1, 2, 3... (C card, X cut card, U unreadable, F fault "code message", f fault cleared "code",
L lock "1"/"0"); the host sends K commands (LOCK, UNLOCK, CLEAR). No heartbeat, no
retransmission: a lost number is reported lost. Nothing outside this file knows it but the
one line that registers it: ``register("toy", "tests.shoe.toy_protocol")``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from controller.kernel.cards import parse_card
from controller.kernel.errors import ConfigurationError, RulesError
from drivers.shoe.codec import DecoderStats, ShoeProtocolError, hunt_start, require_bytes
from drivers.shoe.events import (
    CardDrawn,
    CardMisread,
    CardsLost,
    CutCardDrawn,
    ShoeFault,
    ShoeFaultCleared,
    ShoeLockChanged,
)
from drivers.shoe.registry import ShoeProtocol
from drivers.shoe.sessions import Capabilities, HostCommand, Reaction, ShoeSession, logger
from drivers.shoe.speaker import FAULT_MESSAGES, ShoeAction, ShoeSide, ShoeSpeaker

# --- codec ----------------------------------------------------------------------------------

START: Final = ord("$")
MAX_FRAME: Final = 64  # $ KIND SEQ, a payload of up to 52 characters, * XX
_FRAME: Final = re.compile(rb"\$([CXUFfLK])(\d{4})([ -#%-)+-~]*)\*([0-9A-F]{2})")
KINDS: Final = {
    "card": "C",
    "cut_card": "X",
    "misread": "U",
    "fault": "F",
    "fault_cleared": "f",
    "lock": "L",
}


def checksum(body: bytes) -> bytes:
    value = 0
    for byte in body:
        value ^= byte
    return b"%02X" % value


@dataclass(frozen=True, slots=True)
class ToyFrame:
    kind: str
    sequence: int
    payload: str = ""

    def to_bytes(self) -> bytes:
        body = f"{self.kind}{self.sequence % 10_000:04d}{self.payload}".encode("ascii")
        return b"$" + body + b"*" + checksum(body)

    @classmethod
    def from_bytes(cls, raw: bytes) -> ToyFrame:
        match = _FRAME.fullmatch(require_bytes(raw))
        if match is None:
            raise ShoeProtocolError(f"not a toy frame: {raw!r}")
        kind, digits, payload, check = match.groups()
        if checksum(kind + digits + payload) != check:
            raise ShoeProtocolError(f"bad checksum in {raw!r}")
        return cls(kind.decode(), int(digits), payload.decode())


class ToyDecoder:
    def __init__(self) -> None:
        self.stats = DecoderStats()
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def reset(self) -> None:
        self._buffer.clear()

    def feed(self, data: bytes) -> Sequence[ToyFrame]:
        self._buffer += require_bytes(data)
        frames: list[ToyFrame] = []
        buffer = self._buffer
        while buffer and hunt_start(buffer, START, self.stats):
            star = buffer.find(b"*", 1, MAX_FRAME)
            if star < 0:
                if len(buffer) >= MAX_FRAME or START in buffer[1:]:
                    self.stats.malformed += 1
                    del buffer[:1]
                    continue
                break
            if len(buffer) < star + 3:
                break
            raw = bytes(buffer[: star + 3])
            try:
                frames.append(ToyFrame.from_bytes(raw))
            except ShoeProtocolError:
                intact = checksum(raw[1:star]) == raw[star + 1 :]
                if intact:
                    self.stats.malformed += 1
                else:
                    self.stats.bad_checksum += 1
                del buffer[:1]
                continue
            del buffer[: star + 3]
            self.stats.frames += 1
        return frames


# --- session (the host's side) --------------------------------------------------------------

COMMANDS: Final = {
    HostCommand.LOCK: "LOCK",
    HostCommand.UNLOCK: "UNLOCK",
    HostCommand.CLEAR_ERROR: "CLEAR",
}


class ToySession(ShoeSession):
    name = "toy"
    default_baudrate = 19200
    capabilities = Capabilities(commands=frozenset(COMMANDS))

    def __init__(self) -> None:
        super().__init__()
        self.decoder = ToyDecoder()
        self.last: int | None = None
        self._commands = 0

    @property
    def decoder_stats(self) -> DecoderStats:
        return self.decoder.stats

    def resume(self, last_sequence: int) -> None:
        self.last = last_sequence

    def closed(self) -> None:
        self.decoder.reset()

    def command(self, command: HostCommand) -> bytes:
        word = COMMANDS.get(command)
        if word is None:
            raise ConfigurationError(f"the toy shoe protocol has no {command.value} command")
        self._commands += 1
        return ToyFrame("K", self._commands, word).to_bytes()

    def receive(self, data: bytes, at: float, now: float) -> Reaction:
        reaction = Reaction()
        for frame in self.decoder.feed(data):
            reaction.frames += 1
            if frame.kind == "K":
                continue
            sequence = frame.sequence
            if self.last is not None:
                if sequence <= self.last:
                    self.session_stats.duplicates_dropped += 1
                    continue
                lost = tuple(range(self.last + 1, sequence))
                if lost:
                    self.session_stats.sequences_lost += len(lost)
                    reaction.events.append(CardsLost(lost, at))
            self.last = sequence
            self._event(frame, at, reaction)
        return reaction

    def _event(self, frame: ToyFrame, at: float, reaction: Reaction) -> None:
        events, sequence, kind = reaction.events, frame.sequence, frame.kind
        if kind == "C":
            try:
                events.append(CardDrawn(parse_card(frame.payload), sequence, at))
            except RulesError:
                logger.warning("toy shoe sent an unknown card %r", frame.payload)
                events.append(CardMisread(sequence, at))
        elif kind == "X":
            events.append(CutCardDrawn(sequence, at))
        elif kind == "U":
            events.append(CardMisread(sequence, at))
        elif kind == "F":
            code, _, message = frame.payload.partition(" ")
            events.append(ShoeFault(code, message, at))
        elif kind == "f":
            events.append(ShoeFaultCleared(frame.payload, at))
        elif kind == "L":
            events.append(ShoeLockChanged(frame.payload == "1", at))


# --- speaker (the simulated shoe's side) ----------------------------------------------------

_ASKED: Final = {word: command for command, word in COMMANDS.items()}


class ToySpeaker(ShoeSpeaker):
    name = "toy"

    def __init__(self) -> None:
        self._decoder = ToyDecoder()

    def encode(self, action: ShoeAction) -> bytes:
        detail = action.detail or ""
        payload = {
            "card": str(action.card),
            "fault": f"E{detail} {FAULT_MESSAGES.get(int(detail or 0), 'error')}",
            "fault_cleared": f"E{detail}",
            "lock": detail,
        }.get(action.event, "")
        return ToyFrame(KINDS[action.event], action.sequence, payload).to_bytes()

    def plugged(self) -> None:
        self._decoder.reset()

    def host_bytes(self, data: bytes, shoe: ShoeSide) -> None:
        for frame in self._decoder.feed(data):
            shoe.command_received(frame.payload, _ASKED.get(frame.payload))
            if frame.payload in ("LOCK", "UNLOCK"):
                shoe.turn_key(frame.payload == "LOCK")
            elif frame.payload == "CLEAR":
                shoe.clear_error()


PROTOCOL = ShoeProtocol("toy", ToySession, ToySpeaker)
