"""The table's state machine: every transition of the shoe and of the round lives here.

Like h11's ``_state.py``, everything that decides the table's transitions is in this one
file, and the transitions are a table: :data:`TRANSITIONS` maps each phase to the kinds of
event it accepts, the handler that takes them and the phases the handler may lead to.
``docs/table.md`` draws its state diagram from that same table (a test checks they agree).
The words the state is made of (:class:`~controller.table.state.Phase`, ``PauseReason``,
``Pause``, ``TableState``) are in ``controller/table/state.py``; what the machine shows of
its state (the public state, the snapshot) is in ``controller/table/views.py``. Neither
decides anything.

:meth:`TableMachine.handle` takes one event (time inside it) and returns the effects for the
daemon to carry out. It does no I/O, reads no clock and draws no random number, so replaying
the journal rebuilds the identical state. It never raises on an event that comes at the wrong
time or carries nonsense: it answers with an error effect (``CommandAnswered`` with
``ok=False`` or ``EventRejected``) and leaves the state exactly as it was, or, for an anomaly
at the shoe, pauses the table with a reason code and a plain message.

The rules are never copied here: every round is a live round of the rules engine
(``controller/games``), asked what it needs next.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from controller.games.base import CardNeeded, DecisionNeeded, LiveRound
from controller.games.shoe import burn_count, final_round_number
from controller.kernel.cards import RANKS, Card, ShoeCount
from controller.kernel.errors import JournalError, RulesError, TableError, TransitionError
from controller.table import games, views
from controller.table.config import OperationalSettings, TableConfig
from controller.table.effects import (
    AskCamera,
    CommandAnswered,
    Effect,
    EventRejected,
    LockShoe,
    PublishEvent,
    PublishState,
    StartTimer,
    TellDealer,
    UnlockShoe,
)
from controller.table.events import (
    SUPERVISOR_COMMANDS,
    CameraOffline,
    CameraOnline,
    CameraRead,
    CardDrawn,
    CardMisread,
    CardsLost,
    ControllerStarted,
    CutCardDrawn,
    PlatformDecided,
    RoundRequested,
    SettingsChanged,
    ShoeFault,
    ShoeFaultCleared,
    ShoeLockChanged,
    ShoeOffline,
    ShoeOnline,
    SupervisorCommanded,
    TimerExpired,
    check_event,
    event_name,
    is_table_event,
)
from controller.table.state import (
    ACTIVE_PHASES,
    BURN_PHASES,
    DRAWING_PHASES,
    HOLE_UNREAD,
    PAUSE_MESSAGES,
    RESOLUTIONS,
    ROUND_PHASES,
    Pause,
    PauseReason,
    Phase,
    TableState,
    hole_card_number,
    hole_revealed,
)
from controller.table.views import step_data

logger = logging.getLogger(__name__)

P = Phase

SUPERVISOR_ROLE: Final = "supervisor"
# Published with an impossible card: without its face, which may be a burn card's.
NINTH_COPY: Final = "all 8 copies of that face were already drawn"
# Stands in for a misread hole card in the live round until the card is read at its reveal.
# Any face would do: the machine checks, after every step, that the round would have gone
# exactly the same whatever the hole card is (see TableMachine._hole_matters).
HOLE_PLACEHOLDER: Final = Card("2", "S")
HOLE_CANDIDATES: Final = tuple(Card(rank, "S") for rank in RANKS)
MACHINE_REVISION: Final = 4
"""How the machine reads events, recorded in each journal so that a journal replays under
the rules it was written with. 2: a shoe that goes offline while cards are due needs the
supervisor's confirmation (``no_cards_drawn``) or the missing cards (``enter_card``).
3: a dealer-idle pause while a card is due takes ``enter_card`` (a frame the shoe lost),
and a gap in the shoe's numbering that cards entered by hand account for pauses nothing.
4: a restart during a round or a burn needs the same confirmation unless the shoe accounts
for every card (``ControllerStarted.gaps_visible``); cards held after such a gap are not
accepted before the gap's cards are entered (or none confirmed), and ``accept`` deals every
card held, in the order they came."""


Handler = Callable[["TableMachine", TableState, Any], list[Effect]]


@dataclass(frozen=True, slots=True)
class Transition:
    """One row of the table: the handler's name and every phase it may lead to."""

    handler: str
    targets: frozenset[Phase]


def _t(handler: str, *targets: Phase) -> Transition:
    return Transition(handler, frozenset(targets))


# Every (phase, event kind) the table accepts. Event kinds: "card", "misread", "cut_card",
# "cards_lost", "shoe_fault", "shoe_fault_cleared", "shoe_online", "shoe_offline",
# "shoe_lock", "camera",
# "decision", "round_request", "started", "timer.<purpose>", "command.<name>".
# A pair that is not here is refused (EventRejected / CommandAnswered ok=False) and changes
# nothing.
_ALWAYS: Final[dict[str, Callable[[Phase], Transition]]] = {
    "shoe_online": lambda phase: _t("on_shoe_online", phase),
    "shoe_lock": lambda phase: _t("on_shoe_lock", phase),
    # A fault's end is news, not a resolution: a pause it caused still needs a supervisor.
    "shoe_fault_cleared": lambda phase: _t("on_shoe_fault_cleared", phase),
    "camera_status": lambda phase: _t("on_camera_status", phase),
    "settings": lambda phase: _t("on_settings", phase),
    "timer.stale": lambda phase: _t("on_stale_timer", phase),
    "command.pause": lambda phase: _t("on_pause_command", P.PAUSED),
}
_AFTER_ROUND: Final = (P.SHOE_READY, P.AWAITING_SHUFFLE)
_ADVANCE: Final = (P.DEALING, P.DECIDING, P.READING, *_AFTER_ROUND)

