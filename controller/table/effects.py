"""What the table's state machine asks the outside world to do.

The machine returns a list of effects for every event; the runtime hands them, with the
journal row they came from, to the daemon as one :class:`EffectBatch`, which it carries out in
order (an MQTT publish, a line on the dealer's display, a command to the shoe, a camera read;
the runtime keeps the timers). Effects are frozen dataclasses holding only JSON-ready data.
Nothing in a published effect ever names the dealer's hole card before the rules reveal it,
nor any burn card.

**Their names outside the process are explicit**, like the events' (``ENCODINGS`` in
:mod:`controller.table.events`): :data:`EFFECT_ENCODING` writes out each effect's name and
fields, and ``to_dict`` (what ``livetable journal export`` prints) follows it, not the Python
class name, so a class may be renamed without changing what the export says. The MQTT
messages are built from the effects' fields in :mod:`controller.service.wire`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from controller.kernel.vocabulary import DEALER_ACTIONS
from controller.table.events import (
    DealerSignedIn,
    DealerSignedOut,
    RoundRequested,
    SupervisorCommanded,
)


@dataclass(frozen=True, slots=True)
class Effect:
    """Base class: ``to_dict`` is the JSON-ready form, tagged with the effect's name."""

    def to_dict(self) -> dict[str, Any]:
        """``{"effect": name, field: value, ...}`` as :data:`EFFECT_ENCODING` writes it out;
        TypeError for an effect class it does not list (a subclass included)."""
        name, fields = effect_encoding(self)
        data: dict[str, Any] = {"effect": name}
        for each in fields:
            data[each] = getattr(self, each)
        return data


@dataclass(frozen=True, slots=True)
class PublishState(Effect):
    """The table's whole public state (retained for late subscribers)."""

    state: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PublishEvent(Effect):
    """Something that happened, for the platform and the supervisors' console.

    ``name`` is a past-tense noun such as ``round_opened``, ``card_dealt``, ``round_settled``,
    ``table_paused``.
    """

    name: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TellDealer(Effect):
    """A line for the dealer's display: ``action`` (one of :data:`DEALER_ACTIONS`) is
    machine-readable, ``message`` plain."""

    action: str
    message: str
    position: str | None = None
    count: int | None = None

    def __post_init__(self) -> None:
        if self.action not in DEALER_ACTIONS:
            raise ValueError(f"no dealer's action {self.action!r}")


@dataclass(frozen=True, slots=True)
class LockShoe(Effect):
    """Close the shoe's gate where the protocol allows it: no card should leave now."""


@dataclass(frozen=True, slots=True)
class UnlockShoe(Effect):
    """Open the shoe's gate: the dealer may draw."""


@dataclass(frozen=True, slots=True)
class AskCamera(Effect):
    """Read a card from the camera; the answer is a ``CameraRead`` naming ``position``.

    ``position`` is the hand as the rules name it (``"player"``, ``"dealer"``, ``"box2"``,
    ``"box2.hand2"`` after a split); ``card_number`` is the card's place in that hand,
    counted from 1 in the order the hand holds its cards now, so the camera's region is
    ``drivers.camera.card_slot(position, card_number)``. ``reason`` is ``"misread"`` (the
    shoe could not read the card just dealt: the slot it goes to), ``"cross_check"`` (a
    face-up card the shoe read, to compare) or ``"hole_reveal"`` (the misread hole card,
    now turned over).
    """

    position: str
    reason: str
    card_number: int


@dataclass(frozen=True, slots=True)
class StartTimer(Effect):
    """Send ``TimerExpired(timer_id)`` at ``due_at`` (``duration_s`` after the event)."""

    timer_id: int
    purpose: str
    duration_s: float
    due_at: float


@dataclass(frozen=True, slots=True)
class CheckpointTaken(Effect):
    """A checkpoint row was journaled (or replayed): the event messages published before it
    number ``published``, so the API's numbering goes on from there when a start replays
    only the rows after it."""

    published: int


@dataclass(frozen=True, slots=True)
class CommandAnswered(Effect):
    """The answer to a supervisor command or a round request: success or a clear error."""

    command_id: str
    command: str
    by: str
    ok: bool
    message: str


Answered = SupervisorCommanded | RoundRequested | DealerSignedIn | DealerSignedOut
"""The events that are answered: the commands, the round request, the dealers' sign-ins."""


def answer(event: Answered, ok: bool, message: str) -> CommandAnswered:
    """The answer to ``event``: a round request is answered as the command ``round``, a
    dealer's sign-in and sign-out as ``dealer_sign_in`` and ``dealer_sign_out``."""
    if isinstance(event, SupervisorCommanded):
        command = event.command
    elif isinstance(event, DealerSignedIn):
        command = "dealer_sign_in"
    elif isinstance(event, DealerSignedOut):
        command = "dealer_sign_out"
    else:
        command = "round"
    return CommandAnswered(str(event.command_id), str(command), str(event.by), ok, message)


@dataclass(frozen=True, slots=True)
class EventRejected(Effect):
    """An event the current state does not accept; it changed nothing."""

    event: str
    reason: str


Published = PublishState | PublishEvent | CommandAnswered | EventRejected
"""The effects that go to the platform and the supervisors' console."""

# Effect class -> (its name in the journal's export, the fields written, in order). Written
# out by hand on purpose, like the events' encoding: a renamed class or field must not
# silently change what an export says (tests/demo/test_journal_of_a_demo.py reads these names).
EFFECT_ENCODING: Final[dict[type[Effect], tuple[str, tuple[str, ...]]]] = {
    PublishState: ("PublishState", ("state",)),
    PublishEvent: ("PublishEvent", ("name", "payload")),
    TellDealer: ("TellDealer", ("action", "message", "position", "count")),
    LockShoe: ("LockShoe", ()),
    UnlockShoe: ("UnlockShoe", ()),
    AskCamera: ("AskCamera", ("position", "reason", "card_number")),
    StartTimer: ("StartTimer", ("timer_id", "purpose", "duration_s", "due_at")),
    CommandAnswered: ("CommandAnswered", ("command_id", "command", "by", "ok", "message")),
    EventRejected: ("EventRejected", ("event", "reason")),
    CheckpointTaken: ("CheckpointTaken", ("published",)),
}


def effect_encoding(effect: Effect) -> tuple[str, tuple[str, ...]]:
    """The effect's name and fields as :data:`EFFECT_ENCODING` writes them; TypeError for a
    class it does not list (looked up by the exact class: a subclass is not its parent)."""
    encoding = EFFECT_ENCODING.get(type(effect))
    if encoding is None:
        raise TypeError(f"no encoding for the effect class {type(effect).__qualname__}")
    return encoding


@dataclass(frozen=True, slots=True)
class EffectBatch:
    """One event's effects as they are carried out, once, with where they came from.

    ``journal_seq`` and ``journal_hash`` are the journal row of the event, and ``at`` its
    time, which every message it causes carries; all three are None for an event refused
    before the journal (its effects are refusals, never a numbered message). The runtime
    makes one for every event it takes, the daemon one for every row it replays.

    ``journal_row`` is the rest of that row, ``(kind, body, prev_hash)``, where whoever made
    the batch had it: the publisher keeps the rows of face-down cards, to publish them with
    the round's settlement (a commitment anyone can check against the heads published when
    the cards were dealt).
    """

    effects: tuple[Effect, ...]
    journal_seq: int | None
    journal_hash: str | None
    at: float | None
    journal_row: tuple[str, str, str] | None = None
