"""The table's commands: a supervisor's (``new_shoe``, ``end_shoe``, ``pause``, ``cancel``),
the platform's round request and its settings, and what each is refused with.

The ``on_*`` functions are handlers that :data:`~controller.table.transitions.TRANSITIONS`
names: functions of the :class:`~controller.table.state.Context`, the state and the event,
returning effects (a refusal raises ``TransitionError`` and changes nothing). ``resume`` is
in ``resuming.py``, with its own table. :func:`check` refuses a command before it is looked
up (unknown, anonymous, not a supervisor's); :func:`refusal` answers one that the table
does not take in its phase.
"""

from __future__ import annotations

from typing import Final

from controller.games.shuffle_check import ShuffleCheck
from controller.kernel.cards import ShoeCount
from controller.kernel.errors import TableError, TransitionError
from controller.kernel.vocabulary import ANSWERS, SHOE_ENDS
from controller.table import dealing, games
from controller.table.config import OperationalSettings, TableConfig
from controller.table.effects import CommandAnswered, Effect, EventRejected, PublishEvent, answer
from controller.table.events import (
    SUPERVISOR_COMMANDS,
    ControllerStopping,
    DealerSignedIn,
    DealerSignedOut,
    RoundRequested,
    SettingsChanged,
    SupervisorCommanded,
    event_name,
)
from controller.table.pausing import pause, with_cause
from controller.table.state import (
    HOLD_MESSAGES,
    ROUND_PHASES,
    Context,
    Dealer,
    Hold,
    HoldReason,
    PauseReason,
    Phase,
    TableState,
    phase_at_stake,
)
from controller.table.views import published

P = Phase

SUPERVISOR_ROLE: Final = "supervisor"
DEALER_ROLE: Final = "dealer"
# Machine revision 6 brought the dealers on duty and the holds between rounds: a journal
# of an older revision never holds them (its rows could not), and replays as it did.
DEALERS_REVISION: Final = 6


def check(event: SupervisorCommanded | RoundRequested, kind: str) -> CommandAnswered | None:
    """The refusal of a command nobody may give (``kind``: its kind in the transition
    table), else None. A round request is anyone's."""
    if isinstance(event, RoundRequested):
        return None
    if kind == "command.unknown":
        return answer(
            event,
            False,
            f"unknown command {event.command!r}: expected one of {', '.join(SUPERVISOR_COMMANDS)}",
        )
    if not isinstance(event.by, str) or not event.by.strip():
        return answer(event, False, "a command must say who gave it")
    if event.role != SUPERVISOR_ROLE:
        return answer(
            event, False, f"only a supervisor may {event.command}; {event.by} is {event.role!r}"
        )
    return None


def refusal(state: TableState, event: object, kind: str) -> Effect:
    """The answer to an event the table does not take in its phase (no row in the
    transition table): a command's answer says why in a supervisor's words."""
    where = state.phase.name
    if isinstance(event, SupervisorCommanded):
        if kind == "command.resume":
            return answer(event, False, ANSWERS["not_paused"].format(phase=where))
        if kind == "command.cancel":
            return answer(event, False, ANSWERS["no_round_to_cancel"].format(phase=where))
        if kind == "command.new_shoe":
            return answer(event, False, ANSWERS["no_new_shoe_now"].format(phase=where))
        return answer(event, False, ANSWERS["not_now"].format(command=event.command, phase=where))
    if isinstance(event, RoundRequested):
        return answer(event, False, ANSWERS["no_round_now"].format(phase=where))
    return EventRejected(event_name(event), f"not accepted in {where} ({kind})")


def on_settings(ctx: Context, state: TableState, event: SettingsChanged) -> list[Effect]:
    try:
        settings = OperationalSettings(
            betting_s=event.betting_s,
            decision_s=event.decision_s,
            dealer_idle_s=event.dealer_idle_s,
            rounds_after_cut_card=event.rounds_after_cut_card,
            camera_cross_check=event.camera_cross_check,
        )
        TableConfig(table_id=ctx.config.table_id, game=ctx.config.game, **settings.to_dict())
    except TableError as error:
        raise TransitionError(f"settings refused: {error}") from error
    idle = state.phase in (P.AWAITING_SHUFFLE, P.SHOE_READY)
    if idle:
        state.settings, state.pending_settings = settings, None
    else:
        state.pending_settings = settings
    return [
        PublishEvent(
            "settings_changed",
            {**settings.to_dict(), "applies": "now" if idle else "next_round"},
        ),
        published(ctx, state),
    ]


