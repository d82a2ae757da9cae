"""What the table's state machine asks the outside world to do.

The machine returns a list of effects for every event; the daemon carries them out in order
(an MQTT publish, a line on the dealer's display, a command to the shoe, a camera read, a
timer). Effects are frozen dataclasses holding only JSON-ready data; ``to_dict`` gives the
wire form. Nothing in a published effect ever names the dealer's hole card before the rules
reveal it, nor any burn card.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Effect:
    """Base class: ``to_dict`` is the JSON-ready form, tagged with the effect's name."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"effect": type(self).__name__}
        for name in self.__dataclass_fields__:
            data[name] = getattr(self, name)
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
    """A line for the dealer's display: ``action`` is machine-readable, ``message`` plain."""

    action: str
    message: str
    position: str | None = None
    count: int | None = None


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
class CommandAnswered(Effect):
    """The answer to a supervisor command or a round request: success or a clear error."""

    command_id: str
    command: str
    by: str
    ok: bool
    message: str


@dataclass(frozen=True, slots=True)
class EventRejected(Effect):
    """An event the current state does not accept; it changed nothing."""

    event: str
    reason: str
