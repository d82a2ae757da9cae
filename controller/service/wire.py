"""The MQTT API's messages: explicit, versioned JSON, independent of Python class names.

Everything livetable publishes is built here, from the effects the table's state machine
returns, so that the wire format is written down once (``docs/mqtt-api.md`` explains it,
``docs/asyncapi.yaml`` gives a JSON Schema for each message, and a test validates every
message the end-to-end tests see against those schemas).

Every JSON message carries ``"api": API_VERSION``. A new optional field keeps the version;
a renamed or removed field, or a changed meaning, is a new version.

Topics, for a table ``t1`` under the prefix ``livetable``:

``livetable/t1/availability``  ``online`` / ``offline`` (plain text), retained; the Last Will.
``livetable/t1/state``         the whole public table state, retained, QoS 1.
``livetable/t1/events``        every event, QoS 1, numbered by ``seq`` (1, 2, 3, ... with no
                               gap: a consumer that sees a gap asks for what it missed).
``livetable/t1/request/<role>/<account>/<command>``  requests (:mod:`controller.service.mqtt_api`).
``livetable/t1/response/<account>``                  their answers.

The dealer's hole card and the burn cards appear in no message before the rules reveal them:
the machine's effects never carry them (a property test checks the effects and these
messages alike).
"""

from __future__ import annotations

import json
from typing import Any, Final

from controller.games.blackjack_hand import PLAYING as _PLAYING
from controller.games.blackjack_hand import STOOD as _STOOD
from controller.kernel.vocabulary import shoe_end_code
from controller.table.effects import EventRejected, PublishEvent, TellDealer

API_VERSION: Final = 1

# Every event type the table publishes on .../events, with what it means. The machine names
# them (PublishEvent.name); this list is the contract, and a test checks the machine emits
# no other. (What the table is fed and journals are kinds: controller.table.events.EVENT_KINDS.)
EVENT_TYPES: Final[dict[str, str]] = {
    "shoe_started": "a supervisor declared a new shoe; the first card is to be revealed",
    "burn_started": "the first card was revealed: that many cards are burned face down",
    "burn_completed": "the burn is done; the shoe is ready for rounds",
    "cards_burned": "cards held during a pause were discarded by a supervisor",
    "cut_card_drawn": "the cut card came out: final_round is the shoe's last round",
    "shoe_ended": "the shoe is finished (cut card or a supervisor)",
    "round_opened": "betting is open for a new round, with the bets offered and when it closes",
    "betting_closed": "betting closed; dealing starts",
    "card_dealt": "a card was dealt to a position (face-down cards without their face)",
    "hole_card_read": "the dealer's hole card was read at its reveal",
    "decision_requested": "the platform must decide for a box and hand, before the deadline",
    "decision_taken": "a decision was applied (the platform's, or the default at the deadline)",
    "round_settled": "the round's result with every bet's net result",
    "round_voided": "a supervisor cancelled the round: every bet is refunded",
    "table_paused": "the table stopped: reason code, plain message, who",
    "table_resumed": "a supervisor resumed the table, with the resolution",
    "shoe_online": "the shoe's port is open and the shoe talks",
    "shoe_offline": "the shoe's port vanished or went silent",
    "shoe_fault": "the shoe reported a fault of its own",
    "shoe_fault_cleared": "the shoe reports the fault ended",
    "cards_lost": "the shoe lost frames: cards left it unread",
    "camera_online": "the camera delivers frames",
    "camera_offline": "the camera delivers no frames",
    "settings_changed": "operational settings changed (now, or from the next round)",
    "dealer_signed_in": "a dealer signed in at the table (staff id), replacing any before",
    "dealer_signed_out": "the dealer on duty signed out: nobody is signed in",
    "rounds_held": "the table holds between rounds: the round in play finishes, none opens",
    "rounds_resumed": "a supervisor lifted the holds between rounds: rounds open again",
    "event_rejected": "an input the table's state did not accept; nothing changed",
}

# Error codes of responses (``error.code``).
ERROR_CODES: Final[dict[str, str]] = {
    "malformed": "the payload is not a JSON object of the documented shape",
    "too_large": "the payload is larger than the API accepts, or the answer than the broker takes",
    "unknown_command": "no such command",
    "forbidden": "this role may not give this command",
    "refused": "the table's state does not allow it now (the message says why)",
    "held": "the table holds between rounds (a dealer change, closing): no round opens; the "
    "state's holds say why",
    "stale": "the decision answers a request that is no longer awaited",
    "unavailable": "the table cannot take requests now (starting or stopping)",
    "poisoned": "the link to the broker dropped again and again right after this request came: "
    "it was dropped, not handled",
    "rate_limited": "this account sent more table commands than the table takes from it",
}


def event_message(
    seq: int, table_id: str, at: float | None, effect: PublishEvent | EventRejected
) -> dict[str, Any]:
    """One message of ``.../events``. ``at`` is the time of the input that caused it."""
    if isinstance(effect, EventRejected):
        event_type, data = "event_rejected", {"event": effect.event, "reason": effect.reason}
    else:
        event_type, data = effect.name, dict(effect.payload)
        if event_type == "round_settled" and isinstance(data.get("result"), dict):
            data["result"] = finished_hands(data["result"])
        if event_type == "shoe_ended":
            data.update(shoe_end_fields(data.get("why")))
    return {
        "api": API_VERSION,
        "seq": seq,
        "table": table_id,
        "type": event_type,
        "at": at,
        "data": data,
    }


