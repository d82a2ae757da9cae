"""The table's state machine: :class:`TableMachine` takes an event and returns effects.

:meth:`TableMachine.handle` takes one event (time inside it) and returns the effects for the
daemon to carry out. It does no I/O, reads no clock and draws no random number, so replaying
the journal rebuilds the identical state. It never raises on an event that comes at the wrong
time or carries nonsense: it answers with an error effect (``CommandAnswered`` with
``ok=False`` or ``EventRejected``) and leaves the state exactly as it was, or, for an anomaly
at the shoe, pauses the table with a reason code and a plain message.

The machine looks every event up in the transition table (``transitions.py``: which phase
takes which event kind, which handler, which phases it may lead to, and the resume table)
and calls the handler on a copy of its state. The handlers are plain functions of
(machine, state, event): the round's and the shoe's cards in ``dealing.py``, pauses in
``pausing.py``, resumes in ``resuming.py``, and here the commands and the news that change
no card. The words the state is made of are in ``state.py``; what the machine shows of its
state (the public state, the snapshot) is in ``views.py``. The rules are never copied here:
every round is a live round of the rules engine (``controller/games``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from controller.games.shoe import final_round_number
from controller.kernel.cards import Card, ShoeCount
from controller.kernel.errors import JournalError, TableError, TransitionError
from controller.table import dealing, games, pausing, resuming, views
from controller.table.config import OperationalSettings, TableConfig
from controller.table.effects import (
    CommandAnswered,
    Effect,
    EventRejected,
    LockShoe,
    PublishEvent,
    PublishState,
    UnlockShoe,
)
from controller.table.events import (
    SUPERVISOR_COMMANDS,
    CameraOffline,
    CameraOnline,
    CardDrawn,
    CutCardDrawn,
    RoundRequested,
    SettingsChanged,
    ShoeFaultCleared,
    ShoeLockChanged,
    ShoeOnline,
    SupervisorCommanded,
    TimerExpired,
    check_event,
    event_name,
    is_table_event,
)
from controller.table.state import (
    BURN_PHASES,
    ROUND_PHASES,
    Phase,
    TableState,
)
from controller.table.transitions import (
    DISMISSIBLE,
    MACHINE_REVISION,
    SHOE_CARD_KINDS,
    TRANSITIONS,
    event_kind,
    mermaid_diagram,
)

__all__ = [
    "MACHINE_REVISION",
    "TRANSITIONS",
    "Phase",
    "TableMachine",
    "event_kind",
    "mermaid_diagram",
]

logger = logging.getLogger(__name__)

P = Phase

SUPERVISOR_ROLE: Final = "supervisor"

Handler = Callable[["TableMachine", TableState, Any], list[Effect]]


def _still_unannounced(entered: tuple[Card, ...], event: object) -> tuple[Card, ...]:
    """The cards entered by hand whose frames may still come after the shoe's card
    ``event``: those entered after the one whose face it has (frames come in order)."""
    if isinstance(event, CardDrawn) and event.card in entered:
        return entered[entered.index(event.card) + 1 :]
    return ()


class TableMachine:
    """One table's state machine. ``handle(event) -> effects``; ``state`` is its state.

    The same machine replays a journal: feed it the journaled events in order and it
    reaches the identical state (compare :meth:`snapshot`).
    """

    def __init__(
        self,
        config: TableConfig,
        settings: OperationalSettings | None = None,
        revision: int = MACHINE_REVISION,
    ) -> None:
        """``settings``: the operational settings the journal began with (default: the
        config's); a ``SettingsChanged`` event changes them later. ``revision``: the
        :data:`MACHINE_REVISION` the journal was written under."""
        if not 1 <= revision <= MACHINE_REVISION:
            raise JournalError(
                f"machine revision {revision} is unknown to this livetable "
                f"(it knows 1 to {MACHINE_REVISION})"
            )
        self.revision = revision
        self.config = config
        self.state = TableState(settings=settings or config.operational())

    @property
    def settings(self) -> OperationalSettings:
        """The operational settings in force (a pending change applies at the next round)."""
        return self.state.settings  # type: ignore[return-value]

    def handle(self, event: object) -> list[Effect]:
        """Apply ``event``; return the effects. Never raises on a bad or untimely event."""
        refusal = self.refusal(event)
        return [refusal] if refusal is not None else self.apply(event)

    @staticmethod
    def refusal(event: object) -> EventRejected | None:
        """The refusal of something that is not a well-formed table event, else None.

        Fields of the wrong type (a card given as text, a time that is not a finite number)
        would be taken differently on replay, or break a handler half-way.
        """
        if not is_table_event(event):
            return EventRejected(event_name(event), "not a table event")
        try:
            check_event(event)
        except JournalError as error:
            return EventRejected(event_name(event), str(error))
        return None

    def apply(self, event: object) -> list[Effect]:
        """Apply an event that :meth:`refusal` accepted (the journal checks it first)."""
        state = self.state
        kind = event_kind(state, event)
        if kind.startswith("command."):
            refusal = self._check_command(event, kind)  # type: ignore[arg-type]
            if refusal is not None:
                return [refusal]
        transition = TRANSITIONS[state.phase].get(kind)
        if transition is None:
            return [self._refuse(state, event, kind)]
        new = state.copy()
        handler: Handler = getattr(TableMachine, transition.handler)
        try:
            effects = handler(self, new, event)
            if self.revision >= 3 and kind in SHOE_CARD_KINDS:
                # The shoe announced a card: a gap it had to show for the cards entered by
                # hand came before it (the numbering shows a gap with the next frame). If it
                # has the face of one of them it may be that card's late frame (held): the
                # frames of the cards entered after it may still come, late too.
                new.unannounced_entered = _still_unannounced(state.unannounced_entered, event)
                new.unannounced_gaps = 0
            if new.phase not in transition.targets:  # a bug in this file, not in the input
                raise AssertionError(
                    f"{transition.handler} led {state.phase.name} to {new.phase.name}, "
                    f"which the transition table does not list"
                )
        except TableError as error:
            # The handler refused; nothing it did counts. The live round (shared with the
            # copy) may have taken a card or a decision before the refusal: rebuild it from
            # the unchanged log.
            self._restore_round(state)
            if isinstance(event, SupervisorCommanded | RoundRequested):
                return [self._answer(event, False, str(error))]
            return [EventRejected(event_name(event), str(error))]
        except Exception as error:
            # A bug in this file. The event is already journaled, so raising would crash the
            # daemon again at every replay: refuse it, keep the state, and say so loudly
            # (the property tests fail on any "internal error" refusal).
            self._restore_round(state)
            logger.error(
                "internal error: %s in %s for a %s event",
                type(error).__name__,
                transition.handler,
                type(event).__name__,
                exc_info=logger.isEnabledFor(logging.DEBUG),  # a traceback may name cards
            )
            return [
                EventRejected(
                    event_name(event), f"internal error ({type(error).__name__}): state kept"
                )
            ]
        self.state = new
        return effects

    def _restore_round(self, state: TableState) -> None:
        if state.round is not None:
            state.round = dealing.rebuild_round(self, state)

    def _check_command(
        self, event: SupervisorCommanded | RoundRequested, kind: str
    ) -> CommandAnswered | None:
        if isinstance(event, RoundRequested):
            return None
        if kind == "command.unknown":
            return self._answer(
                event,
                False,
                f"unknown command {event.command!r}: expected one of "
                f"{', '.join(SUPERVISOR_COMMANDS)}",
            )
        if not isinstance(event.by, str) or not event.by.strip():
            return self._answer(event, False, "a command must say who gave it")
        if event.role != SUPERVISOR_ROLE:
            return self._answer(
                event, False, f"only a supervisor may {event.command}; {event.by} is {event.role!r}"
            )
        return None

    def _refuse(self, state: TableState, event: object, kind: str) -> Effect:
        where = state.phase.name
        if isinstance(event, SupervisorCommanded):
            if kind == "command.resume":
                return self._answer(event, False, f"the table is not paused (it is {where})")
            if kind == "command.cancel":
                return self._answer(event, False, f"no round to cancel ({where})")
            if kind == "command.new_shoe":
                return self._answer(
                    event, False, f"a new shoe cannot be declared now ({where}): end this one first"
                )
            return self._answer(event, False, f"{event.command} is not possible now ({where})")
        if isinstance(event, RoundRequested):
            return self._answer(event, False, f"a round cannot start now ({where})")
        return EventRejected(event_name(event), f"not accepted in {where} ({kind})")

    @staticmethod
    def _answer(event: SupervisorCommanded | RoundRequested, ok: bool, message: str) -> Effect:
        command = event.command if isinstance(event, SupervisorCommanded) else "round"
        return CommandAnswered(str(event.command_id), str(command), str(event.by), ok, message)

    def public_state(self, state: TableState | None = None) -> dict[str, Any]:
        """The table as the platform and the supervisors may see it (see
        :func:`controller.table.views.public_state`); ``state`` defaults to the machine's."""
        return views.public_state(
            self.config,
            self.state if state is None else state,
            dismissible_unread=("unread", "no_cards_drawn") in DISMISSIBLE[self.revision],
        )

    def _publish(self, state: TableState) -> Effect:
        return PublishState(self.public_state(state))

    def on_shoe_online(self, state: TableState, event: ShoeOnline) -> list[Effect]:
        state.shoe_online = True
        # The shoe may have come back with its gate in any state: say again what we want.
        lock: Effect = LockShoe() if state.shoe_locked else UnlockShoe()
        return [lock, PublishEvent("shoe_online", {"port": event.port}), self._publish(state)]

    def on_shoe_lock(self, state: TableState, event: ShoeLockChanged) -> list[Effect]:
        state.shoe_reports_locked = bool(event.locked)
        if state.shoe_reports_locked == state.shoe_locked:
            return []
        # The gate is not where the table wants it (a confirmation of an older command, or
        # the shoe changed it by itself): ask again. Its next confirmation settles it.
        return [LockShoe() if state.shoe_locked else UnlockShoe()]

    def on_stale_timer(self, state: TableState, event: TimerExpired) -> list[Effect]:
        return []  # the dealer or the platform was quicker than the timer

    def on_shoe_fault_cleared(self, state: TableState, event: ShoeFaultCleared) -> list[Effect]:
        return [PublishEvent("shoe_fault_cleared", {"code": event.code})]

    def on_camera_status(
        self, state: TableState, event: CameraOnline | CameraOffline
    ) -> list[Effect]:
        # News for the supervisors: a question the camera cannot answer now still runs into
        # its own timer, and a pause it causes is resolved as any other.
        online = isinstance(event, CameraOnline)
        if state.camera_online == online:
            return []
        state.camera_online = online
        if isinstance(event, CameraOnline):
            notice = PublishEvent("camera_online", {"source": event.source})
        else:
            details = {"source": event.source, "reason": event.reason}
            notice = PublishEvent("camera_offline", details)
        return [notice, self._publish(state)]

    def on_settings(self, state: TableState, event: SettingsChanged) -> list[Effect]:
        try:
            settings = OperationalSettings(
                betting_s=event.betting_s,
                decision_s=event.decision_s,
                dealer_idle_s=event.dealer_idle_s,
                rounds_after_cut_card=event.rounds_after_cut_card,
                camera_cross_check=event.camera_cross_check,
            )
            TableConfig(table_id=self.config.table_id, game=self.config.game, **settings.to_dict())
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
            self._publish(state),
        ]

    def on_new_shoe(self, state: TableState, event: SupervisorCommanded) -> list[Effect]:
        effects: list[Effect] = []
        if state.shoe_id is not None:
            effects += dealing.end_shoe(
                self, state, event.at, f"a new shoe was declared by {event.by}"
            )
        state.shoes_started += 1
        state.shoe_id = state.shoes_started
        state.count = ShoeCount()
        state.burn_left = 0
        state.burn_cards = ()
        state.round_number = 0
        state.final_round = None
        effects.append(self._answer(event, True, f"shoe {state.shoe_id} declared"))
        effects.append(PublishEvent("shoe_started", {"shoe_id": state.shoe_id, "by": event.by}))
        return effects + dealing.enter(self, state, P.BURN_REVEAL, event.at)

    def on_end_shoe(self, state: TableState, event: SupervisorCommanded) -> list[Effect]:
        if state.pause is not None and state.pause.resume_to in ROUND_PHASES:
            raise TransitionError("a round is in progress: cancel it before ending the shoe")
        if state.shoe_id is None:
            raise TransitionError("no shoe is in play")
        state.holds = ()  # a supervisor ended what was paused: the pauses go with it
        return [
            self._answer(event, True, f"shoe {state.shoe_id} ended"),
            *dealing.end_shoe(self, state, event.at, f"ended by {event.by}"),
        ]

    def on_cut_card(self, state: TableState, event: CutCardDrawn) -> list[Effect]:
        if state.final_round is not None:
            return [EventRejected("CutCardDrawn", "the cut card is already out")]
        phase = state.pause.resume_to if state.pause is not None else state.phase
        if phase in BURN_PHASES or phase is P.AWAITING_SHUFFLE:
            return [EventRejected("CutCardDrawn", "the cut card came out before any round")]
        # The round in progress (a round in betting is "in progress": its cards are next) is
        # the last; between rounds, the next one is.
        cut_round = state.round_number if phase in ROUND_PHASES else state.round_number + 1
        state.final_round = final_round_number(cut_round, state.settings.rounds_after_cut_card)
        return [
            PublishEvent(
                "cut_card_drawn", {"shoe_id": state.shoe_id, "final_round": state.final_round}
            ),
            self._publish(state),
        ]

    def on_round_request(self, state: TableState, event: RoundRequested) -> list[Effect]:
        if not state.shoe_online:
            raise TransitionError("the shoe is offline: no round can start")
        boxes = event.boxes or self._default_boxes()
        state.boxes = boxes
        state.round_number += 1
        state.rounds_started += 1
        state.round_id = state.rounds_started
        dealing.new_round(self, state)  # the rules check the arguments now, not when betting closes
        opened = PublishEvent(
            "round_opened",
            {
                "round_id": state.round_id,
                "shoe_id": state.shoe_id,
                "round_number": state.round_number,
                "final_round": state.final_round,
                "bets": games.available_bets(self.config.game, state.round_number),
                "betting_closes_at": event.at + state.settings.betting_s,
            },
        )
        return [
            self._answer(event, True, f"round {state.round_id} opened"),
            opened,
            *dealing.enter(self, state, P.BETTING, event.at),
        ]

    def _default_boxes(self) -> int:
        return games.default_boxes(self.config.game)

    def on_cancel(self, state: TableState, event: SupervisorCommanded) -> list[Effect]:
        phase = state.pause.resume_to if state.pause is not None else state.phase
        if phase not in ROUND_PHASES:
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
                "bets": {
                    bet: 0.0 for bet in games.available_bets(self.config.game, state.round_number)
                },
                "cards_discarded": discarded + held,
            },
        )
        return [
            self._answer(event, True, f"round {state.round_id} voided: every bet refunded"),
            voided,
            *dealing.close_round(self, state, event.at),
        ]

    def snapshot(self) -> dict[str, Any]:
        """The whole state, secrets included, as JSON-ready data: equal snapshots mean
        equal states (see :func:`controller.table.views.snapshot`)."""
        return views.snapshot(self.state)

    def round_in_progress(self) -> int | None:
        """The id of the round being played (betting to result, paused included)."""
        state = self.state
        phase = state.pause.resume_to if state.pause is not None else state.phase
        return state.round_id if phase in ROUND_PHASES else None

    # -- the handlers TRANSITIONS names that live beside the machine's own -----------------
    # (plain functions of (machine, state, event), looked up by name like the methods above)

    on_shoe_offline = pausing.on_shoe_offline
    on_idle_notice = pausing.on_idle_notice
    on_paused_notice = pausing.on_paused_notice
    on_shoe_fault = pausing.on_shoe_fault
    on_cards_lost = pausing.on_cards_lost
    on_dealer_idle = pausing.on_dealer_idle
    on_started = pausing.on_started
    on_pause_command = pausing.on_pause_command
    on_card_out_of_turn = pausing.on_card_out_of_turn
    on_card_while_paused = pausing.on_card_while_paused
    on_cut_card_out_of_turn = pausing.on_cut_card_out_of_turn
    on_misread_pause = pausing.on_misread_pause
    on_burn_reveal = dealing.on_burn_reveal
    on_burn_card = dealing.on_burn_card
    on_betting_closed = dealing.on_betting_closed
    on_card = dealing.on_card
    on_misread = dealing.on_misread
    on_camera_read = dealing.on_camera_read
    on_camera_timeout = dealing.on_camera_timeout
    on_cross_check = dealing.on_cross_check
    on_decision = dealing.on_decision
    on_decision_timeout = dealing.on_decision_timeout
    on_resume = resuming.on_resume
