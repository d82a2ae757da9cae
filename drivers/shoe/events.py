"""What the shoe driver puts on the controller's queue.

Frozen dataclasses named as nouns in the past tense. ``at`` is the wall-clock time (seconds
since the epoch) at which the driver decoded the frame: time arrives inside events, so the
table's state machine never reads a clock and its journal replays identically.
``sequence`` is the shoe's own draw counter where the protocol has one, else ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.games.cards import Card


@dataclass(frozen=True, slots=True)
class CardDrawn:
    """The scanner read a card leaving the shoe."""

    card: Card
    sequence: int | None
    at: float
    position: str | None = None
    """Where the shoe says the card goes, when its protocol says so (Angel Eye: ``player``,
    ``banker``, ``burn``, ``first``, ``burn-count``, or ``outside-game`` for a card drawn
    while the shoe was locked or in error); ``None`` otherwise."""


@dataclass(frozen=True, slots=True)
class CutCardDrawn:
    """The plastic cut card came out: the current (or next) round is the shoe's last."""

    sequence: int | None
    at: float


@dataclass(frozen=True, slots=True)
class CardMisread:
    """A card left the shoe but the scanner could not read its face."""

    sequence: int | None
    at: float


@dataclass(frozen=True, slots=True)
class CardsLost:
    """Sequence numbers the shoe sent that never arrived and cannot be recovered."""

    sequences: tuple[int, ...]
    at: float


@dataclass(frozen=True, slots=True)
class ShoeFault:
    """The shoe reported an error of its own (jam, sensor fault, ...)."""

    code: str
    message: str
    at: float


@dataclass(frozen=True, slots=True)
class ShoeFaultCleared:
    """The shoe reports that one of its errors (same ``code`` as the :class:`ShoeFault`) ended."""

    code: str
    at: float


@dataclass(frozen=True, slots=True)
class ShoeLockChanged:
    """The shoe confirmed that its gate is now locked (no card can leave) or unlocked."""

    locked: bool
    at: float


@dataclass(frozen=True, slots=True)
class ShoeOnline:
    """The port is open and the shoe is talking (at start and after every reconnect)."""

    port: str
    at: float


@dataclass(frozen=True, slots=True)
class ShoeOffline:
    """The port vanished, stopped answering or went silent past the heartbeat timeout."""

    port: str
    reason: str
    at: float


ShoeEvent = (
    CardDrawn
    | CutCardDrawn
    | CardMisread
    | CardsLost
    | ShoeFault
    | ShoeFaultCleared
    | ShoeLockChanged
    | ShoeOnline
    | ShoeOffline
)
