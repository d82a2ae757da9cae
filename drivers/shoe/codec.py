"""What every shoe codec shares: the :class:`Frame` and :class:`Decoder` protocols, the error
type and the counters a decoder keeps.

Pure code: no I/O, no clock, no logging. A decoder is fed bytes and returns frames; it never
raises anything but :class:`ShoeProtocolError`, and for bytes off the wire it does not raise at
all: it drops what does not make a frame, counts why, and resyncs on the next start byte.
Every protocol's codec (``drivers/shoe/protocols/<name>/codec.py``) satisfies both protocols,
so the property tests and the tools hold any decoder by these two types alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from controller.kernel.errors import ProtocolError


class ShoeProtocolError(ProtocolError):
    """Bytes that do not make a valid shoe frame, or a frame that cannot be encoded.

    Examples: ``EventFrame.from_bytes`` given a frame whose BCC does not match; a card line
    ``"X9"``; a native frame whose payload holds a control byte.
    """


@dataclass(slots=True)
class DecoderStats:
    """Why bytes were dropped. Reported by ``livetable shoe monitor`` and the soak test."""

    frames: int = 0
    """Frames decoded and returned."""
    bad_checksum: int = 0
    """Complete frames dropped because their checksum did not match."""
    malformed: int = 0
    """Spans that started like a frame but broke its layout (unknown code, bad length...)."""
    garbage_bytes: int = 0
    """Bytes skipped while hunting for the next start byte."""
    overflows: int = 0
    """Times the buffer hit its cap and was emptied."""


def require_bytes(data: object) -> bytes:
    """Return ``data`` as ``bytes``; anything that is not bytes-like is a protocol error."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise ShoeProtocolError(f"a decoder is fed bytes, not {type(data).__name__}")


def hunt_start(buffer: bytearray, start_byte: int, stats: DecoderStats) -> bool:
    """Drop (and count as garbage) everything before the first ``start_byte`` in ``buffer``.

    Returns whether ``buffer`` now begins with it (pymodbus's "hunting mode": after garbage
    or a broken frame, the next start byte is the next chance of a frame).
    """
    start = buffer.find(start_byte)
    if start < 0:
        stats.garbage_bytes += len(buffer)
        buffer.clear()
        return False
    if start:
        stats.garbage_bytes += start
        del buffer[:start]
    return True


class BufferedDecoder:
    """What every byte-stream decoder keeps: its counters and the bytes that wait for the
    rest of a frame (``buffered``), forgotten by ``reset`` when the link drops. A decoder
    with more state of its own extends ``reset``."""

    def __init__(self) -> None:
        self.stats = DecoderStats()
        self._buffer = bytearray()

    def reset(self) -> None:
        """Forget a partial frame (the link dropped: its rest will never come)."""
        self._buffer.clear()

    @property
    def buffered(self) -> int:
        """Bytes held for the rest of a frame."""
        return len(self._buffer)


class Frame(Protocol):
    """One frame of some shoe protocol: a frozen dataclass that writes itself back to bytes.

    Each frame class also has a ``from_bytes(raw)`` classmethod, its exact inverse, raising
    only :class:`ShoeProtocolError` (classmethods are not part of a ``typing.Protocol``).
    """

    def to_bytes(self) -> bytes: ...


FrameT_co = TypeVar("FrameT_co", bound=Frame, covariant=True)


class Decoder(Protocol[FrameT_co]):
    """Bytes in, frames out, incrementally: what the session of every protocol reads with.

    ``feed`` takes any chunk (a whole stream, one byte) and returns the frames it completed;
    chunking never changes what is decoded. ``buffered`` is how many bytes wait for the rest
    of a frame: bounded, whatever is fed. ``reset`` forgets them (the link dropped).
    """

    stats: DecoderStats

    def feed(self, data: bytes) -> Sequence[FrameT_co]: ...

    def reset(self) -> None: ...

    @property
    def buffered(self) -> int: ...
