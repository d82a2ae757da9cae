"""The table's input events: everything that can change the state of a table.

The shoe driver's events (``drivers/shoe/events.py``) are used as they are; this module adds
the camera, the timers, the game platform, the supervisors and the table process itself.
Events are frozen dataclasses named as nouns in the past tense; ``at`` is the wall-clock time
(seconds since the epoch) stamped by whoever produced the event, so the state machine never
reads a clock and a journal replays to the identical state.

``encode_event`` / ``decode_event`` turn an event into JSON-ready data and back, for the
journal; an object that is not one of these events is refused with a
:class:`~controller.errors.JournalError`.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Final, Union

from controller.errors import JournalError, TableError
from controller.games.cards import Card, parse_card
from drivers.shoe.events import (
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
    "SUPERVISOR_COMMANDS",
    "CameraRead",
    "CardDrawn",
    "CardMisread",
    "CardsLost",
    "ControllerStarted",
    "CutCardDrawn",
    "PlatformDecided",
    "RoundRequested",
    "ShoeEvent",
    "ShoeFault",
    "ShoeFaultCleared",
    "ShoeLockChanged",
    "ShoeOffline",
    "ShoeOnline",
    "SupervisorCommanded",
    "TableEvent",
    "TimerExpired",
    "decode_event",
    "encode_event",
]


@dataclass(frozen=True, slots=True)
class CameraRead:
    """The camera's answer to an ``AskCamera`` effect.

    ``card`` is ``None`` when the recogniser abstained (it would rather not guess).
    ``position`` is the table position that was read, as the machine named it, and
    ``card_number`` the card's slot in it (``AskCamera.card_number``): the table matches an
    answer to its question by both, so a late answer about another card of the same hand is
    never taken for the card asked about. ``None`` (journals written before it existed)
    matches by position alone.
    """

    position: str
    card: Card | None
    at: float
    card_number: int | None = None


@dataclass(frozen=True, slots=True)
class TimerExpired:
    """A timer started by a ``StartTimer`` effect ran out.

    ``timer_id`` is the id the effect carried; an expiry for a timer the machine no longer
    waits for (the dealer was quicker) is ignored.
    """

    timer_id: int
    at: float


@dataclass(frozen=True, slots=True)
class PlatformDecided:
    """The game platform answered a decision request of round ``round_id``.

    ``kind`` repeats the request's kind (``play``, ``insurance``, ``even_money``,
    ``more_cards``); ``decision`` is one of the tokens the request offered.
    """

    round_id: int
    kind: str
    box: int
    hand: int
    decision: str
    at: float


SUPERVISOR_COMMANDS: Final = ("pause", "resume", "cancel", "end_shoe", "new_shoe")


@dataclass(frozen=True, slots=True)
class SupervisorCommanded:
    """A command given by a person at the table's console.

    ``command_id`` is echoed in the answer; ``by`` and ``role`` say who gave it (only the
    ``supervisor`` role may give these commands). ``reason`` is required by ``pause``.
    ``resume`` carries ``resolution`` when the pause needs one: ``accept`` (the out-of-turn
    card goes to the position the round expects), ``burn`` (the held cards are discarded) or
    ``enter_card`` (``card`` is entered by hand after a misread).
    """

    command_id: str
    command: str
    by: str
    role: str
    at: float
    reason: str = ""
    resolution: str = ""
    card: Card | None = None


@dataclass(frozen=True, slots=True)
class RoundRequested:
    """Someone (the platform, the dealer's console or the daemon's auto-start) asks for the
    next round: betting opens if the table is ready for it.

    ``boxes`` is the number of boxes (classic) or seats (21) with a bet; 0 means the
    table's default (all of them). Boundless ignores it: its players share one hand.
    """

    command_id: str
    by: str
    at: float
    boxes: int = 0


@dataclass(frozen=True, slots=True)
class ControllerStarted:
    """The table process (re)started and replayed its journal; a round that was in progress
    is paused with reason ``recovered``."""

    at: float


TableEvent = (
    ShoeEvent
    | CameraRead
    | TimerExpired
    | PlatformDecided
    | SupervisorCommanded
    | RoundRequested
    | ControllerStarted
)

EVENT_TYPES: Final[dict[str, type]] = {
    cls.__name__: cls
    for cls in (
        CardDrawn,
        CutCardDrawn,
        CardMisread,
        CardsLost,
        ShoeFault,
        ShoeFaultCleared,
        ShoeLockChanged,
        ShoeOnline,
        ShoeOffline,
        CameraRead,
        TimerExpired,
        PlatformDecided,
        SupervisorCommanded,
        RoundRequested,
        ControllerStarted,
    )
}


def is_table_event(event: object) -> bool:
    return type(event) in EVENT_TYPES.values()


def _encode_value(value: object) -> object:
    if isinstance(value, Card):
        return str(value)
    if isinstance(value, tuple):
        return [_encode_value(item) for item in value]
    return value


def encode_event(event: object) -> tuple[str, dict[str, Any]]:
    """``(kind, fields)`` with every field JSON-ready (cards in their notation)."""
    if not is_table_event(event):
        raise JournalError(f"not a table event: {event!r}")
    fields = {
        field.name: _encode_value(getattr(event, field.name))
        for field in dataclasses.fields(event)  # type: ignore[arg-type]
    }
    return type(event).__name__, fields


def _decode_value(hint: object, value: object) -> object:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is not type(None):
                return _decode_value(option, value)
    if hint is Card:
        return parse_card(value)  # type: ignore[arg-type]
    if origin is tuple:
        (item_hint, *_rest) = typing.get_args(hint)
        if not isinstance(value, list):
            raise JournalError(f"expected a list, got {value!r}")
        return tuple(_decode_value(item_hint, item) for item in value)
    if hint is float:
        # A NaN or infinite time would start timers that never fire.
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise JournalError(f"expected a finite number, got {value!r}")
        return float(value)
    expected = hint if isinstance(hint, type) else object
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise JournalError(f"expected {hint}, got {value!r}")
    return value


_HINTS: Final = {name: typing.get_type_hints(cls) for name, cls in EVENT_TYPES.items()}


def check_event(event: object) -> None:
    """JournalError unless ``event`` is a table event that survives the journal unchanged
    (a field of the wrong type would otherwise replay differently from how it was taken)."""
    kind, fields = encode_event(event)
    if decode_event(kind, fields) != event:
        # Names only: the event's repr would carry its card, and refusals are published.
        raise JournalError(f"{kind} has a field of the wrong type")


def decode_event(kind: str, fields: dict[str, Any]) -> object:
    """Rebuild the event ``encode_event`` described; JournalError if it does not fit."""
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise JournalError(f"unknown event kind {kind!r}")
    hints = _HINTS[kind]
    try:
        values = {name: _decode_value(hints[name], value) for name, value in fields.items()}
        return cls(**values)
    except (KeyError, TypeError) as error:
        raise JournalError(f"fields {sorted(fields)} do not make a {kind}: {error}") from error
    except TableError as error:
        raise JournalError(f"a {kind} with a bad field: {error}") from error
