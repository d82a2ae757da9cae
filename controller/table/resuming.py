"""The resume rules: what each resolution a supervisor gives does to a pause.

``resume`` takes a resolution (``accept``, ``burn``, ``enter_card`` with the card,
``no_cards_drawn`` or nothing) and returns the table to the phase it paused once nothing is
left to resolve. The ``on_*`` function is the handler that
:data:`~controller.table.transitions.TRANSITIONS` names; how the table pauses, and what a
pause needs, is in ``pausing.py``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from controller.errors import RulesError, TransitionError
from controller.games.base import CardNeeded
from controller.games.cards import Card
from controller.table import dealing, pausing
from controller.table.effects import Effect, PublishEvent
from controller.table.events import SupervisorCommanded
from controller.table.pausing import NINTH_COPY
from controller.table.state import (
    HOLE_UNREAD,
    RESOLUTIONS,
    Pause,
    PauseReason,
    Phase,
    TableState,
)

if TYPE_CHECKING:
    from controller.table.machine import TableMachine

P = Phase


def on_resume(machine: TableMachine, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    pause = state.pause
    assert pause is not None
    resolution = str(event.resolution)
    if resolution not in RESOLUTIONS:
        raise TransitionError(
            f"unknown resolution {resolution!r}: expected {', '.join(r for r in RESOLUTIONS if r)}"
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
        return enter_offline_card(machine, state, event, pause)
    elif resolution == "enter_card" and pause.idle_gap and unread is None:
        # The card the shoe never announced, from the felt: dealt below like any card
        # entered by hand, and remembered so that the gap it left is not a new pause.
        if event.card is None:
            raise TransitionError("enter_card needs the card")
        dealt_card = event.card
        state.unannounced_entered += (event.card,)
    elif resolution == "accept" and machine.revision >= 4:
        return accept_held(machine, state, event, pause)
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
            count_accepted(state, dealt_card)
    elif resolution == "enter_card":
        if unread is None:
            raise TransitionError("no card is waiting to be entered by hand")
        if event.card is None:
            raise TransitionError("enter_card needs the card")
        dealt_card, unread = event.card, None
    if held or unread is not None or offline_gap:
        progressed = held != pause.held or offline_gap != pause.offline_gap
        if machine.revision >= 3 and progressed and dealt_card is None:
            # One resolution of several: it is applied, and the table stays paused
            # for the rest (each alone would otherwise be refused for the other).
            uncounted = pause.uncounted if held else ()
            state.pause = replace(pause, held=held, offline_gap=offline_gap, uncounted=uncounted)
            rest = "; ".join(state.pause.needs())
            answer = machine._answer(event, True, f"{resolution} done; still needed: {rest}")
            return [answer, *effects, machine._publish(state)]
        still = Pause(pause.reason, "", pause.resume_to, held, unread, offline_gap=offline_gap)
        raise TransitionError("still needed before resuming: " + "; ".join(still.needs()))
    state.pause = None
    resume_to = pause.resume_to
    answer = machine._answer(event, True, f"resumed ({resolution or 'nothing to resolve'})")
    resumed = resumed_event(state, event, pause, resolution)
    if dealt_card is None:
        effects += resume_into(machine, state, resume_to, event.at)
    elif resume_to is P.BURN_REVEAL:
        count_entered(state, dealt_card)
        state.phase = P.BURN_REVEAL
        effects += dealing.reveal_burn_card(machine, state, dealt_card, event.at)
    elif pause.unread == HOLE_UNREAD:
        count_entered(state, dealt_card)
        effects += dealing.fill_hole(machine, state, dealt_card, event.at, "supervisor")
    else:
        if resolution == "enter_card":
            count_entered(state, dealt_card)
        state.phase = P.DEALING
        effects += dealing.deal(machine, state, dealt_card, event.at, "supervisor")
    return [answer, resumed, *effects]


def enter_offline_card(
    machine: TableMachine, state: TableState, event: SupervisorCommanded, pause: Pause
) -> list[Effect]:
    """A card that left the shoe while it was offline, entered by hand: it goes where
    the round expected it, and the table stays paused until the supervisor confirms no
    other card left (or enters the next)."""
    if event.card is None:
        raise TransitionError("enter_card needs the card")
    # Cards held that came before the gap are dealt (or burnt) first; those that came
    # after it (revision 4) wait for the gap's cards, entered here.
    held_after = machine.revision >= 4 and pause.gap_before_held
    if pause.held and not held_after:
        raise TransitionError("accept or burn the cards drawn out of turn first")
    if pause.resume_to is not P.DEALING:
        raise TransitionError("no round card was due: confirm with no_cards_drawn, or end the shoe")
    count_entered(state, event.card)
    if machine.revision >= 3:
        state.unannounced_entered += (event.card,)
    state.pause = None
    state.phase = P.DEALING
    effects = dealing.deal(machine, state, event.card, event.at, "supervisor")
    answer = machine._answer(event, True, "card entered; the table stays paused")
    if state.phase is not P.DEALING:
        # The card finished the round or asks for a decision: nothing more can be due;
        # cards held after it came out of turn.
        if not pause.held and state.phase is not P.PAUSED:
            answer = machine._answer(event, True, "card entered; the round goes on")
        if pause.held:
            effects += pausing.pause(
                machine,
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
    reason = pause.reason if machine.revision >= 4 else PauseReason.SHOE_OFFLINE
    effects += pausing.pause(
        machine,
        state,
        reason,
        event.at,
        "cards entered by hand; confirm no other card left the shoe",
        by=pause.by if machine.revision >= 4 else event.by,
        held=pause.held,
        uncounted=pause.uncounted,
        offline_gap=True,
    )
    if pause.held:
        state.pause = replace(state.pause, gap_before_held=True)  # type: ignore[arg-type]
    return [answer, *effects]


def accept_held(
    machine: TableMachine, state: TableState, event: SupervisorCommanded, pause: Pause
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
    answer = machine._answer(event, True, f"accepted {len(held)} card(s)")
    resumed = resumed_event(state, event, pause, "accept")
    state.pause = None
    state.phase = P.DEALING
    effects: list[Effect] = []
    for number, card in enumerate(held):
        if state.phase is not P.DEALING:
            raise TransitionError(
                f"the round took {number} of the {len(held)} cards held: burn them instead"
            )
        if number in pause.uncounted:  # another card of that face, not the late frame
            count_accepted(state, card)  # type: ignore[arg-type]
        effects += dealing.deal(machine, state, card, event.at, "supervisor")  # type: ignore[arg-type]
    if pause.offline_gap and state.phase is P.DEALING:
        # Held cards that came before the gap: dealt; the gap's cards are still to come.
        effects += pausing.pause(
            machine,
            state,
            pause.reason,
            event.at,
            "cards accepted; confirm no other card left the shoe",
            by=pause.by,
            offline_gap=True,
        )
        return [answer, *effects]
    return [answer, resumed, *effects]


def resumed_event(
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


def count_accepted(state: TableState, card: Card) -> None:
    """Count a held card that has the face of one entered by hand (not counted when it
    came: it may be that card's late frame); a ninth copy says it is."""
    try:
        dealing.count_out(state, card)
    except RulesError as error:
        raise TransitionError(
            f"cannot accept it: {NINTH_COPY}, so it is the late frame of the card "
            "entered by hand: burn it"
        ) from error


def count_entered(state: TableState, card: Card) -> None:
    try:
        dealing.count_out(state, card)
    except RulesError as error:
        raise TransitionError(f"cannot enter that card: {NINTH_COPY}") from error


def resume_into(machine: TableMachine, state: TableState, phase: Phase, at: float) -> list[Effect]:
    if phase is P.READING:
        # The camera's answer may have been lost with the pause: ask again.
        return enter_reading_again(machine, state, at)
    if phase in (P.DEALING, P.DECIDING):
        return dealing.advance(machine, state, at)
    return dealing.enter(machine, state, phase, at)


def enter_reading_again(machine: TableMachine, state: TableState, at: float) -> list[Effect]:
    if dealing.reading_hole(state):
        return dealing.advance(machine, state, at)
    step = state.round.next_step()  # type: ignore[union-attr]
    assert isinstance(step, CardNeeded)
    state.reading = step.position
    return dealing.enter(machine, state, P.READING, at)