def on_new_shoe(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    effects: list[Effect] = []
    if state.shoe_id is not None:
        effects += dealing.end_shoe(ctx, state, event.at, SHOE_ENDS["new_shoe"].format(by=event.by))
    state.shoes_started += 1
    state.shoe_id = state.shoes_started
    state.count = ShoeCount()
    # From revision 6 the first cards of every shoe are checked for new-deck order.
    state.shuffle_check = ShuffleCheck(state.count.decks) if ctx.revision >= 6 else None
    state.shuffle_alarm = False
    state.burn_left = 0
    state.burn_cards = ()
    state.round_number = 0
    state.final_round = None
    effects.append(answer(event, True, ANSWERS["shoe_declared"].format(shoe=state.shoe_id)))
    effects.append(PublishEvent("shoe_started", {"shoe_id": state.shoe_id, "by": event.by}))
    return effects + dealing.enter(ctx, state, P.BURN_REVEAL, event.at)


def on_end_shoe(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    if state.pause is not None and state.pause.resume_to in ROUND_PHASES:
        raise TransitionError(ANSWERS["round_in_progress"])
    if state.shoe_id is None:
        raise TransitionError(ANSWERS["no_shoe"])
    state.holds = ()  # a supervisor ended what was paused: the pauses go with it
    return [
        answer(event, True, ANSWERS["shoe_ended"].format(shoe=state.shoe_id)),
        *dealing.end_shoe(ctx, state, event.at, SHOE_ENDS["ended"].format(by=event.by)),
    ]


def on_pause_command(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    reason = str(event.reason).strip()
    if not reason:
        raise TransitionError("pause needs a reason")
    if state.phase is P.PAUSED and ctx.revision < 5:
        raise TransitionError(ANSWERS["already_paused"])
    effects = pause(ctx, state, PauseReason.SUPERVISOR, event.at, reason, by=event.by)
    if ctx.revision >= 5:
        # A supervisor who pauses again keeps one pause, with the reason given last.
        state.holds = with_cause(state.holds, state.pause.causes[-1])  # type: ignore[union-attr]
    return [answer(event, True, ANSWERS["paused"]), *effects]


def on_round_request(ctx: Context, state: TableState, event: RoundRequested) -> list[Effect]:
    if not state.shoe_online:
        raise TransitionError(ANSWERS["shoe_offline_no_round"])
    if ctx.revision >= DEALERS_REVISION and state.round_holds:
        raise TransitionError(held_text(state))
    state.boxes = event.boxes or games.default_boxes(ctx.config.game)
    state.round_number += 1
    state.rounds_started += 1
    state.round_id = state.rounds_started
    dealing.new_round(ctx, state)  # the rules check the arguments now, not when betting closes
    opened = PublishEvent(
        "round_opened",
        {
            "round_id": state.round_id,
            "shoe_id": state.shoe_id,
            "round_number": state.round_number,
            "final_round": state.final_round,
            "bets": games.available_bets(ctx.config.game, state.round_number),
            "betting_closes_at": event.at + state.settings.betting_s,
            **dealing.round_dealer(ctx, state),
        },
    )
    return [
        answer(event, True, ANSWERS["round_opened"].format(round=state.round_id)),
        opened,
        *dealing.enter(ctx, state, P.BETTING, event.at),
    ]


def on_cancel(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    if phase_at_stake(state) not in ROUND_PHASES:
        raise TransitionError(ANSWERS["no_round_in_progress"])
    discarded = len(state.round_log)
    held = len(state.pause.held) if state.pause is not None else 0
    state.holds = ()  # a supervisor ended what was paused: the pauses go with it
    voided = PublishEvent(
        "round_voided",
        {
            "round_id": state.round_id,
            "shoe_id": state.shoe_id,
            "by": event.by,
            "reason": str(event.reason),
            "refund": "all",
            "bets": {bet: 0.0 for bet in games.available_bets(ctx.config.game, state.round_number)},
            "cards_discarded": discarded + held,
        },
    )
    return [
        answer(event, True, ANSWERS["round_voided"].format(round=state.round_id)),
        voided,
        *dealing.close_round(ctx, state, event.at),
    ]


# -- dealers on duty and holds between rounds (machine revision 6) ---------------------------


def held_text(state: TableState) -> str:
    """Why no round opens, in the words of the refusal and the state."""
    return "held between rounds: " + "; ".join(
        f"{hold.reason.value} ({HOLD_MESSAGES[hold.reason]})" for hold in state.round_holds
    )


def _newer(ctx: Context, what: str) -> None:
    if ctx.revision < DEALERS_REVISION:
        raise TransitionError(
            ANSWERS["needs_revision"].format(command=what, revision=DEALERS_REVISION)
        )


def _with_hold(state: TableState, hold: Hold) -> tuple[Hold, ...]:
    """The holds with ``hold`` in effect: one per reason, the first one kept, except that a
    supervisor's takes the place of the stopping process's (which the next start lifts)."""
    same = [each for each in state.round_holds if each.reason is hold.reason]
    if not same:
        return (*state.round_holds, hold)
    if same[0].by is None and hold.by is not None:
        return tuple(hold if each is same[0] else each for each in state.round_holds)
    return state.round_holds


def _without(state: TableState, reason: HoldReason) -> tuple[Hold, ...]:
    return tuple(hold for hold in state.round_holds if hold.reason is not reason)


def _hold_effects(ctx: Context, state: TableState, at: float) -> list[Effect]:
    """The dealer's line and the state after a hold changed: between rounds the dealer
    hears it now; during a round, when the round ends (``dealing.enter``)."""
    if state.phase is P.SHOE_READY:
        return dealing.enter(ctx, state, P.SHOE_READY, at)
    return [published(ctx, state)]


def on_dealer_sign_in(ctx: Context, state: TableState, event: DealerSignedIn) -> list[Effect]:
    _newer(ctx, "dealer_sign_in")
    if event.role not in (DEALER_ROLE, SUPERVISOR_ROLE):
        raise TransitionError(f"only a dealer or a supervisor may sign in a dealer ({event.role})")
    staff_id = event.staff_id.strip()
    if not staff_id:
        raise TransitionError("dealer_sign_in needs the dealer's staff id")
    before = state.dealer
    state.dealer = Dealer(staff_id, event.at)
    # The next dealer is at the table: the change a supervisor asked for is done.
    state.round_holds = _without(state, HoldReason.DEALER_CHANGE)
    payload = {"staff_id": staff_id, "since": event.at, "by": event.by}
    if before is not None:
        payload["replaces"] = before.staff_id
    return [
        answer(event, True, ANSWERS["dealer_signed_in"].format(staff_id=staff_id)),
        PublishEvent("dealer_signed_in", payload),
        *_hold_effects(ctx, state, event.at),
    ]


def on_dealer_sign_out(ctx: Context, state: TableState, event: DealerSignedOut) -> list[Effect]:
    _newer(ctx, "dealer_sign_out")
    if event.role not in (DEALER_ROLE, SUPERVISOR_ROLE):
        raise TransitionError(f"only a dealer or a supervisor may sign out ({event.role})")
    if state.dealer is None:
        raise TransitionError(ANSWERS["no_dealer"])
    staff_id = state.dealer.staff_id
    state.dealer = None
    return [
        answer(event, True, ANSWERS["dealer_signed_out"].format(staff_id=staff_id)),
        PublishEvent("dealer_signed_out", {"staff_id": staff_id, "by": event.by}),
        published(ctx, state),
    ]


def _set_hold(
    ctx: Context, state: TableState, event: SupervisorCommanded, reason: HoldReason
) -> list[Effect]:
    _newer(ctx, event.command)
    state.round_holds = _with_hold(state, Hold(reason, event.by, event.at))
    when = "held_after_round" if phase_at_stake(state) in ROUND_PHASES else "held_now"
    return [
        answer(event, True, ANSWERS[when].format(hold=reason.value)),
        PublishEvent("rounds_held", {"reason": reason.value, "by": event.by}),
        *_hold_effects(ctx, state, event.at),
    ]


def on_dealer_change(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    return _set_hold(ctx, state, event, HoldReason.DEALER_CHANGE)


def on_drain(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    return _set_hold(ctx, state, event, HoldReason.CLOSING)


def on_resume_rounds(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    """A supervisor lifts every hold between rounds (a drain, a dealer change not made)."""
    _newer(ctx, event.command)
    if not state.round_holds:
        raise TransitionError(ANSWERS["no_hold"])
    lifted = [hold.reason.value for hold in state.round_holds]
    state.round_holds = ()
    return [
        answer(event, True, ANSWERS["rounds_resume"].format(holds=", ".join(lifted))),
        PublishEvent("rounds_resumed", {"lifted": lifted, "by": event.by}),
        *_hold_effects(ctx, state, event.at),
    ]


def on_stopping(ctx: Context, state: TableState, event: ControllerStopping) -> list[Effect]:
    """The process is to stop: hold between rounds (``closing``, by nobody: the next start
    lifts it), so the round in play finishes and none opens after it."""
    _newer(ctx, "ControllerStopping")
    state.round_holds = _with_hold(state, Hold(HoldReason.CLOSING, None, event.at))
    return [
        PublishEvent("rounds_held", {"reason": HoldReason.CLOSING.value, "by": None}),
        *_hold_effects(ctx, state, event.at),
    ]
