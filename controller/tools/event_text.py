"""The words for the table's events, in one place: what each one says to a person.

Two readers, two registers. Someone watching the tables (``livetable demo``, its log when
stdout is not a terminal) reads :func:`describe_event`: a published event (``type`` and
``data`` as on ``.../events``) in plain words. An auditor reading a round's history
(``livetable journal export``) reads :func:`describe_input` for each journaled input and
:func:`describe_published` for each event it published: the kind or type first, then the
values exactly as they were, so that a line can be checked against the JSON. :func:`who`
says who caused an input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from controller.kernel.presentation import SIDES, presentation

# -- the tables as they are watched ---------------------------------------------------------

# How a card that did not come from the shoe's reading came into the round.
CARD_SOURCES = {
    "camera": "read by the camera: the shoe misread it",
    "supervisor": "entered by a supervisor",
    "unread": "misread by the shoe: read when it is turned over",
}


def cards_text(cards: list[Any] | None) -> str:
    """Cards as published, ``??`` for one face down; ``-`` for none."""
    return " ".join("??" if card is None else str(card) for card in cards or []) or "-"


def settled_summary(data: dict[str, Any], game: str | None = None) -> str:
    """One line a person can read: the hands, the totals and the main result.

    ``game``: the table's (its state's ``game``); without it, the result's own ``game``.
    Each game's hands are said as its presentation says (``controller/kernel/presentation``).
    """
    result = data.get("result", {})
    round_id = data.get("round_id")
    shown = presentation(game or result.get("game"))
    if shown is not None and shown.shape == SIDES:
        hands = " vs ".join(
            f"{hand} {cards_text(result.get(hand))} ({result.get(shown.total_key(hand))})"
            for hand in shown.hands
        )
        return f"round {round_id}: {hands}: {result.get('winner')}"
    if shown is None:
        return f"round {round_id}: settled"
    dealer = result.get("dealer", {})
    parts = [f"round {round_id}: dealer {cards_text(dealer.get('cards'))}"]
    if "total" in dealer:
        parts[0] += f" ({dealer['total']})"
    if "player_cards" in result:
        parts.append(f"players' cards {cards_text(result['player_cards'])}")
    for box in result.get("boxes", []):
        hands = "; ".join(
            f"{cards_text(hand['cards'])} ({hand.get('total')}) {hand.get('result', '')}"
            for hand in box.get("hands", [])
        )
        parts.append(f"box {box.get('box')}: {hands}")
    return " | ".join(parts)


# Why a table holds between rounds, in a person's words (the codes of ``rounds_held``).
_HOLDS: Mapping[str, str] = {
    "dealer_change": "a dealer change after this round",
    "closing": "the table is closing",
}


def _by(data: Mapping[str, Any]) -> str:
    return f" (by {data['by']})" if data.get("by") else ""


def describe_event(event: dict[str, Any], game: str | None = None) -> str:
    """One line for an event (``type`` and ``data`` as published) of a table of ``game``
    (its state's; ``None`` when not known yet)."""
    kind, data = event.get("type", "?"), event.get("data") or {}
    if kind == "card_dealt":
        face = "a card face down" if data.get("face_down") else data.get("card", "?")
        how = CARD_SOURCES.get(str(data.get("source", "shoe")))
        return f"{data.get('position')}: {face}" + (f" ({how})" if how else "")
    if kind == "hole_card_read":
        by = "the camera" if data.get("source") == "camera" else "a supervisor"
        card = data.get("card")
        shown = f": {card}" if card else " (its face is shown when it is turned over)"
        return f"the misread card at {data.get('position')} was read by {by}{shown}"
    if kind == "burn_started":
        return f"shoe {data.get('shoe_id')}: burning {data.get('cards')} cards"
    if kind == "burn_completed":
        return (
            f"shoe {data.get('shoe_id')}: burn done: {data.get('cards')} cards discarded, the "
            "revealed one included"
        )
    if kind == "shoe_started":
        return f"shoe {data.get('shoe_id')} declared by {data.get('by')}: reveal its first card"
    if kind == "betting_closed":
        return f"round {data.get('round_id')}: bets closed, dealing starts"
    if kind == "round_opened":
        return (
            f"round {data.get('round_id')} (no. {data.get('round_number')} of shoe "
            f"{data.get('shoe_id')}): bets open"
        )
    if kind == "decision_requested":
        return (
            f"{data.get('kind')} for box {data.get('box')} hand {data.get('hand')}: "
            f"{'/'.join(data.get('options', []))}, default {data.get('default')}"
        )
    if kind == "decision_taken":
        auto = " (at the deadline)" if data.get("auto") else ""
        return f"box {data.get('box')} hand {data.get('hand')}: {data.get('decision')}{auto}"
    if kind == "round_settled":
        return settled_summary(data, game)
    if kind == "table_paused":
        return f"{data.get('reason')}: {data.get('message')}"
    if kind == "table_resumed":
        how = data.get("resolution") or "resume"
        return f"{data.get('reason')} resolved by {data.get('by')}: {how}"
    if kind == "round_voided":
        return f"round {data.get('round_id')} voided by {data.get('by')}: {data.get('reason')}"
    if kind == "cards_burned":
        return f"{data.get('count')} card(s) drawn out of turn discarded"
    if kind == "cards_lost":
        return f"{data.get('count')} card(s) left the shoe unread (frames lost)"
    if kind == "cut_card_drawn":
        return f"the cut card is out: round {data.get('final_round')} is the shoe's last"
    if kind == "shoe_ended":
        return f"shoe {data.get('shoe_id')} ended: {data.get('why')}"
    if kind == "dealer_signed_in":
        return f"dealer {data.get('staff_id')} signed in" + _by(data)
    if kind == "dealer_signed_out":
        return f"dealer {data.get('staff_id')} signed out" + _by(data)
    if kind == "rounds_held":
        why = _HOLDS.get(str(data.get("reason")), str(data.get("reason")))
        return f"no new round: {why}" + _by(data)
    if kind == "rounds_resumed":
        return "rounds open again" + _by(data)
    text = json.dumps(data, separators=(", ", ": "), sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


# -- the journal's history, for an auditor --------------------------------------------------


# Who produced each kind of input, for the kinds that do not name a person (``by``).
_SOURCES: Mapping[str, str] = {
    "CameraOffline": "camera",
    "CameraOnline": "camera",
    "CameraRead": "camera",
    "ControllerStarted": "controller",
    "PlatformDecided": "platform",
    "SettingsChanged": "controller",
    "TimerExpired": "timer",
}


def time_text(at: object) -> str:
    """An event's time as UTC with milliseconds; ``-`` when it has none."""
    if not isinstance(at, int | float):
        return "-"
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def who(kind: str, fields: Mapping[str, Any]) -> str:
    """Who caused an input: the account that gave a command or asked for a round, else the
    device or part of the table that produced it."""
    if fields.get("by"):
        role = fields.get("role")
        return f"{fields['by']} ({role})" if role else str(fields["by"])
    if kind.startswith(("Card", "CutCard", "Shoe")):
        return "shoe"
    return _SOURCES.get(kind, "-")


def describe_input(kind: str, fields: Mapping[str, Any]) -> str:
    """The input in a few words: its kind and what matters in it."""
    if kind == "CardDrawn":
        return f"CardDrawn {fields.get('card')}"
    if kind == "CameraRead":
        card = fields.get("card") or "nothing"
        return f"CameraRead {card} at {fields.get('position')}"
    if kind == "TimerExpired":
        return f"TimerExpired #{fields.get('timer_id')}"
    if kind == "PlatformDecided":
        return (
            f"PlatformDecided {fields.get('decision')} (box {fields.get('box')}, "
            f"hand {fields.get('hand')})"
        )
    if kind == "SupervisorCommanded":
        details = [
            f"{name} {fields[name]}"
            for name in ("resolution", "card", "reason")
            if fields.get(name)
        ]
        more = f" ({', '.join(details)})" if details else ""
        return f"{fields.get('command')}{more}"
    if kind == "CardsLost":
        return f"CardsLost {len(fields.get('sequences') or ())}"
    if kind == "ShoeFault":
        return f"ShoeFault {fields.get('code')}"
    if kind == "CardPictured":
        where = fields.get("slot") or f"the table, round {fields.get('view')}"
        return f"CardPictured {where} of row {fields.get('card_row')} ({fields.get('size')} bytes)"
    return kind


def describe_published(name: str, payload: Mapping[str, Any]) -> str:
    """An event the table published, as an auditor reads it in an export: its type first,
    then the values as they were published (a round's result as its exact JSON)."""
    if name == "card_dealt":
        card = "face down" if payload.get("face_down") else payload.get("card")
        return f"card_dealt {card} to {payload.get('position')} ({payload.get('source')})"
    if name == "table_paused":
        return f"table_paused {payload.get('reason')}: {payload.get('message')}"
    if name == "round_settled":
        from controller.service.wire import finished_hands  # the result as it was published

        result = payload.get("result")
        if isinstance(result, dict):
            result = finished_hands(result)
        return f"round_settled {_compact(result)}{_dealt_by(payload)}"
    if name == "round_opened":
        return (
            f"round_opened (round {payload.get('round_number')} of the shoe, "
            f"{len(payload.get('bets') or ())} bets open, betting closes at "
            f"{time_text(payload.get('betting_closes_at'))}){_dealt_by(payload)}"
        )
    if name == "table_resumed":
        resolution = payload.get("resolution") or "nothing to resolve"
        return f"table_resumed by {payload.get('by')} ({payload.get('reason')}: {resolution})"
    shown = {key: value for key, value in payload.items() if key not in ("round_id", "shoe_id")}
    return f"{name} {_compact(shown)}" if shown else name


def _dealt_by(payload: Mapping[str, Any]) -> str:
    """The round's dealer as its event names it (machine revision 6); nothing when nobody
    was signed in (``--json`` shows ``dealer: null``) or the journal is older."""
    dealer = payload.get("dealer")
    return f", dealer {dealer}" if isinstance(dealer, str) else ""


def _compact(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