_BY_PHASE: Final[dict[Phase, dict[str, Transition]]] = {
    P.AWAITING_SHUFFLE: {
        "card": _t("on_card_out_of_turn", P.PAUSED),
        "misread": _t("on_card_out_of_turn", P.PAUSED),
        "cards_lost": _t("on_idle_notice", P.AWAITING_SHUFFLE),
        "shoe_fault": _t("on_idle_notice", P.AWAITING_SHUFFLE),
        "shoe_offline": _t("on_shoe_offline", P.AWAITING_SHUFFLE),
        "started": _t("on_started", P.AWAITING_SHUFFLE),
        "command.new_shoe": _t("on_new_shoe", P.BURN_REVEAL),
    },
    P.BURN_REVEAL: {
        "card": _t("on_burn_reveal", P.BURNING, P.PAUSED),
        "misread": _t("on_misread_pause", P.PAUSED),
        "cut_card": _t("on_cut_card_out_of_turn", P.PAUSED),
        "cards_lost": _t("on_cards_lost", P.BURN_REVEAL, P.PAUSED),
        "shoe_fault": _t("on_shoe_fault", P.PAUSED),
        "shoe_offline": _t("on_shoe_offline", P.PAUSED),
        "timer.dealer_idle": _t("on_dealer_idle", P.PAUSED),
        "started": _t("on_started", P.PAUSED),
        "command.end_shoe": _t("on_end_shoe", P.AWAITING_SHUFFLE),
    },
    P.BURNING: {
        "card": _t("on_burn_card", P.BURNING, P.SHOE_READY, P.PAUSED),
        "misread": _t("on_burn_card", P.BURNING, P.SHOE_READY),
        "cut_card": _t("on_cut_card_out_of_turn", P.PAUSED),
        "cards_lost": _t("on_cards_lost", P.BURNING, P.PAUSED),
        "shoe_fault": _t("on_shoe_fault", P.PAUSED),
        "shoe_offline": _t("on_shoe_offline", P.PAUSED),
        "timer.dealer_idle": _t("on_dealer_idle", P.PAUSED),
        "started": _t("on_started", P.PAUSED),
        "command.end_shoe": _t("on_end_shoe", P.AWAITING_SHUFFLE),
    },
    P.SHOE_READY: {
        "card": _t("on_card_out_of_turn", P.PAUSED),
        "misread": _t("on_card_out_of_turn", P.PAUSED),
        "cut_card": _t("on_cut_card", P.SHOE_READY),
        "cards_lost": _t("on_cards_lost", P.SHOE_READY, P.PAUSED),
        "shoe_fault": _t("on_idle_notice", P.SHOE_READY),
        "shoe_offline": _t("on_shoe_offline", P.SHOE_READY),
        "round_request": _t("on_round_request", P.BETTING),
        "started": _t("on_started", P.SHOE_READY),
        "command.end_shoe": _t("on_end_shoe", P.AWAITING_SHUFFLE),
        "command.new_shoe": _t("on_new_shoe", P.BURN_REVEAL),
    },
    P.BETTING: {
        "card": _t("on_card_out_of_turn", P.PAUSED),
        "misread": _t("on_card_out_of_turn", P.PAUSED),
        "cut_card": _t("on_cut_card", P.BETTING),
        "cards_lost": _t("on_cards_lost", P.BETTING, P.PAUSED),
        "shoe_fault": _t("on_shoe_fault", P.PAUSED),
        "shoe_offline": _t("on_shoe_offline", P.PAUSED),
        "timer.betting": _t("on_betting_closed", P.DEALING, P.DECIDING),
        "started": _t("on_started", P.PAUSED),
        "command.cancel": _t("on_cancel", *_AFTER_ROUND),
    },
    P.DEALING: {
        "card": _t("on_card", *_ADVANCE, P.PAUSED),
        # A misread hole card is played on with a stand-in; the round cannot end before
        # its reveal, which goes to READING.
        "misread": _t("on_misread", P.READING, P.DEALING, P.DECIDING, P.PAUSED),
        "cut_card": _t("on_cut_card", P.DEALING),
        "camera": _t("on_cross_check", P.DEALING, P.PAUSED),
        "cards_lost": _t("on_cards_lost", P.DEALING, P.PAUSED),
        "shoe_fault": _t("on_shoe_fault", P.PAUSED),
        "shoe_offline": _t("on_shoe_offline", P.PAUSED),
        "timer.dealer_idle": _t("on_dealer_idle", P.PAUSED),
        "started": _t("on_started", P.PAUSED),
        "command.cancel": _t("on_cancel", *_AFTER_ROUND),
    },
    P.READING: {
        "camera": _t("on_camera_read", *_ADVANCE, P.PAUSED),
        "card": _t("on_card_out_of_turn", P.PAUSED),
        "misread": _t("on_card_out_of_turn", P.PAUSED),
        "cut_card": _t("on_cut_card", P.READING),
        "cards_lost": _t("on_cards_lost", P.READING, P.PAUSED),
        "shoe_fault": _t("on_shoe_fault", P.PAUSED),
        "shoe_offline": _t("on_shoe_offline", P.PAUSED),
        "timer.camera": _t("on_camera_timeout", P.PAUSED),
        "started": _t("on_started", P.PAUSED),
        "command.cancel": _t("on_cancel", *_AFTER_ROUND),
    },
    P.DECIDING: {
        "decision": _t("on_decision", *_ADVANCE, P.PAUSED),
        "timer.decision": _t("on_decision_timeout", *_ADVANCE, P.PAUSED),
        "card": _t("on_card_out_of_turn", P.PAUSED),
        "misread": _t("on_card_out_of_turn", P.PAUSED),
        "cut_card": _t("on_cut_card", P.DECIDING),
        "camera": _t("on_cross_check", P.DECIDING, P.PAUSED),
        "cards_lost": _t("on_cards_lost", P.DECIDING, P.PAUSED),
        "shoe_fault": _t("on_shoe_fault", P.PAUSED),
        "shoe_offline": _t("on_shoe_offline", P.PAUSED),
        "started": _t("on_started", P.PAUSED),
        "command.cancel": _t("on_cancel", *_AFTER_ROUND),
    },
    P.PAUSED: {
        "card": _t("on_card_while_paused", P.PAUSED),
        "misread": _t("on_card_while_paused", P.PAUSED),
        "cut_card": _t("on_cut_card", P.PAUSED),
        "camera": _t("on_cross_check", P.PAUSED),
        "cards_lost": _t("on_paused_notice", P.PAUSED),
        "shoe_fault": _t("on_paused_notice", P.PAUSED),
        "shoe_offline": _t("on_shoe_offline", P.PAUSED),
        "started": _t("on_started", P.PAUSED),
        "command.resume": _t("on_resume", *(phase for phase in Phase)),
        "command.cancel": _t("on_cancel", *_AFTER_ROUND),
        "command.end_shoe": _t("on_end_shoe", P.AWAITING_SHUFFLE),
    },
}


def _build_transitions() -> dict[Phase, dict[str, Transition]]:
    table: dict[Phase, dict[str, Transition]] = {}
    for phase in Phase:
        row = {kind: make(phase) for kind, make in _ALWAYS.items()}
        row.update(_BY_PHASE[phase])
        table[phase] = row
    # A supervisor pause while paused is refused ("already paused"), not a transition.
    del table[P.PAUSED]["command.pause"]
    return table


TRANSITIONS: Final[dict[Phase, dict[str, Transition]]] = _build_transitions()


def event_kind(state: TableState, event: object) -> str:
    """The kind under which :data:`TRANSITIONS` files ``event`` in ``state``."""
    kind = _SIMPLE_KINDS.get(type(event))
    if kind is not None:
        return kind
    if isinstance(event, TimerExpired):
        purpose = state.timers.get(event.timer_id) if isinstance(event.timer_id, int) else None
        return f"timer.{purpose}" if purpose else "timer.stale"
    if isinstance(event, SupervisorCommanded):
        command = event.command if event.command in SUPERVISOR_COMMANDS else "unknown"
        return f"command.{command}"
    return "unknown"


# The kinds of the events in which the shoe announces a card that left it.
SHOE_CARD_KINDS: Final = frozenset({"card", "misread", "cut_card"})


def _still_unannounced(entered: tuple[Card, ...], event: object) -> tuple[Card, ...]:
    """The cards entered by hand whose frames may still come after the shoe's card
    ``event``: those entered after the one whose face it has (frames come in order)."""
    if isinstance(event, CardDrawn) and event.card in entered:
        return entered[entered.index(event.card) + 1 :]
    return ()