def shoe_end_fields(why: object) -> dict[str, str]:
    """What ``shoe_ended`` adds to its ``why`` (the table's English): ``why_code``, one of
    :data:`~controller.kernel.vocabulary.SHOE_ENDS`, and ``by``, the supervisor who ended
    it, for a page in another language. Read back from the words, which the journal's
    replay gives exactly as they always were; nothing for words no code says."""
    coded = shoe_end_code(why) if isinstance(why, str) else None
    if coded is None:
        return {}
    code, values = coded
    return {"why_code": code, **({"by": values["by"]} if "by" in values else {})}


def finished_hands(view: dict[str, Any]) -> dict[str, Any]:
    """A boxed blackjack round's result (``round_settled.result``) with every hand finished.

    The rules end a round at a dealer blackjack without playing the other hands, which keep
    their ``playing`` state inside the rules engine (and in the journal's replays, which
    must give what they always gave). On the wire a hand is ``playing`` only while it may
    still take a card or a decision: a hand the round ended without playing it stood as
    dealt. Anything else (baccarat, Boundless, a finished hand) is returned as it is. (The
    state's ``round.view`` is never of a complete round: the round is null once settled.)
    """
    boxes = view.get("boxes")
    if not isinstance(boxes, list) or not any(
        hand.get("state") == _PLAYING for box in boxes for hand in box.get("hands", ())
    ):
        return view
    return {
        **view,
        "boxes": [
            {
                **box,
                "hands": [
                    {**hand, "state": _STOOD} if hand.get("state") == _PLAYING else hand
                    for hand in box.get("hands", ())
                ],
            }
            for box in boxes
        ],
    }


def state_message(
    seq: int,
    public: dict[str, Any],
    at: float | None,
    journal_head: tuple[int, str],
    *,
    epoch: str,
    signed: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The retained ``.../state`` message from the machine's public state.

    ``seq`` is the number of the last event published before this state (so it only grows,
    and a state never runs ahead of the events that led to it). ``journal`` is the head of
    the table's hash-chained journal: an anchor a platform can keep outside the table PC.
    ``epoch`` is that journal's id: ``seq`` and ``round.id`` count within it, so a new one
    (a journal started afresh) tells a consumer that both series started again at 1.
    ``signed``: the latest head the table signed (:mod:`controller.service.signing`), as
    ``journal.signed``; a table without a signing key publishes no ``signed``.
    Whether the daemon itself is up is ``.../availability`` (its Last Will), not this.
    """
    pause = public.get("paused")
    round_view = public.get("round")
    return {
        "api": API_VERSION,
        "epoch": epoch,
        "seq": seq,
        "table": public["table_id"],
        "at": at,
        "game": public["game"],
        "phase": public["phase"],
        "shoe": {
            "id": public["shoe_id"],
            "cards_drawn": public["cards_drawn"],
            "cards_left": public["cards_left"],
            "cut_card_seen": public["cut_card_seen"],
            "round_number": public["round_number"],
            "final_round": public["final_round"],
        },
        "round": None
        if not public["round_active"]
        else {
            "id": public["round_id"],
            "view": round_view,
            "awaiting": public["awaiting"],
            "deadline": public["deadline"],
            "bets_open": public["bets_open"],
        },
        "awaiting": public["awaiting"],
        "pause": None
        if pause is None
        else {
            "reason": pause["reason"],
            "message": pause["message"],
            "needs": pause["needs"],
            "since": pause["since"],
            "by": pause["by"],
            "resume_to": pause["resume_to"],
            "offline_gap": pause["offline_gap"],
            "idle_gap": pause["idle_gap"],
        },
        # Every pause in effect, in the order they came (``pause`` above is the last
        # one's, with what the table needs to resume): a supervisor's stays until a
        # supervisor lifts it, whatever is resolved within it.
        "pauses": [] if pause is None else [dict(cause) for cause in pause["pauses"]],
        "devices": {
            "shoe_online": public["shoe_online"],
            "camera_online": public["camera_online"],
        },
        "settings": public["settings"],
        "pending_settings": public["pending_settings"],
        "variant": public["variant"],
        # The dealer on duty ({staff_id, since}) or null, and the holds between rounds in
        # effect (a dealer change, closing): while any is, the round in play finishes and
        # no round opens (open_round is refused with the code "held").
        "dealer": public["dealer"],
        "holds": [dict(hold) for hold in public["round_holds"]],
        "journal": journal_object(journal_head, signed),
    }


def journal_object(head: tuple[int, str], signed: dict[str, Any] | None) -> dict[str, Any]:
    """The state's ``journal``: the head, and the latest signed head when the table signs."""
    journal: dict[str, Any] = {"seq": head[0], "hash": head[1]}
    if signed is not None:
        journal["signed"] = signed
    return journal


def dealer_message(effect: TellDealer) -> dict[str, Any]:
    """The retained ``.../dealer`` line: what the dealer is to do now (``action``, a
    machine-readable word; ``message``, plain words; the hand's ``position`` and a
    ``count`` of cards where the action has them, else null)."""
    return {
        "api": API_VERSION,
        "action": effect.action,
        "message": effect.message,
        "position": effect.position,
        "count": effect.count,
    }


def response_message(
    transaction: str | None,
    command: str,
    ok: bool,
    message: str,
    *,
    code: str | None = None,
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A response on ``.../response/<account>``; ``code`` (one of :data:`ERROR_CODES`) when
    ``ok`` is false."""
    response: dict[str, Any] = {
        "api": API_VERSION,
        "transaction": transaction,
        "command": command,
        "ok": ok,
        "message": message,
    }
    if not ok:
        response["error"] = {"code": code or "refused", "message": message}
    if data is not None:
        response["data"] = data
    return response


def encode(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, keys sorted: the same message is always the same bytes."""
    return json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
