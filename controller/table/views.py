"""What the table's state machine shows: its public state and its whole-state snapshot.

:func:`published` is the one way the handlers say the state changed: the ``PublishState``
effect of :func:`public_state`, the table as the platform and the supervisors may see it.
:func:`snapshot` is the whole state, secrets included, for replay checks, the tests and the
journal CLI. The parts both show (a pause, its causes, the settings) are built once, here.
Nothing here changes a :class:`TableState`: the handlers of ``transitions.py`` alone do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.games.base import CardNeeded, DecisionNeeded
from controller.kernel.cards import Card
from controller.table import games
from controller.table.config import TableConfig
from controller.table.effects import PublishState
from controller.table.state import (
    HOLD_MESSAGES,
    ROUND_PHASES,
    Cause,
    Context,
    Pause,
    Phase,
    TableState,
    hole_card_number,
    hole_revealed,
    phase_at_stake,
)


def published(ctx: Context, state: TableState) -> PublishState:
    """The effect that publishes ``state``: every change a handler makes ends with it."""
    return PublishState(public_state(ctx.config, state, ctx.dismissible_unread))


def public_state(
    config: TableConfig, state: TableState, dismissible_unread: bool = False
) -> dict[str, Any]:
    """The table as the platform and the supervisors may see it: no hole card before its
    reveal (the rules' public view), no burn card, no card held out of turn.
    ``dismissible_unread``: whether the machine lets a supervisor dismiss an unread card
    as no card at all (its pause's ``needs`` then say so)."""
    pause = state.pause
    return {
        "table_id": config.table_id,
        "game": config.game,
        "phase": state.phase.value,
        "shoe_id": state.shoe_id,
        "round_id": state.round_id,
        "round_number": state.round_number,
        "final_round": state.final_round,
        "cards_left": None if state.count is None else state.count.cards_left,
        "cards_drawn": None if state.count is None else state.count.cards_seen,
        "cut_card_seen": state.final_round is not None,
        "round_active": phase_at_stake(state) in ROUND_PHASES,
        "shoe_online": state.shoe_online,
        "camera_online": state.camera_online,
        "paused": None
        if pause is None
        else {
            **_pause(pause),
            "needs": pause.needs(dismissible_unread),
            "pauses": [_cause(cause) for cause in pause.causes],
        },
        "round": None if state.round is None else _without_stand_in(state),
        "awaiting": _awaiting(state),
        "deadline": state.deadline,
        "bets_open": games.available_bets(config.game, state.round_number)
        if state.phase is Phase.BETTING
        else [],
        **_settings(state),
        "variant": games.variant(config.game, config.variant),
        **_dealer_and_holds(state),
    }


def _awaiting(state: TableState) -> dict[str, Any] | None:
    """What the table waits for now, in public terms: a card for a position, a decision
    from the platform, the end of betting, or a supervisor."""
    phase = state.phase
    if phase is Phase.BETTING:
        return {"what": "bets"}
    if phase is Phase.DEALING and state.round is not None:
        step = state.round.next_step()
        if isinstance(step, CardNeeded):
            return {"what": "card", "position": step.position, "face_down": step.face_down}
    if phase is Phase.DECIDING and state.round is not None:
        step = state.round.next_step()
        if isinstance(step, DecisionNeeded):
            return {
                "what": "decision",
                "kind": step.kind,
                "box": step.box,
                "hand": step.hand,
                "options": sorted(step.options),
                "default": step.default,
            }
    if phase is Phase.READING:
        return {"what": "camera", "position": state.reading}
    if phase is Phase.BURN_REVEAL:
        return {"what": "reveal"}
    if phase is Phase.BURNING:
        return {"what": "burn", "cards": state.burn_left}
    if phase is Phase.PAUSED:
        return {"what": "supervisor"}
    if phase is Phase.AWAITING_SHUFFLE:
        return {"what": "new_shoe"}
    return {"what": "round_request"} if phase is Phase.SHOE_READY else None


def snapshot(state: TableState) -> dict[str, Any]:
    """The whole state, secrets included, as JSON-ready data: equal snapshots mean
    equal states (the live round is represented by its log and its public view)."""
    pause = state.pause
    return {
        "phase": state.phase.value,
        "shoes_started": state.shoes_started,
        "rounds_started": state.rounds_started,
        "shoe_id": state.shoe_id,
        "seen": None
        if state.count is None
        else {str(card): n for card, n in sorted(state.count.seen.items()) if n},
        "burn_left": state.burn_left,
        "burn_cards": [_card_text(card) for card in state.burn_cards],
        "round_number": state.round_number,
        "final_round": state.final_round,
        "round_id": state.round_id,
        "boxes": state.boxes,
        "round_log": [
            [str(item) if isinstance(item, Card) else item for item in entry]
            for entry in state.round_log
        ],
        "round_view": None if state.round is None else dict(state.round.public_view()),
        "round_next": None if state.round is None else step_data(state.round.next_step()),
        "timers": {str(key): value for key, value in sorted(state.timers.items())},
        "next_timer_id": state.next_timer_id,
        "cross_checks": [
            [position, number, str(card)] for position, number, card in state.cross_checks
        ],
        "reading": state.reading,
        "hole_unread": state.hole_unread,
        "pause": None
        if pause is None
        else {
            **_pause(pause),
            "held": [_card_text(card) for card in pause.held],
            "unread": pause.unread,
            "uncounted": list(pause.uncounted),
            "gap_before_held": pause.gap_before_held,
            "causes": [_cause(cause) for cause in pause.causes],
            "shoe_empty": pause.shoe_empty,
        },
        "holds": [_cause(hold) for hold in state.holds],
        "unannounced_entered": [str(card) for card in state.unannounced_entered],
        "unannounced_gaps": state.unannounced_gaps,
        "shoe_online": state.shoe_online,
        "shoe_locked": state.shoe_locked,
        "shoe_reports_locked": state.shoe_reports_locked,
        "camera_online": state.camera_online,
        "deadline": state.deadline,
        **_settings(state),
        "shuffle_check": None
        if state.shuffle_check is None
        else {
            "cards_seen": state.shuffle_check.cards_seen,
            "log_ratio": state.shuffle_check.log_ratio,
            "previous": _card_text(state.shuffle_check.previous),
            "direction": state.shuffle_check.direction,
            "suit_start": state.shuffle_check.suit_start,
        },
        "shuffle_alarm": state.shuffle_alarm,
        **_dealer_and_holds(state),
    }


def step_data(step: object) -> dict[str, Any] | None:
    """What the round asks next, as data that compares and serialises the same in every
    process; None when it asks nothing."""
    # Not repr(): a frozenset's order changes with the process's string hash seed.
    if isinstance(step, CardNeeded):
        return {"card": step.position, "face_down": step.face_down}
    if isinstance(step, DecisionNeeded):
        return {
            "decision": step.kind,
            "box": step.box,
            "hand": step.hand,
            "options": sorted(step.options),
            "default": step.default,
        }
    return None


def _pause(pause: Pause) -> dict[str, Any]:
    """What the public state and the snapshot both show of a pause."""
    return {
        "reason": pause.reason.value,
        "message": pause.message,
        "resume_to": pause.resume_to.value,
        "by": pause.by,
        "since": pause.since,
        "offline_gap": pause.offline_gap,
        "idle_gap": pause.idle_gap,
    }


def _settings(state: TableState) -> dict[str, Any]:
    """The settings in force and those that apply from the next round, as both show them."""
    pending = state.pending_settings
    return {
        "settings": None if state.settings is None else state.settings.to_dict(),
        "pending_settings": None if pending is None else pending.to_dict(),
    }


def _dealer_and_holds(state: TableState) -> dict[str, Any]:
    """The dealer on duty and the holds between rounds, as both show them."""
    dealer = state.dealer
    return {
        "dealer": None if dealer is None else {"staff_id": dealer.staff_id, "since": dealer.since},
        "round_holds": [
            {
                "reason": hold.reason.value,
                "message": HOLD_MESSAGES[hold.reason],
                "by": hold.by,
                "since": hold.since,
            }
            for hold in state.round_holds
        ],
    }


def _cause(cause: Cause) -> dict[str, Any]:
    return {
        "reason": cause.reason.value,
        "message": cause.message,
        "by": cause.by,
        "since": cause.since,
    }


def _card_text(card: Card | None) -> str | None:
    return None if card is None else str(card)


def _without_stand_in(state: TableState) -> dict[str, Any]:
    """The live round's public view, in which a misread hole card's stand-in, once the
    rules have turned it over, shows as unread (null, and no total) rather than as the
    stand-in's face: the platform must never see a card that is not on the table."""
    view = dict(state.round.public_view())  # type: ignore[union-attr]
    if state.hole_unread is None or not hole_revealed(state.round):
        return view
    position = state.round_log[state.hole_unread][1]
    hand = view.get(position)
    if isinstance(hand, Mapping) and isinstance(hand.get("cards"), list):
        cards = list(hand["cards"])
        cards[hole_card_number(state) - 1] = None
        view[position] = {**hand, "cards": cards, "total": None, "soft": None}
    return view
