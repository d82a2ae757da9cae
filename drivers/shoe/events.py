"""What the shoe driver puts on the controller's queue.

The events themselves belong to the table's vocabulary (:mod:`controller.table.events`),
which also owns their journal encoding: the driver produces them, the table journals and
takes them. They are re-exported here for the driver and its users, with
:func:`event_kind`, the name a shoe event goes by outside Python (the journal's kind).
"""

from __future__ import annotations

import typing
from typing import Final

from controller.table.events import (
    EVENT_TYPES,
    CardDrawn,
    CardMisread,
    CardsLost,
    CutCardDrawn,
    ShoeEvent,
    ShoeFault,
    ShoeFaultCleared,
    ShoeLockChanged,
    ShoeOffline,
    ShoeOnline,
)

__all__ = [
    "SHOE_EVENT_KINDS",
    "CardDrawn",
    "CardMisread",
    "CardsLost",
    "CutCardDrawn",
    "ShoeEvent",
    "ShoeFault",
    "ShoeFaultCleared",
    "ShoeLockChanged",
    "ShoeOffline",
    "ShoeOnline",
    "event_kind",
]

SHOE_EVENT_KINDS: Final[dict[type, str]] = {
    cls: kind for kind, cls in EVENT_TYPES.items() if cls in typing.get_args(ShoeEvent)
}
"""Each shoe event class and its kind, as the journal's encoding writes it out by hand."""


def event_kind(event: ShoeEvent) -> str:
    """The event's kind as the journal names it (``CardDrawn``, ``CardsLost``...).

    An explicit wire name from the table's encoding, not the Python class's name: a class
    renamed in the code keeps its kind. Raises :class:`TypeError` for anything that is no
    shoe event.
    """
    try:
        return SHOE_EVENT_KINDS[type(event)]
    except KeyError:
        raise TypeError(f"not a shoe event: {type(event).__name__}") from None
