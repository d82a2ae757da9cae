"""The table's state machine: :class:`TableMachine` takes an event and returns effects.

:meth:`TableMachine.handle` takes one event (time inside it) and returns the effects for the
daemon to carry out. It does no I/O, reads no clock and draws no random number, so replaying
the journal rebuilds the identical state. It never raises on an event that comes at the wrong
time or carries nonsense: it answers with an error effect (``CommandAnswered`` with
``ok=False`` or ``EventRejected``) and leaves the state exactly as it was, or, for an anomaly
at the shoe, pauses the table with a reason code and a plain message.

The machine is the dispatcher and nothing else: it looks every event up in the transition
table (``transitions.py``), calls the handler that the table gives on a copy of its state
with the machine's :class:`~controller.table.state.Context` (its config and revision), and
keeps the copy only if the handler did not refuse and went where the table says it may. The
words the state is made of are in ``state.py``; what the machine shows of its state (the
public state, the snapshot) is in ``views.py``. The rules are never copied here: every round
is a live round of the rules engine (``controller/games``).
"""

from __future__ import annotations

import logging
from typing import Any

from controller.kernel.cards import Card
from controller.kernel.errors import JournalError, TableError
from controller.table import commands, dealing, resuming, views
from controller.table.config import OperationalSettings, TableConfig
from controller.table.effects import Answered, Effect, EventRejected, answer
from controller.table.events import (
    CardDrawn,
    RoundRequested,
    SupervisorCommanded,
    check_event,
    event_name,
    is_table_event,
)
from controller.table.state import ROUND_PHASES, Context, Phase, TableState, phase_at_stake
from controller.table.transitions import (
    MACHINE_REVISION,
    SHOE_CARD_KINDS,
    TRANSITIONS,
    NotAccepted,
    event_kind,
    mermaid_diagram,
    transition_for,
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
        self.context = Context(
            config,
            revision,
            dismissible_unread=("unread", "no_cards_drawn") in resuming.DISMISSIBLE[revision],
        )
        self.state = TableState(settings=settings or config.operational())

    @property
    def config(self) -> TableConfig:
        return self.context.config

    @property
    def revision(self) -> int:
        """The machine revision the journal was written under: how it reads events."""
        return self.context.revision

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
        state, ctx = self.state, self.context
        kind = event_kind(state, event)
        if isinstance(event, SupervisorCommanded | RoundRequested):
            refused = commands.check(event, kind)
            if refused is not None:
                return [refused]
        try:
            transition = transition_for(state.phase, kind)
        except NotAccepted:
            return [commands.refusal(state, event, kind)]
        new = state.copy()
        name = transition.handler.__name__
        try:
            effects = transition.handler(ctx, new, event)
            if ctx.revision >= 3 and kind in SHOE_CARD_KINDS:
                # The shoe announced a card: a gap it had to show for the cards entered by
                # hand came before it (the numbering shows a gap with the next frame). If it
                # has the face of one of them it may be that card's late frame (held): the
                # frames of the cards entered after it may still come, late too.
                new.unannounced_entered = _still_unannounced(state.unannounced_entered, event)
                new.unannounced_gaps = 0
            if new.phase not in transition.targets:  # a bug in a handler, not in the input
                raise AssertionError(
                    f"{name} led {state.phase.name} to {new.phase.name}, "
                    f"which the transition table does not list"
                )
        except TableError as error:
            # The handler refused; nothing it did counts. The live round (shared with the
            # copy) may have taken a card or a decision before the refusal: rebuild it from
            # the unchanged log.
            self._restore_round(state)
            if isinstance(event, Answered):
                return [answer(event, False, str(error))]
            return [EventRejected(event_name(event), str(error))]
        except Exception as error:
            # A bug in a handler. The event is already journaled, so raising would crash the
            # daemon again at every replay: refuse it, keep the state, and say so loudly
            # (the property tests fail on any "internal error" refusal).
            self._restore_round(state)
            logger.error(
                "internal error: %s in %s for a %s event",
                type(error).__name__,
                name,
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
            state.round = dealing.rebuild_round(self.context, state)

    def public_state(self, state: TableState | None = None) -> dict[str, Any]:
        """The table as the platform and the supervisors may see it (what
        :func:`controller.table.views.published` publishes); ``state`` defaults to the
        machine's."""
        shown = self.state if state is None else state
        return views.published(self.context, shown).state

    def snapshot(self) -> dict[str, Any]:
        """The whole state, secrets included, as JSON-ready data: equal snapshots mean
        equal states (see :func:`controller.table.views.snapshot`)."""
        return views.snapshot(self.state)

    def round_in_progress(self) -> int | None:
        """The id of the round being played (betting to result, paused included)."""
        state = self.state
        return state.round_id if phase_at_stake(state) in ROUND_PHASES else None
