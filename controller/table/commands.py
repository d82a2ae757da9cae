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
from controller.table import dealing, games
from controller.table.config import OperationalSettings, TableConfig
from controller.table.effects import CommandAnswered, Effect, EventRejected, PublishEvent, answer
from controller.table.events import (
    SUPERVISOR_COMMANDS,
    RoundRequested,
    SettingsChanged,
    SupervisorCommanded,
    event_name,
)
from controller.table.pausing import pause, with_cause
from controller.table.state import (
    ROUND_PHASES,
    Context,
    PauseReason,
    Phase,
    TableState,
    phase_at_stake,
)
from controller.table.views import published

P = Phase

SUPERVISOR_ROLE: Final = "supervisor"


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
            return answer(event, False, f"the table is not paused (it is {where})")
        if kind == "command.cancel":
            return answer(event, False, f"no round to cancel ({where})")
        if kind == "command.new_shoe":
            return answer(
                event, False, f"a new shoe cannot be declared now ({where}): end this one first"
            )
        return answer(event, False, f"{event.command} is not possible now ({where})")
    if isinstance(event, RoundRequested):
        return answer(event, False, f"a round cannot start now ({where})")
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
        effects += dealing.end_shoe(ctx, state, event.at, f"a new shoe was declared by {event.by}")
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
    effects.append(answer(event, True, f"shoe {state.shoe_id} declared"))
    effects.append(PublishEvent("shoe_started", {"shoe_id": state.shoe_id, "by": event.by}))
    return effects + dealing.enter(ctx, state, P.BURN_REVEAL, event.at)


def on_end_shoe(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    if state.pause is not None and state.pause.resume_to in ROUND_PHASES:
        raise TransitionError("a round is in progress: cancel it before ending the shoe")
    if state.shoe_id is None:
        raise TransitionError("no shoe is in play")
    state.holds = ()  # a supervisor ended what was paused: the pauses go with it
    return [
        answer(event, True, f"shoe {state.shoe_id} ended"),
        *dealing.end_shoe(ctx, state, event.at, f"ended by {event.by}"),
    ]


def on_pause_command(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    reason = str(event.reason).strip()
    if not reason:
        raise TransitionError("pause needs a reason")
    if state.phase is P.PAUSED and ctx.revision < 5:
        raise TransitionError("the table is already paused")
    effects = pause(ctx, state, PauseReason.SUPERVISOR, event.at, reason, by=event.by)
    if ctx.revision >= 5:
        # A supervisor who pauses again keeps one pause, with the reason given last.
        state.holds = with_cause(state.holds, state.pause.causes[-1])  # type: ignore[union-attr]
    return [answer(event, True, "paused"), *effects]


def on_round_request(ctx: Context, state: TableState, event: RoundRequested) -> list[Effect]:
    if not state.shoe_online:
        raise TransitionError("the shoe is offline: no round can start")
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
        },
    )
    return [
        answer(event, True, f"round {state.round_id} opened"),
        opened,
        *dealing.enter(ctx, state, P.BETTING, event.at),
    ]


def on_cancel(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    if phase_at_stake(state) not in ROUND_PHASES:
        raise TransitionError("no round in progress to cancel")
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
        answer(event, True, f"round {state.round_id} voided: every bet refunded"),
        voided,
        *dealing.close_round(ctx, state, event.at),
    ]
