"""What the camera driver puts on the controller's queue.

Frozen dataclasses named as nouns in the past tense, in the style of
:mod:`drivers.shoe.events`. ``at`` is the wall-clock time (seconds since the epoch) at which
the driver saw the change: time arrives inside events, so the table's state machine never
reads a clock. ``source`` is the camera source as it may be logged: a URL's password is
replaced by ``***``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CameraOnline:
    """The source is open and delivered its first frame (at start and after every reconnect).

    ``width`` and ``height`` are the size of the frames the source actually delivers, which a
    camera may choose differently from the configured resolution hint.
    """

    source: str
    width: int
    height: int
    at: float


@dataclass(frozen=True, slots=True)
class CameraOffline:
    """The source could not be opened, stopped delivering frames or reached its end.

    Sent once when the camera goes away (or cannot be opened at start), not for every failed
    retry; ``retry_in_s`` is the delay before the next attempt to open it. While the camera is
    offline the driver holds no frame, so no stale picture can be read as the current table.
    """

    source: str
    reason: str
    retry_in_s: float
    at: float


CameraEvent = CameraOnline | CameraOffline