_SIMPLE_KINDS: Final[dict[type, str]] = {
    CardDrawn: "card",
    CardMisread: "misread",
    CutCardDrawn: "cut_card",
    CardsLost: "cards_lost",
    ShoeFault: "shoe_fault",
    ShoeFaultCleared: "shoe_fault_cleared",
    ShoeOnline: "shoe_online",
    ShoeOffline: "shoe_offline",
    ShoeLockChanged: "shoe_lock",
    CameraRead: "camera",
    PlatformDecided: "decision",
    RoundRequested: "round_request",
    ControllerStarted: "started",
    CameraOnline: "camera_status",
    CameraOffline: "camera_status",
    SettingsChanged: "settings",
}


_BOX_HAND: Final = re.compile(r"box(\d+)(?:\.hand(\d+))?")


def _cards_held(state: TableState, position: str) -> int:
    """How many cards the hand ``position`` of the live round holds now, the hole card
    included. The round's public view is asked, not the round log: after a split the box's
    second card belongs to the new hand, and a resplit renumbers the hands after it, which
    only the rules know. A view without that hand (a game whose view has another shape)
    falls back to counting the log, which is right for any hand that never splits."""
    view = state.round.public_view() if state.round is not None else {}
    held = _hand_size(view, position)
    if held is not None:
        return held
    return sum(1 for entry in state.round_log if entry[0] == "card" and entry[1] == position)


