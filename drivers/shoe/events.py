"""What the shoe driver puts on the controller's queue.

The events themselves belong to the table's vocabulary (:mod:`controller.table.events`),
which also owns their journal encoding: the driver produces them, the table journals and
takes them. They are re-exported here for the driver and its users, with
:func:`event_name`, the name an event goes by outside Python (the journal's kind): one
lookup for the table and the shoe, written out in the table's encoding.
"""

from __future__ import annotations

from controller.table.events import (
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
    event_name,
)

__all__ = [
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
    "event_name",
]
