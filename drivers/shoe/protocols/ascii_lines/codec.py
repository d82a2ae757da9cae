"""BeeTek-style ASCII line protocol: one card a line, ``SUIT RANK CR LF``.

``SA\\r\\n`` is the ace of spades, ``H10\\r\\n`` (or ``HT``) the ten of hearts. The suit letter
comes first (``C D H S``, any case), then the rank token (``A 2-9 10 T J Q K``, any case).
There is no checksum and no sequence number: a line that does not parse is reported as an
:class:`UnreadableLine`, never guessed at (the code this is reconstructed from turned a
garbled line into the ace of clubs). Pure code: no I/O, no clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from controller.kernel.cards import Card
from drivers.shoe.codec import BufferedDecoder, ShoeProtocolError, require_bytes

TERMINATORS: Final = b"\r\n"
MAX_LINE: Final = 32  # a card is at most 3 characters; room for a longer vendor token
_LINE: Final = re.compile(rb"([CDHScdhs])(A|[2-9]|10|T|J|Q|K)", re.IGNORECASE)
_RANK_TOKENS: Final[dict[bytes, str]] = {
    b"A": "A",
    **{str(n).encode(): str(n) for n in range(2, 10)},
    b"10": "T",
    b"T": "T",
    b"J": "J",
    b"Q": "Q",
    b"K": "K",
}
_WIRE_RANK: Final[dict[str, str]] = {"T": "10"}


@dataclass(frozen=True, slots=True)
class CardLine:
    """One card as the shoe sends it: upper-case suit, then ``A``/``2``-``10``/``J``/``Q``/``K``."""

    card: Card

    def to_bytes(self) -> bytes:
        rank = _WIRE_RANK.get(self.card.rank, self.card.rank)
        return f"{self.card.suit}{rank}".encode("ascii") + TERMINATORS

    @classmethod
    def from_bytes(cls, raw: bytes) -> CardLine:
        """Parse one line, with or without its CR LF."""
        text = require_bytes(raw).rstrip(TERMINATORS)
        match = _LINE.fullmatch(text)
        if match is None:
            raise ShoeProtocolError(f"not a card line: {raw!r}")
        suit = match.group(1).upper().decode("ascii")
        rank = _RANK_TOKENS[match.group(2).upper()]
        return cls(Card(rank, suit))


@dataclass(frozen=True, slots=True)
class UnreadableLine:
    """A line that is not a card: the shoe's 'could not read', or noise on the line.

    A card may have left the shoe without being identified, so the driver reports it as a
    misread rather than dropping it silently.
    """

    raw: bytes

    def to_bytes(self) -> bytes:
        return self.raw + TERMINATORS


LineFrame = CardLine | UnreadableLine


class AsciiLineDecoder(BufferedDecoder):
    """Incremental line decoder: bytes in, :class:`CardLine` / :class:`UnreadableLine` out.

    CR and LF both end a line and empty lines are ignored, so ``CR LF``, ``LF`` and ``CR``
    endings all work. A line longer than ``max_line`` is cut, reported once as unreadable,
    and the rest of it up to the next line end is skipped.
    """

    def __init__(self, max_line: int = MAX_LINE) -> None:
        if max_line < 4:
            raise ShoeProtocolError("max_line must leave room for a card")
        super().__init__()
        self.max_line = max_line
        self._skipping = False

    def reset(self) -> None:
        super().reset()
        self._skipping = False

    def feed(self, data: bytes) -> list[LineFrame]:
        frames: list[LineFrame] = []
        for chunk in re.split(rb"([\r\n])", require_bytes(data)):
            if chunk in (b"\r", b"\n"):
                if self._skipping:
                    self._skipping = False
                elif self._buffer:
                    frames.append(self._line(bytes(self._buffer)))
                self._buffer.clear()
                continue
            if self._skipping or not chunk:
                self.stats.garbage_bytes += len(chunk)
                continue
            self._buffer += chunk
            if len(self._buffer) > self.max_line:
                self.stats.overflows += 1
                frames.append(UnreadableLine(bytes(self._buffer[: self.max_line])))
                self.stats.garbage_bytes += len(self._buffer) - self.max_line
                self._buffer.clear()
                self._skipping = True
        self.stats.frames += sum(isinstance(frame, CardLine) for frame in frames)
        return frames

    def _line(self, raw: bytes) -> LineFrame:
        try:
            return CardLine.from_bytes(raw)
        except ShoeProtocolError:
            self.stats.malformed += 1
            return UnreadableLine(raw)