def _hand_size(view: Mapping[str, Any], position: str) -> int | None:
    cards: object = None
    box = _BOX_HAND.fullmatch(position)
    if box is not None:
        number, hand = int(box[1]), int(box[2] or 1)
        for entry in view.get("boxes") or ():
            if isinstance(entry, Mapping) and entry.get("box") == number:
                hands = entry.get("hands") or ()
                if 1 <= hand <= len(hands) and isinstance(hands[hand - 1], Mapping):
                    cards = hands[hand - 1].get("cards")
    else:
        entry = view.get(position)
        # Baccarat's view lists a hand's cards; blackjack's holds them under "cards".
        cards = entry.get("cards") if isinstance(entry, Mapping) else entry
    return len(cards) if isinstance(cards, list) else None


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

    # -- the one entry point ------------------------------------------------------------

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
            state.round = self._rebuild_round(state)

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
            if kind == "command.pause":
                return self._answer(event, False, "the table is already paused")
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

    # -- helpers shared by the handlers -----------------------------------------------------

    def _new_round(self, state: TableState) -> LiveRound:
        return games.new_round(
            self.config.game, state.round_number, state.boxes, self.config.variant
        )

    def _rebuild_round(
        self, state: TableState, log: tuple[tuple[Any, ...], ...] | None = None
    ) -> LiveRound:
        live = self._new_round(state)
        for entry in state.round_log if log is None else log:
            if entry[0] == "card":
                live.deal(entry[2])
            else:
                live.decide(entry[1], entry[2], entry[3])
        return live

    def _log_with_hole(self, state: TableState, hole: Card) -> tuple[tuple[Any, ...], ...]:
        index = state.hole_unread
        assert index is not None
        kind, position, _, face_down = state.round_log[index]
        return (
            *state.round_log[:index],
            (kind, position, hole, face_down),
            *state.round_log[index + 1 :],
        )

    def _hole_matters(self, state: TableState) -> bool:
        """Whether the round would have gone differently had the unread hole card been any
        other rank: then the rules need it now (a peek), before it is turned over."""
        outcomes = set()
        for candidate in HOLE_CANDIDATES:
            try:
                live = self._rebuild_round(state, self._log_with_hole(state, candidate))
            except RulesError:
                return True
            step = step_data(live.next_step())
            outcomes.add(repr((step, live.complete, hole_revealed(live))))
        return len(outcomes) > 1

    def _fill_hole(self, state: TableState, card: Card, at: float, source: str) -> list[Effect]:
        """Put the hole card, read at last, in place of its stand-in (already counted)."""
        index = state.hole_unread
        assert index is not None
        log = self._log_with_hole(state, card)
        state.round = self._rebuild_round(state, log)
        state.round_log = log
        state.hole_unread = None
        payload: dict[str, Any] = {
            "round_id": state.round_id,
            "position": log[index][1],
            "source": source,
        }
        if hole_revealed(state.round):
            payload["card"] = str(card)
        return [PublishEvent("hole_card_read", payload), *self._advance(state, at)]

    def _timer(self, state: TableState, purpose: str, duration: float, at: float) -> Effect:
        timer_id = state.next_timer_id
        state.next_timer_id += 1
        state.timers[timer_id] = purpose
        return StartTimer(timer_id, purpose, duration, at + duration)

    def _lock(self, state: TableState, locked: bool) -> list[Effect]:
        if state.shoe_locked == locked:
            return []
        state.shoe_locked = locked
        return [LockShoe() if locked else UnlockShoe()]

    def public_state(self, state: TableState | None = None) -> dict[str, Any]:
        """The table as the platform and the supervisors may see it (see
        :func:`controller.table.views.public_state`); ``state`` defaults to the machine's."""
        return views.public_state(self.config, self.state if state is None else state)

    def _reading_number(self, state: TableState) -> int:
        """The slot number of the card the camera is asked to read (``state.reading``): the
        hole card's own place, or for a misread card, which is not in the round yet, the
        next slot of its hand."""
        if self._reading_hole(state):
            return hole_card_number(state)
        return _cards_held(state, state.reading) + 1  # type: ignore[arg-type]

    @staticmethod
    def _reading_hole(state: TableState) -> bool:
        return state.hole_unread is not None and hole_revealed(state.round)

    def _publish(self, state: TableState) -> Effect:
        return PublishState(self.public_state(state))

    def _enter(self, state: TableState, phase: Phase, at: float) -> list[Effect]:
        """Move to ``phase`` and say so: shoe lock, dealer's line, timers, the new state."""
        state.phase = phase
        state.timers = {}
        state.deadline = None
        if phase in (P.SHOE_READY, P.AWAITING_SHUFFLE) and state.pending_settings is not None:
            state.settings, state.pending_settings = state.pending_settings, None
        effects: list[Effect] = self._lock(state, phase not in DRAWING_PHASES)
        if phase is P.BURN_REVEAL:
            effects.append(TellDealer("reveal", "draw the first card of the shoe and reveal it"))
            effects.append(self._timer(state, "dealer_idle", state.settings.dealer_idle_s, at))
        elif phase is P.BURNING:
            effects.append(
                TellDealer(
                    "burn",
                    f"burn {state.burn_left} card(s) face down",
                    count=state.burn_left,
                )
            )
            effects.append(self._timer(state, "dealer_idle", state.settings.dealer_idle_s, at))
        elif phase is P.DEALING:
            step = state.round.next_step()  # type: ignore[union-attr]
            assert isinstance(step, CardNeeded)
            how = "face down" if step.face_down else "face up"
            effects.append(
                TellDealer("deal", f"next card to {step.position}, {how}", position=step.position)
            )
            effects.append(self._timer(state, "dealer_idle", state.settings.dealer_idle_s, at))
        elif phase is P.READING:
            position: str = state.reading  # type: ignore[assignment]
            if self._reading_hole(state):
                effects.append(AskCamera(position, "hole_reveal", self._reading_number(state)))
                effects.append(TellDealer("reveal", "turn the hole card over for the camera"))
            else:
                effects.append(AskCamera(position, "misread", self._reading_number(state)))
                effects.append(TellDealer("wait", "the card is being read by the camera"))
            effects.append(self._timer(state, "camera", state.settings.dealer_idle_s, at))
        elif phase is P.DECIDING:
            step = state.round.next_step()  # type: ignore[union-attr]
            assert isinstance(step, DecisionNeeded)
            timer = self._timer(state, "decision", state.settings.decision_s, at)
            state.deadline = timer.due_at  # type: ignore[attr-defined]
            effects.append(
                PublishEvent(
                    "decision_requested",
                    {
                        "round_id": state.round_id,
                        "kind": step.kind,
                        "box": step.box,
                        "hand": step.hand,
                        "options": sorted(step.options),
                        "default": step.default,
                        "deadline": timer.due_at,  # type: ignore[attr-defined]
                    },
                )
            )
            effects.append(timer)
            effects.append(TellDealer("wait", f"waiting for the {step.kind} decision"))
        elif phase is P.BETTING:
            betting = self._timer(state, "betting", state.settings.betting_s, at)
            state.deadline = betting.due_at  # type: ignore[attr-defined]
            effects.append(betting)
            effects.append(TellDealer("wait", "betting is open"))
        elif phase is P.SHOE_READY:
            effects.append(TellDealer("wait", "waiting for the next round"))
        elif phase is P.AWAITING_SHUFFLE:
            effects.append(TellDealer("shuffle", "shuffle the shoe, then declare a new shoe"))
        effects.append(self._publish(state))
        return effects

    def _advance(self, state: TableState, at: float) -> list[Effect]:
        """Ask the round what it needs next and go there (or settle it)."""
        if state.hole_unread is not None:
            if hole_revealed(state.round):
                # The dealer turns the hole card over now: the camera can read it.
                state.reading = state.round_log[state.hole_unread][1]
                return self._enter(state, P.READING, at)
            if self._hole_matters(state):
                return self._pause(
                    state,
                    PauseReason.HOLE_CARD_MISREAD,
                    at,
                    "the rules need it before its reveal: the supervisor reads it privately "
                    "and enters it by hand",
                    unread=HOLE_UNREAD,
                )
        step = state.round.next_step()  # type: ignore[union-attr]
        if isinstance(step, CardNeeded):
            return self._enter(state, P.DEALING, at)
        if isinstance(step, DecisionNeeded):
            return self._enter(state, P.DECIDING, at)
        return self._settle(state, at)

    def _settle(self, state: TableState, at: float) -> list[Effect]:
        settlement = dict(state.round.settlement())  # type: ignore[union-attr]
        side_bets = settlement.get("side_bets")
        if isinstance(side_bets, Mapping):
            # The rules score every side bet; only those offered in this round of the shoe
            # (round_opened's "bets") may be settled: no bet on the others was taken.
            offered = set(games.available_bets(self.config.game, state.round_number))
            settlement["side_bets"] = {b: net for b, net in side_bets.items() if b in offered}
        effects: list[Effect] = [
            PublishEvent(
                "round_settled",
                {"round_id": state.round_id, "shoe_id": state.shoe_id, "result": settlement},
            )
        ]
        return effects + self._close_round(state, at)

    def _close_round(self, state: TableState, at: float) -> list[Effect]:
        state.round = None
        state.round_log = ()
        state.cross_checks = ()
        state.reading = None
        state.hole_unread = None
        state.pause = None
        if state.final_round is not None and state.round_number >= state.final_round:
            return self._end_shoe(state, at, "the final round after the cut card was played")
        return self._enter(state, P.SHOE_READY, at)

    def _end_shoe(self, state: TableState, at: float, why: str) -> list[Effect]:
        effects: list[Effect] = [PublishEvent("shoe_ended", {"shoe_id": state.shoe_id, "why": why})]
        state.shoe_id = None
        state.count = None
        state.burn_left = 0
        state.burn_cards = ()
        state.final_round = None
        state.round_number = 0
        state.round_id = None
        state.round = None
        state.round_log = ()
        state.cross_checks = ()
        state.reading = None
        state.hole_unread = None
        state.pause = None
        return effects + self._enter(state, P.AWAITING_SHUFFLE, at)

    def _pause(
        self,
        state: TableState,
        reason: PauseReason,
        at: float,
        detail: str = "",
        held: tuple[Card | None, ...] = (),
        unread: str | None = None,
        by: str | None = None,
        uncounted: tuple[int, ...] = (),
        offline_gap: bool = False,
    ) -> list[Effect]:
        """Pause (or add ``reason`` to the pause in effect). ``offline_gap``: cards may have
        left the shoe unseen (besides a shoe outage while cards are due, which always is)."""
        previous = state.pause
        resume_to = previous.resume_to if previous is not None else state.phase
        message = PAUSE_MESSAGES[reason] + (f": {detail}" if detail else "")
        since = at
        offline_gap = offline_gap or (
            self.revision >= 2
            and reason is PauseReason.SHOE_OFFLINE
            and resume_to in DRAWING_PHASES
        )
        idle_gap = (
            self.revision >= 3 and reason is PauseReason.DEALER_IDLE and resume_to is P.DEALING
        )
        gap_before_held = offline_gap and not held
        if previous is not None:
            if previous.offline_gap:
                gap_before_held = previous.gap_before_held
            else:
                gap_before_held = gap_before_held and not previous.held
            uncounted = previous.uncounted + tuple(len(previous.held) + i for i in uncounted)
            held = previous.held + held
            unread = unread or previous.unread
            since = previous.since if previous.since is not None else at
            offline_gap = offline_gap or previous.offline_gap
            idle_gap = idle_gap or previous.idle_gap
        state.pause = Pause(
            reason,
            message,
            resume_to,
            held,
            unread,
            by,
            since,
            offline_gap,
            idle_gap,
            uncounted,
            gap_before_held,
        )
        state.reading = None
        state.phase = P.PAUSED
        state.timers = {}
        state.deadline = None
        # Always said, even if the gate should already be closed: a pause must hold the shoe.
        state.shoe_locked = True
        effects: list[Effect] = [LockShoe()]
        effects.append(
            PublishEvent(
                "table_paused",
                {
                    "reason": reason.value,
                    "message": message,
                    "round_id": state.round_id,
                    "shoe_id": state.shoe_id,
                    "by": by,
                },
            )
        )
        effects.append(TellDealer("stop", f"stop: {message}; call the supervisor"))
        effects.append(self._publish(state))
        return effects

    def _count(self, state: TableState, card: Card) -> None:
        """Count ``card`` as out of the shoe; RulesError for a ninth copy (nothing counted)."""
        if state.count is not None:
            state.count.record(card)

    def _deal(self, state: TableState, card: Card, at: float, source: str) -> list[Effect]:
        """Give ``card`` (already counted) to the position the round expects, then advance."""
        live = state.round
        step = live.next_step()  # type: ignore[union-attr]
        assert isinstance(step, CardNeeded)
        try:
            live.deal(card)  # type: ignore[union-attr]
        except RulesError:
            # Not the rules' message: it names the card, which may be the secret hole card.
            logger.error("the rules refused the card dealt to %s", step.position)
            return self._pause(
                state, PauseReason.RULES_REFUSED, at, f"at {step.position}", held=(card,)
            )
        state.round_log += (("card", step.position, card, step.face_down),)
        payload: dict[str, Any] = {
            "round_id": state.round_id,
            "position": step.position,
            "face_down": step.face_down,
            "source": source,
        }
        if not step.face_down:
            payload["card"] = str(card)
        effects: list[Effect] = [PublishEvent("card_dealt", payload)]
        if state.settings.camera_cross_check and not step.face_down and source == "shoe":
            number = _cards_held(state, step.position)
            state.cross_checks += ((step.position, number, card),)
            effects.append(AskCamera(step.position, "cross_check", number))
        return effects + self._advance(state, at)

    def _take_card(self, state: TableState, card: Card, at: float, source: str) -> list[Effect]:
        """A card for the round from the shoe or the camera: count it, check it, deal it."""
        try:
            self._count(state, card)
        except RulesError:
            return self._pause(state, PauseReason.IMPOSSIBLE_CARD, at, NINTH_COPY)
        return self._deal(state, card, at, source)

    # -- handlers: one per row of TRANSITIONS -------------------------------------------------

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

    def on_shoe_offline(self, state: TableState, event: ShoeOffline) -> list[Effect]:
        state.shoe_online = False
        notice = PublishEvent("shoe_offline", {"port": event.port, "reason": event.reason})
        if state.phase in ACTIVE_PHASES:
            return [notice, *self._pause(state, PauseReason.SHOE_OFFLINE, event.at, event.reason)]
        return [notice, self._publish(state)]

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

    def on_idle_notice(self, state: TableState, event: ShoeFault | CardsLost) -> list[Effect]:
        if isinstance(event, ShoeFault):
            return [PublishEvent("shoe_fault", {"code": event.code, "message": event.message})]
        self._unaccounted(state, event)  # news either way; the cards entered are spoken for
        return [PublishEvent("cards_lost", {"count": len(event.sequences)})]

    def _unaccounted(self, state: TableState, event: CardsLost) -> int:
        """How many of the cards the shoe says it lost no card entered by hand accounts for.

        A frame the shoe lost is a card that left it unannounced; if the supervisor entered
        that card from the felt, the shoe's numbering shows the gap with its next card."""
        lost = len(event.sequences)
        if self.revision < 3:
            return lost
        accounted = min(lost, len(state.unannounced_entered) - state.unannounced_gaps)
        state.unannounced_gaps += accounted
        return lost - accounted

    def on_paused_notice(self, state: TableState, event: ShoeFault | CardsLost) -> list[Effect]:
        return self.on_idle_notice(state, event)

    def on_shoe_fault(self, state: TableState, event: ShoeFault) -> list[Effect]:
        return self._pause(
            state, PauseReason.SHOE_FAULT, event.at, f"{event.code}: {event.message}"
        )

    def on_cards_lost(self, state: TableState, event: CardsLost) -> list[Effect]:
        lost = self._unaccounted(state, event)
        if lost == 0:
            return [PublishEvent("cards_lost", {"count": len(event.sequences)})]
        held: tuple[Card | None, ...] = (None,) * lost
        return self._pause(
            state, PauseReason.CARDS_LOST, event.at, f"{lost} card(s) left unread", held=held
        )

    def on_dealer_idle(self, state: TableState, event: TimerExpired) -> list[Effect]:
        return self._pause(
            state,
            PauseReason.DEALER_IDLE,
            event.at,
            f"nothing for {state.settings.dealer_idle_s:g} s",
        )

    def on_started(self, state: TableState, event: ControllerStarted) -> list[Effect]:
        # Whatever the daemon was doing before the restart is gone: its timers and the
        # shoe's gate. Ask again for the lock the phase needs.
        state.timers = {}
        lock: Effect = LockShoe() if state.shoe_locked else UnlockShoe()
        # A card drawn while nobody read the shoe is gone unless the protocol resends it or
        # names it lost: a person says whether one was (see MACHINE_REVISION 4).
        unseen = self.revision >= 4 and not event.gaps_visible
        if state.phase in ACTIVE_PHASES:
            return self._pause(
                state, PauseReason.RECOVERED, event.at, "resume or cancel", offline_gap=unseen
            )
        if state.phase is P.PAUSED and unseen and state.pause.resume_to in ACTIVE_PHASES:  # type: ignore[union-attr]
            return self._pause(
                state, PauseReason.RECOVERED, event.at, "resume or cancel", offline_gap=True
            )
        if state.phase is P.PAUSED:
            state.shoe_locked = True
            return [LockShoe(), self._publish(state)]
        return [lock, self._publish(state)]

    def on_pause_command(self, state: TableState, event: SupervisorCommanded) -> list[Effect]:
        reason = str(event.reason).strip()
        if not reason:
            raise TransitionError("pause needs a reason")
        return [
            self._answer(event, True, "paused"),
            *self._pause(state, PauseReason.SUPERVISOR, event.at, reason, by=event.by),
        ]

    # shoe lifecycle

    def on_new_shoe(self, state: TableState, event: SupervisorCommanded) -> list[Effect]:
        effects: list[Effect] = []
        if state.shoe_id is not None:
            effects += self._end_shoe(state, event.at, f"a new shoe was declared by {event.by}")
        state.shoes_started += 1
        state.shoe_id = state.shoes_started
        state.count = ShoeCount()
        state.burn_left = 0
        state.burn_cards = ()
        state.round_number = 0
        state.final_round = None
        effects.append(self._answer(event, True, f"shoe {state.shoe_id} declared"))
        effects.append(PublishEvent("shoe_started", {"shoe_id": state.shoe_id, "by": event.by}))
        return effects + self._enter(state, P.BURN_REVEAL, event.at)

    def on_end_shoe(self, state: TableState, event: SupervisorCommanded) -> list[Effect]:
        if state.pause is not None and state.pause.resume_to in ROUND_PHASES:
            raise TransitionError("a round is in progress: cancel it before ending the shoe")
        if state.shoe_id is None:
            raise TransitionError("no shoe is in play")
        return [
            self._answer(event, True, f"shoe {state.shoe_id} ended"),
            *self._end_shoe(state, event.at, f"ended by {event.by}"),
        ]

    def on_burn_reveal(self, state: TableState, event: CardDrawn) -> list[Effect]:
        return self._reveal(state, event.card, event.at)

    def _reveal(self, state: TableState, card: Card, at: float) -> list[Effect]:
        try:
            self._count(state, card)
        except RulesError:
            return self._pause(state, PauseReason.IMPOSSIBLE_CARD, at, NINTH_COPY)
        state.burn_cards = (card,)
        state.burn_left = burn_count(card)
        # The revealed card's face is on the table for all to see, but it is a burn card: it
        # goes to the journal (as the event) and nowhere else.
        return [
            PublishEvent("burn_started", {"shoe_id": state.shoe_id, "cards": state.burn_left}),
            *self._enter(state, P.BURNING, at),
        ]

    def on_burn_card(self, state: TableState, event: CardDrawn | CardMisread) -> list[Effect]:
        card = event.card if isinstance(event, CardDrawn) else None
        if card is not None:
            try:
                self._count(state, card)
            except RulesError:
                return self._pause(state, PauseReason.IMPOSSIBLE_CARD, event.at, NINTH_COPY)
        state.burn_cards += (card,)
        state.burn_left -= 1
        if state.burn_left > 0:
            state.timers = {}
            # The state says how many are left to burn (never their faces).
            timer = self._timer(state, "dealer_idle", state.settings.dealer_idle_s, event.at)
            return [timer, self._publish(state)]
        return [
            PublishEvent(
                "burn_completed", {"shoe_id": state.shoe_id, "cards": len(state.burn_cards)}
            ),
            *self._enter(state, P.SHOE_READY, event.at),
        ]

    def on_card_out_of_turn(
        self, state: TableState, event: CardDrawn | CardMisread
    ) -> list[Effect]:
        return self._hold_out_of_turn(state, event, self._why_out_of_turn(state))

    def _hold_out_of_turn(
        self, state: TableState, event: CardDrawn | CardMisread, why: str
    ) -> list[Effect]:
        """Pause and hold a card that came when none was due (counted: a ninth copy is
        impossible whenever it comes)."""
        card = event.card if isinstance(event, CardDrawn) else None
        # The face of a card entered by hand: perhaps its late frame, which was counted
        # when it was entered. It is counted if it is accepted as another card.
        late = card is not None and card in state.unannounced_entered
        if card is not None and state.count is not None and not late:
            try:
                self._count(state, card)
            except RulesError:
                return self._pause(state, PauseReason.IMPOSSIBLE_CARD, event.at, NINTH_COPY)
        return self._pause(
            state,
            PauseReason.CARD_OUT_OF_TURN,
            event.at,
            why,
            held=(card,),
            uncounted=(0,) if late else (),
        )

    @staticmethod
    def _why_out_of_turn(state: TableState) -> str:
        phase = state.pause.resume_to if state.pause is not None else state.phase
        if phase is P.AWAITING_SHUFFLE:
            return "before a new shoe was declared and its burn done"
        if phase is P.SHOE_READY:
            if state.round_number == 0:
                return "one burn card too many"
            return "after the round's last card, before the next round"
        if phase is P.BETTING:
            return "during betting"
        if phase is P.DECIDING:
            return "while a decision is pending"
        if phase is P.READING:
            return "while the camera reads a misread card"
        return "while the table was paused"

    def on_card_while_paused(
        self, state: TableState, event: CardDrawn | CardMisread
    ) -> list[Effect]:
        return self._hold_out_of_turn(state, event, "while the table was paused")

    def on_cut_card_out_of_turn(self, state: TableState, event: CutCardDrawn) -> list[Effect]:
        return self._pause(
            state, PauseReason.CARD_OUT_OF_TURN, event.at, "the cut card came out during the burn"
        )

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

    # rounds

    def on_round_request(self, state: TableState, event: RoundRequested) -> list[Effect]:
        if not state.shoe_online:
            raise TransitionError("the shoe is offline: no round can start")
        boxes = event.boxes or self._default_boxes()
        state.boxes = boxes
        state.round_number += 1
        state.rounds_started += 1
        state.round_id = state.rounds_started
        self._new_round(state)  # the rules check the arguments now, not when betting closes
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
            *self._enter(state, P.BETTING, event.at),
        ]

    def _default_boxes(self) -> int:
        return games.default_boxes(self.config.game)

    def on_betting_closed(self, state: TableState, event: TimerExpired) -> list[Effect]:
        state.round = self._new_round(state)
        state.round_log = ()
        closed = PublishEvent("betting_closed", {"round_id": state.round_id})
        return [closed, *self._advance(state, event.at)]

    def on_card(self, state: TableState, event: CardDrawn) -> list[Effect]:
        if event.card in state.unannounced_entered:
            # It has the face of a card entered by hand whose frame never came (a gap before
            # it may be another card's): it may be that frame, late. Dealt, it would go to
            # the next position. Its face is not said: it may be the hole card.
            return self._hold_out_of_turn(
                state,
                event,
                "the shoe announced a card of the face of one entered by hand: burn it if it "
                "is that card's frame, late, accept it if the dealer drew another",
            )
        return self._take_card(state, event.card, event.at, "shoe")

    def on_misread(self, state: TableState, event: CardMisread) -> list[Effect]:
        step = state.round.next_step()  # type: ignore[union-attr]
        assert isinstance(step, CardNeeded)
        if step.face_down:
            # The camera cannot see a face-down card and the dealer must not turn it over
            # early: play on with a stand-in while its face cannot matter, read it at its
            # reveal (or pause if the rules need it before).
            if state.hole_unread is not None:
                raise TransitionError("a second face-down card misread")  # pragma: no cover
            state.round.deal(HOLE_PLACEHOLDER)  # type: ignore[union-attr]
            state.round_log += (("card", step.position, HOLE_PLACEHOLDER, True),)
            state.hole_unread = len(state.round_log) - 1
            dealt = PublishEvent(
                "card_dealt",
                {
                    "round_id": state.round_id,
                    "position": step.position,
                    "face_down": True,
                    "source": "unread",
                },
            )
            return [dealt, *self._advance(state, event.at)]
        state.reading = step.position
        return self._enter(state, P.READING, event.at)

    def on_misread_pause(self, state: TableState, event: CardMisread) -> list[Effect]:
        return self._pause(
            state, PauseReason.MISREAD, event.at, "the revealed burn card", unread="burn"
        )

    def on_camera_read(self, state: TableState, event: CameraRead) -> list[Effect]:
        asked = event.position == state.reading and event.card_number in (
            None,
            self._reading_number(state),
        )
        if not asked:
            return self.on_cross_check(state, event)
        hole = self._reading_hole(state)
        state.reading = None
        if event.card is None:
            return self._pause(
                state,
                PauseReason.MISREAD,
                event.at,
                f"the card for {event.position}",
                unread=HOLE_UNREAD if hole else event.position,
            )
        if hole:
            try:
                self._count(state, event.card)
            except RulesError:
                return self._pause(
                    state, PauseReason.IMPOSSIBLE_CARD, event.at, NINTH_COPY, unread=HOLE_UNREAD
                )
            return self._fill_hole(state, event.card, event.at, "camera")
        return self._take_card(state, event.card, event.at, "camera")

    def on_camera_timeout(self, state: TableState, event: TimerExpired) -> list[Effect]:
        position = HOLE_UNREAD if self._reading_hole(state) else state.reading
        return self._pause(
            state, PauseReason.MISREAD, event.at, "the camera did not answer", unread=position
        )

    def on_cross_check(self, state: TableState, event: CameraRead) -> list[Effect]:
        index = next(
            (
                i
                for i, (position, number, _) in enumerate(state.cross_checks)
                if position == event.position and event.card_number in (None, number)
            ),
            None,
        )
        if index is None:
            slot = f" card {event.card_number}" if event.card_number is not None else ""
            raise TransitionError(f"no camera reading was asked for {event.position!r}{slot}")
        position, _number, card = state.cross_checks[index]
        state.cross_checks = state.cross_checks[:index] + state.cross_checks[index + 1 :]
        if event.card is None or event.card == card:
            return []  # agreement, or the camera abstains: the shoe's reading stands
        return self._pause(
            state,
            PauseReason.CAMERA_MISMATCH,
            event.at,
            f"at {position} the shoe read {card}, the camera {event.card}",
        )

    def on_decision(self, state: TableState, event: PlatformDecided) -> list[Effect]:
        step = state.round.next_step()  # type: ignore[union-attr]
        assert isinstance(step, DecisionNeeded)
        if event.round_id != state.round_id:
            raise TransitionError(f"round {event.round_id} is not the round in progress")
        if event.kind != step.kind:
            raise TransitionError(f"a {step.kind} decision is pending, not {event.kind!r}")
        return self._decide(state, event.box, event.hand, event.decision, event.at, auto=False)

    def on_decision_timeout(self, state: TableState, event: TimerExpired) -> list[Effect]:
        step = state.round.next_step()  # type: ignore[union-attr]
        assert isinstance(step, DecisionNeeded)
        if step.kind == "more_cards":
            # Not a player's decision but the platform's summary of every player's: the
            # players' own timeouts are auto-played by the platform, which holds their
            # hands. Silence here means the platform is down, and any guess (the shared
            # cards played as one unsplit hand) can leave a player who split with a hand
            # the common sequence never finishes. A system problem: pause
            # (docs/rules-baccarat.md, Errors and disconnections).
            return self._pause(
                state,
                PauseReason.PLATFORM_SILENT,
                event.at,
                f"no answer within {state.settings.decision_s:g} s",
            )
        return self._decide(state, step.box, step.hand, step.default, event.at, auto=True)

    def _decide(
        self, state: TableState, box: int, hand: int, token: str, at: float, auto: bool
    ) -> list[Effect]:
        step = state.round.next_step()  # type: ignore[union-attr]
        assert isinstance(step, DecisionNeeded)
        state.round.decide(box, hand, token)  # type: ignore[union-attr]
        state.round_log += (("decision", box, hand, str(token).upper(), auto),)
        taken = PublishEvent(
            "decision_taken",
            {
                "round_id": state.round_id,
                "kind": step.kind,
                "box": box,
                "hand": hand,
                "decision": str(token).upper(),
                "auto": auto,
            },
        )
        return [taken, *self._advance(state, at)]

    def on_cancel(self, state: TableState, event: SupervisorCommanded) -> list[Effect]:
        phase = state.pause.resume_to if state.pause is not None else state.phase
        if phase not in ROUND_PHASES:
            raise TransitionError("no round in progress to cancel")
        discarded = len(state.round_log)
        held = len(state.pause.held) if state.pause is not None else 0
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
            *self._close_round(state, event.at),
        ]

    def on_resume(self, state: TableState, event: SupervisorCommanded) -> list[Effect]:
        pause = state.pause
        assert pause is not None
        resolution = str(event.resolution)
        if resolution not in RESOLUTIONS:
            raise TransitionError(
                f"unknown resolution {resolution!r}: expected "
                f"{', '.join(r for r in RESOLUTIONS if r)}"
            )
        if not state.shoe_online:
            raise TransitionError("the shoe is offline: bring it back before resuming")
        held, unread, offline_gap = pause.held, pause.unread, pause.offline_gap
        effects: list[Effect] = []
        dealt_card: Card | None = None
        if resolution == "no_cards_drawn":
            if not offline_gap:
                raise TransitionError("the shoe was not offline while cards were due")
            offline_gap = False
        elif resolution == "enter_card" and offline_gap and unread is None:
            return self._enter_offline_card(state, event, pause)
        elif resolution == "enter_card" and pause.idle_gap and unread is None:
            # The card the shoe never announced, from the felt: dealt below like any card
            # entered by hand, and remembered so that the gap it left is not a new pause.
            if event.card is None:
                raise TransitionError("enter_card needs the card")
            dealt_card = event.card
            state.unannounced_entered += (event.card,)
        elif resolution == "accept" and self.revision >= 4:
            return self._accept_held(state, event, pause)
        elif resolution == "burn":
            if not held:
                raise TransitionError("no card was drawn out of turn: nothing to burn")
            effects.append(PublishEvent("cards_burned", {"count": len(held)}))
            held = ()
        elif resolution == "accept":
            if len(held) != 1 or held[0] is None:
                raise TransitionError("accept takes exactly one card that was read")
            if unread is not None:
                raise TransitionError("enter the unread card first")
            if pause.resume_to is not P.DEALING:
                raise TransitionError("the round expects no card now: burn it instead")
            dealt_card, held = held[0], ()
            if pause.uncounted:  # another card of that face, not the late frame
                self._count_accepted(state, dealt_card)
        elif resolution == "enter_card":
            if unread is None:
                raise TransitionError("no card is waiting to be entered by hand")
            if event.card is None:
                raise TransitionError("enter_card needs the card")
            dealt_card, unread = event.card, None
        if held or unread is not None or offline_gap:
            progressed = held != pause.held or offline_gap != pause.offline_gap
            if self.revision >= 3 and progressed and dealt_card is None:
                # One resolution of several: it is applied, and the table stays paused
                # for the rest (each alone would otherwise be refused for the other).
                uncounted = pause.uncounted if held else ()
                state.pause = replace(
                    pause, held=held, offline_gap=offline_gap, uncounted=uncounted
                )
                rest = "; ".join(state.pause.needs())
                answer = self._answer(event, True, f"{resolution} done; still needed: {rest}")
                return [answer, *effects, self._publish(state)]
            still = Pause(pause.reason, "", pause.resume_to, held, unread, offline_gap=offline_gap)
            raise TransitionError("still needed before resuming: " + "; ".join(still.needs()))
        state.pause = None
        resume_to = pause.resume_to
        answer = self._answer(event, True, f"resumed ({resolution or 'nothing to resolve'})")
        resumed = self._resumed(state, event, pause, resolution)
        if dealt_card is None:
            effects += self._resume_into(state, resume_to, event.at)
        elif resume_to is P.BURN_REVEAL:
            self._count_entered(state, dealt_card)
            state.phase = P.BURN_REVEAL
            effects += self._reveal(state, dealt_card, event.at)
        elif pause.unread == HOLE_UNREAD:
            self._count_entered(state, dealt_card)
            effects += self._fill_hole(state, dealt_card, event.at, "supervisor")
        else:
            if resolution == "enter_card":
                self._count_entered(state, dealt_card)
            state.phase = P.DEALING
            effects += self._deal(state, dealt_card, event.at, "supervisor")
        return [answer, resumed, *effects]

    def _enter_offline_card(
        self, state: TableState, event: SupervisorCommanded, pause: Pause
    ) -> list[Effect]:
        """A card that left the shoe while it was offline, entered by hand: it goes where
        the round expected it, and the table stays paused until the supervisor confirms no
        other card left (or enters the next)."""
        if event.card is None:
            raise TransitionError("enter_card needs the card")
        # Cards held that came before the gap are dealt (or burnt) first; those that came
        # after it (revision 4) wait for the gap's cards, entered here.
        held_after = self.revision >= 4 and pause.gap_before_held
        if pause.held and not held_after:
            raise TransitionError("accept or burn the cards drawn out of turn first")
        if pause.resume_to is not P.DEALING:
            raise TransitionError(
                "no round card was due: confirm with no_cards_drawn, or end the shoe"
            )
        self._count_entered(state, event.card)
        if self.revision >= 3:
            state.unannounced_entered += (event.card,)
        state.pause = None
        state.phase = P.DEALING
        effects = self._deal(state, event.card, event.at, "supervisor")
        answer = self._answer(event, True, "card entered; the table stays paused")
        if state.phase is not P.DEALING:
            # The card finished the round or asks for a decision: nothing more can be due;
            # cards held after it came out of turn.
            if not pause.held and state.phase is not P.PAUSED:
                answer = self._answer(event, True, "card entered; the round goes on")
            if pause.held:
                effects += self._pause(
                    state,
                    PauseReason.CARD_OUT_OF_TURN,
                    event.at,
                    "after the cards entered by hand",
                    held=pause.held,
                    uncounted=pause.uncounted,
                )
            return [answer, *effects]
        # Revision 4: the pause stays the table's (its reason and who made it, if anyone);
        # the supervisor who entered the card did not pause the table.
        reason = pause.reason if self.revision >= 4 else PauseReason.SHOE_OFFLINE
        effects += self._pause(
            state,
            reason,
            event.at,
            "cards entered by hand; confirm no other card left the shoe",
            by=pause.by if self.revision >= 4 else event.by,
            held=pause.held,
            uncounted=pause.uncounted,
            offline_gap=True,
        )
        if pause.held:
            state.pause = replace(state.pause, gap_before_held=True)  # type: ignore[arg-type]
        return [answer, *effects]

    def _accept_held(
        self, state: TableState, event: SupervisorCommanded, pause: Pause
    ) -> list[Effect]:
        """Deal every card held, in the order they came, into the positions the round
        expects (revision 4). Refused as a whole if the round takes fewer, or if cards that
        may have left the shoe unseen before them are still to be entered."""
        held = pause.held
        if not held:
            raise TransitionError("no card was drawn out of turn: nothing to accept")
        if any(card is None for card in held):
            raise TransitionError("a card held was not read: burn the cards held instead")
        if pause.unread is not None:
            raise TransitionError("enter the unread card first")
        if pause.offline_gap and pause.gap_before_held:
            raise TransitionError(
                "cards may have left the shoe unseen before those held: enter_card each "
                "of them first, or confirm none did (no_cards_drawn)"
            )
        if pause.resume_to is not P.DEALING:
            raise TransitionError("the round expects no card now: burn it instead")
        answer = self._answer(event, True, f"accepted {len(held)} card(s)")
        resumed = self._resumed(state, event, pause, "accept")
        state.pause = None
        state.phase = P.DEALING
        effects: list[Effect] = []
        for number, card in enumerate(held):
            if state.phase is not P.DEALING:
                raise TransitionError(
                    f"the round took {number} of the {len(held)} cards held: burn them instead"
                )
            if number in pause.uncounted:  # another card of that face, not the late frame
                self._count_accepted(state, card)  # type: ignore[arg-type]
            effects += self._deal(state, card, event.at, "supervisor")  # type: ignore[arg-type]
        if pause.offline_gap and state.phase is P.DEALING:
            # Held cards that came before the gap: dealt; the gap's cards are still to come.
            effects += self._pause(
                state,
                pause.reason,
                event.at,
                "cards accepted; confirm no other card left the shoe",
                by=pause.by,
                offline_gap=True,
            )
            return [answer, *effects]
        return [answer, resumed, *effects]

    @staticmethod
    def _resumed(
        state: TableState, event: SupervisorCommanded, pause: Pause, resolution: str
    ) -> PublishEvent:
        return PublishEvent(
            "table_resumed",
            {
                "by": event.by,
                "reason": pause.reason.value,
                "resolution": resolution,
                "round_id": state.round_id,
                "shoe_id": state.shoe_id,
            },
        )

    def _count_accepted(self, state: TableState, card: Card) -> None:
        """Count a held card that has the face of one entered by hand (not counted when it
        came: it may be that card's late frame); a ninth copy says it is."""
        try:
            self._count(state, card)
        except RulesError as error:
            raise TransitionError(
                f"cannot accept it: {NINTH_COPY}, so it is the late frame of the card "
                "entered by hand: burn it"
            ) from error

    def _count_entered(self, state: TableState, card: Card) -> None:
        try:
            self._count(state, card)
        except RulesError as error:
            raise TransitionError(f"cannot enter that card: {NINTH_COPY}") from error

    def _resume_into(self, state: TableState, phase: Phase, at: float) -> list[Effect]:
        if phase is P.READING:
            # The camera's answer may have been lost with the pause: ask again.
            return self._enter_reading_again(state, at)
        if phase in (P.DEALING, P.DECIDING):
            return self._advance(state, at)
        return self._enter(state, phase, at)

    def _enter_reading_again(self, state: TableState, at: float) -> list[Effect]:
        if self._reading_hole(state):
            return self._advance(state, at)
        step = state.round.next_step()  # type: ignore[union-attr]
        assert isinstance(step, CardNeeded)
        state.reading = step.position
        return self._enter(state, P.READING, at)

    # -- for tests, replay checks and the journal CLI -----------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The whole state, secrets included, as JSON-ready data: equal snapshots mean
        equal states (see :func:`controller.table.views.snapshot`)."""
        return views.snapshot(self.state)

    def round_in_progress(self) -> int | None:
        """The id of the round being played (betting to result, paused included)."""
        state = self.state
        phase = state.pause.resume_to if state.pause is not None else state.phase
        return state.round_id if phase in ROUND_PHASES else None


def mermaid_diagram() -> str:
    """The state diagram of :data:`TRANSITIONS` in Mermaid syntax (``docs/table.md``)."""
    lines = ["stateDiagram-v2", f"    [*] --> {Phase.AWAITING_SHUFFLE.name}"]
    edges: dict[tuple[str, str], list[str]] = {}
    for phase, row in TRANSITIONS.items():
        for kind, transition in row.items():
            for target in sorted(transition.targets, key=lambda p: p.name):
                if target is phase or (phase is P.PAUSED and kind == "command.resume"):
                    continue
                edges.setdefault((phase.name, target.name), []).append(kind)
    for (source, target), kinds in sorted(edges.items()):
        lines.append(f"    {source} --> {target}: {', '.join(sorted(set(kinds)))}")
    lines.append("    note right of PAUSED: command.resume returns to the phase that was paused")
    return "\n".join(lines)
