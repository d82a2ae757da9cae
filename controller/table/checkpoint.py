"""The table's state as a checkpoint: an explicit, versioned encoding of :class:`TableState`.

A checkpoint is journaled at a shoe's end (:class:`~controller.table.events.Checkpoint`), so
that a start replays only the rows after the last one instead of the whole journal. Its
state must give back exactly the state a full replay reaches, so every field is written out
here by name (not derived from the dataclass: a renamed field must not change what a journal
holds), with :data:`CHECKPOINT_FORMAT` in the data; changing what is written means a new
format, and :func:`decode_state` keeps reading the old ones.

Only a state between shoes is checkpointed (:func:`checkpointable`): no round, burn, pause
or camera question is in flight then, so the live round (an object of the rules engine) and
the pause never need an encoding. Everything else is written whole, even what is usually
empty there, so that a state that is not what it seems is never silently cut short.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from controller.kernel.cards import Card, ShoeCount, parse_card
from controller.kernel.errors import JournalError
from controller.table.config import OperationalSettings
from controller.table.state import Dealer, Hold, HoldReason, Phase, TableState

CHECKPOINT_FORMAT: Final = 1
"""The format :func:`encode_state` writes (the ``format`` key of its data)."""
FORMATS: Final = frozenset({1})
"""Every format :func:`decode_state` reads."""


def checkpointable(state: TableState) -> bool:
    """Whether ``state`` may be checkpointed: between shoes, nothing in flight."""
    return (
        state.phase is Phase.AWAITING_SHUFFLE
        and state.round is None
        and state.pause is None
        and not state.holds
        and not state.round_log
        and not state.cross_checks
        and state.reading is None
        and state.hole_unread is None
        and state.shuffle_check is None
    )


def _card(card: Card | None) -> str | None:
    return None if card is None else str(card)


def _settings(settings: OperationalSettings | None) -> dict[str, Any] | None:
    return None if settings is None else settings.to_dict()


def encode_state(state: TableState) -> dict[str, Any]:
    """``state`` as JSON-ready data of :data:`CHECKPOINT_FORMAT`; ValueError unless it is
    :func:`checkpointable`."""
    if not checkpointable(state):
        raise ValueError(f"a table in {state.phase.name} with something in flight")
    count = state.count
    dealer = state.dealer
    return {
        "format": CHECKPOINT_FORMAT,
        "phase": state.phase.value,
        "shoes_started": state.shoes_started,
        "rounds_started": state.rounds_started,
        "shoe_id": state.shoe_id,
        "count": None
        if count is None
        else {
            "decks": count.decks,
            "seen": {str(card): n for card, n in sorted(count.seen.items()) if n},
        },
        "burn_left": state.burn_left,
        "burn_cards": [_card(card) for card in state.burn_cards],
        "round_number": state.round_number,
        "final_round": state.final_round,
        "round_id": state.round_id,
        "boxes": state.boxes,
        "timers": {str(timer): purpose for timer, purpose in sorted(state.timers.items())},
        "next_timer_id": state.next_timer_id,
        "dealer": None if dealer is None else {"staff_id": dealer.staff_id, "since": dealer.since},
        "round_holds": [
            {"reason": hold.reason.value, "by": hold.by, "since": hold.since}
            for hold in state.round_holds
        ],
        "shoe_online": state.shoe_online,
        "shoe_locked": state.shoe_locked,
        "shoe_reports_locked": state.shoe_reports_locked,
        "camera_online": state.camera_online,
        "unannounced_entered": [str(card) for card in state.unannounced_entered],
        "unannounced_gaps": state.unannounced_gaps,
        "deadline": state.deadline,
        "settings": _settings(state.settings),
        "pending_settings": _settings(state.pending_settings),
        "shuffle_alarm": state.shuffle_alarm,
    }


def decode_state(data: Any) -> TableState:
    """The state :func:`encode_state` wrote, in any format of :data:`FORMATS`; JournalError
    naming what does not fit."""
    if not isinstance(data, dict):
        raise JournalError("a checkpoint's state is not an object")
    found = data.get("format")
    if found not in FORMATS:
        raise JournalError(
            f"checkpoint format {found!r} is unknown to this livetable (it reads "
            f"{', '.join(map(str, sorted(FORMATS)))})"
        )
    try:
        return _decode_v1(data)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise JournalError(
            f"a checkpoint's state does not fit format {found}: {error!r}"
        ) from error


def _decode_v1(data: dict[str, Any]) -> TableState:
    count = data["count"]
    dealer = data["dealer"]
    settings, pending = data["settings"], data["pending_settings"]
    return TableState(
        phase=Phase(data["phase"]),
        shoes_started=_int(data["shoes_started"]),
        rounds_started=_int(data["rounds_started"]),
        shoe_id=_optional_int(data["shoe_id"]),
        count=None
        if count is None
        else ShoeCount(
            _int(count["decks"]),
            Counter({parse_card(card): _int(n) for card, n in count["seen"].items()}),
        ),
        burn_left=_int(data["burn_left"]),
        burn_cards=tuple(None if card is None else parse_card(card) for card in data["burn_cards"]),
        round_number=_int(data["round_number"]),
        final_round=_optional_int(data["final_round"]),
        round_id=_optional_int(data["round_id"]),
        boxes=_int(data["boxes"]),
        timers={_int(int(timer)): str(purpose) for timer, purpose in data["timers"].items()},
        next_timer_id=_int(data["next_timer_id"]),
        dealer=None if dealer is None else Dealer(str(dealer["staff_id"]), float(dealer["since"])),
        round_holds=tuple(
            Hold(HoldReason(hold["reason"]), hold["by"], float(hold["since"]))
            for hold in data["round_holds"]
        ),
        shoe_online=bool(data["shoe_online"]),
        shoe_locked=bool(data["shoe_locked"]),
        shoe_reports_locked=data["shoe_reports_locked"],
        camera_online=data["camera_online"],
        unannounced_entered=tuple(parse_card(card) for card in data["unannounced_entered"]),
        unannounced_gaps=_int(data["unannounced_gaps"]),
        deadline=None if data["deadline"] is None else float(data["deadline"]),
        settings=None if settings is None else OperationalSettings(**settings),
        pending_settings=None if pending is None else OperationalSettings(**pending),
        shuffle_alarm=bool(data["shuffle_alarm"]),
    )


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a whole number, got {value!r}")
    return value


def _optional_int(value: Any) -> int | None:
    return None if value is None else _int(value)
