"""The resume rules: what each resolution a supervisor gives does to a pause.

``resume`` takes a resolution (``accept``, ``burn``, ``enter_card`` with the card,
``no_cards_drawn`` or nothing) and returns the table to the phase it paused once nothing is
left to resolve. The ``on_*`` function is the handler that
:data:`~controller.table.transitions.TRANSITIONS` names; how the table pauses, and what a
pause needs, is in ``pausing.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from controller.games.base import CardNeeded
from controller.kernel.cards import Card
from controller.kernel.errors import RulesError, TransitionError
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
from controller.table.transitions import RESUMES, Resume, pause_kind

if TYPE_CHECKING:
    from controller.table.machine import TableMachine

P = Phase


def on_resume(machine: TableMachine, state: TableState, event: SupervisorCommanded) -> list[Effect]:
    """A supervisor's ``resume``: the resume table's cell for this pause and resolution,
    carried out by its function (below)."""
    pause = state.pause
    assert pause is not None
    resolution = str(event.resolution)
    if resolution not in RESOLUTIONS:
        raise TransitionError(
            f"unknown resolution {resolution!r}: expected {', '.join(r for r in RESOLUTIONS if r)}"
        )
    if not state.shoe_online:
        raise TransitionError("the shoe is offline: bring it back before resuming")
    resume = RESUMES[machine.revision][pause_kind(pause), resolution]
    if resume.handler is None:
        raise TransitionError(resume.refusal)
    if not resolution:
        # A plain resume lifts the supervisors' pauses too (it is refused, and lifts
        # nothing, while anything else is still needed). A resolution alone resolves an
        # anomaly, within the supervisors' pauses, which hold.
        state.holds = ()
    handler: Resolution = _HANDLERS[resume.handler]
    effects = handler(machine, state, event, pause, resume)
    if state.phase not in resume.leads_to(pause.resume_to):  # a bug here, not in the input
        raise AssertionError(
            f"{resume.handler} led a pause of {pause.resume_to.name} to {state.phase.name}, "
            "which the resume table does not list"
        )
    if state.holds and state.phase is not P.PAUSED:
        effects += pausing.hold(machine, state, pause.since)
    return effects


def still_held(state: TableState) -> str:
    """What the answer to a resolution given within supervisors' pauses adds."""
    return f"the table stays paused by {pausing.held_by(state.holds)} (resume to lift it)"


def _resumed(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resolution: str,
    done: str | None = None,
) -> list[Effect]:
    """The answer to a resolution that leaves nothing of the pause it resolved, and the
    ``table_resumed`` event, unless a supervisor's pause still holds the table."""
    if state.holds:
        what = done or f"{resolution} done"
        return [machine._answer(event, True, f"{what}; {still_held(state)}")]
    said = done or f"resumed ({resolution or 'nothing to resolve'})"
    return [machine._answer(event, True, said), resumed_event(state, event, pause, resolution)]


# -- the resolutions the resume table names -------------------------------------------------
# Each takes (machine, state, event, pause, resume) and returns the effects; a
# TransitionError refuses the resolution and changes nothing.


def resume_as_paused(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """No resolution: back to the phase paused, if the pause needs nothing."""
    return _applied(machine, state, event, pause, resume, "", [])


def burn_held(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The cards held (counted when they came) are set aside."""
    if not pause.held:
        raise TransitionError("no card was drawn out of turn: nothing to burn")
    burned = PublishEvent("cards_burned", {"count": len(pause.held)})
    return _applied(machine, state, event, pause, resume, "burn", [burned], held=())


def confirm_no_cards(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The supervisor confirms that no card left the shoe unseen."""
    if not pause.offline_gap:
        raise TransitionError("the shoe was not offline while cards were due")
    return _applied(machine, state, event, pause, resume, "no_cards_drawn", [], offline_gap=False)


def dismiss_unread(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """No card left the shoe: the frame the scanner could not read was none (the
    supervisor sees no card on the felt). Nothing is counted, nothing dealt; the round
    waits for its card from the shoe again (the camera is not asked again: there is
    nothing for it to see). In a pause that also asks to confirm that no card left while
    the shoe was offline, the same words confirm that, first (``confirm_no_cards``); the
    unread card is then entered or dismissed. The hole card is on the felt, face down: it
    is entered."""
    if pause.offline_gap:
        return confirm_no_cards(machine, state, event, pause, resume)
    if pause.unread is None:
        raise TransitionError("no card is waiting to be entered by hand")
    if pause.unread == HOLE_UNREAD:
        raise TransitionError("the hole card is on the felt, face down: enter_card it")
    dismissed = replace(pause, unread=None)
    if pause.resume_to is P.READING:
        state.reading = None
        dismissed = replace(dismissed, resume_to=P.DEALING)
    return _applied(machine, state, event, dismissed, resume, "no_cards_drawn", [])


def accept_one(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The one card held, read, is dealt where the round expects a card (revisions 1 to 3)."""
    held = pause.held
    if len(held) != 1 or held[0] is None:
        raise TransitionError("accept takes exactly one card that was read")
    if pause.unread is not None:
        raise TransitionError("enter the unread card first")
    if pause.resume_to is not P.DEALING:
        raise TransitionError("the round expects no card now: burn it instead")
    card = held[0]
    if pause.uncounted:  # another card of that face, not the late frame
        count_accepted(state, card)
    _nothing_left(pause, (), None, pause.offline_gap)
    return _dealt(machine, state, event, pause, "accept", card, entered=False)


def enter_unread(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The card that left the shoe unread, from the felt (or the hole card, read privately):
    it goes where the round expected it, or for the revealed burn card, starts the burn."""
    if event.card is None:
        raise TransitionError("enter_card needs the card")
    _nothing_left(pause, pause.held, None, pause.offline_gap)
    return _dealt(machine, state, event, pause, "enter_card", event.card, entered=True)


def enter_idle_card(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The card the shoe never announced while the dealer seemed idle, from the felt: dealt
    like any card entered by hand, and remembered so that the gap it left in the shoe's
    numbering is not a new pause."""
    if event.card is None:
        raise TransitionError("enter_card needs the card")
    state.unannounced_entered += (event.card,)
    _nothing_left(pause, pause.held, None, pause.offline_gap)
    return _dealt(machine, state, event, pause, "enter_card", event.card, entered=True)


def _applied(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
    resolution: str,
    effects: list[Effect],
    held: tuple[Card | None, ...] | None = None,
    offline_gap: bool | None = None,
) -> list[Effect]:
    """A resolution that deals no card is applied: back to the phase paused if nothing is
    left to resolve, else the table stays paused (``one_of_several``) or it is refused."""
    held = pause.held if held is None else held
    offline_gap = pause.offline_gap if offline_gap is None else offline_gap
    rest = _still_needed(
        machine, state, event, pause, resume, resolution, effects, held, offline_gap
    )
    if rest is not None:
        return rest
    state.pause = None
    said = _resumed(machine, state, event, pause, resolution)
    effects += resume_into(machine, state, pause.resume_to, event.at)
    return [*said, *effects]


def _still_needed(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
    resolution: str,
    effects: list[Effect],
    held: tuple[Card | None, ...],
    offline_gap: bool,
) -> list[Effect] | None:
    """None if a resolution that deals no card leaves the pause needing nothing (``held``,
    ``offline_gap``: what is left of it). Else, if the cell allows it, one resolution of
    several, applied with the table staying paused (each alone would otherwise be refused
    for the other); else refused with what is still needed."""
    progressed = held != pause.held or offline_gap != pause.offline_gap
    needs = held or pause.unread is not None or offline_gap
    if needs and resume.one_of_several and progressed:
        uncounted = pause.uncounted if held else ()
        state.pause = replace(pause, held=held, offline_gap=offline_gap, uncounted=uncounted)
        rest = "; ".join(state.pause.needs())
        answer = machine._answer(event, True, f"{resolution} done; still needed: {rest}")
        return [answer, *effects, machine._publish(state)]
    _nothing_left(pause, held, pause.unread, offline_gap)
    return None


def _nothing_left(
    pause: Pause, held: tuple[Card | None, ...], unread: str | None, offline_gap: bool
) -> None:
    """Refuse a resolution that leaves the pause needing more (what is left of it:
    ``held``, ``unread``, ``offline_gap``)."""
    if held or unread is not None or offline_gap:
        still = Pause(pause.reason, "", pause.resume_to, held, unread, offline_gap=offline_gap)
        raise TransitionError("still needed before resuming: " + "; ".join(still.needs()))


def _dealt(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resolution: str,
    card: Card,
    entered: bool,
) -> list[Effect]:
    """Resume with ``card`` dealt where the pause left off (``entered``: by hand, counted
    now; a card accepted was counted when it came)."""
    state.pause = None
    said = _resumed(machine, state, event, pause, resolution)
    effects: list[Effect]
    if pause.resume_to is P.BURN_REVEAL:
        count_entered(state, card)
        state.phase = P.BURN_REVEAL
        effects = dealing.reveal_burn_card(machine, state, card, event.at)
    elif pause.unread == HOLE_UNREAD:
        count_entered(state, card)
        effects = dealing.fill_hole(machine, state, card, event.at, "supervisor")
    else:
        if entered:
            count_entered(state, card)
        state.phase = P.DEALING
        effects = dealing.deal(machine, state, card, event.at, "supervisor")
    return [*said, *effects]


def enter_offline_card(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
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
            goes_on = f"; {still_held(state)}" if state.holds else ""
            answer = machine._answer(event, True, f"card entered; the round goes on{goes_on}")
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
    reason, by = (
        pausing.anomaly_of(machine, pause)
        if machine.revision >= 4
        else (PauseReason.SHOE_OFFLINE, event.by)
    )
    effects += pausing.pause(
        machine,
        state,
        reason,
        event.at,
        "cards entered by hand; confirm no other card left the shoe",
        by=by,
        held=pause.held,
        uncounted=pause.uncounted,
        offline_gap=True,
    )
    if pause.held:
        state.pause = replace(state.pause, gap_before_held=True)  # type: ignore[arg-type]
    return [answer, *effects]


def accept_held(
    machine: TableMachine,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
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
    said = _resumed(machine, state, event, pause, "accept", f"accepted {len(held)} card(s)")
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
        reason, by = pausing.anomaly_of(machine, pause)
        effects += pausing.pause(
            machine,
            state,
            reason,
            event.at,
            "cards accepted; confirm no other card left the shoe",
            by=by,
            offline_gap=True,
        )
        return [said[0], *effects]
    return [*said, *effects]


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


Resolution = Callable[
    ["TableMachine", TableState, SupervisorCommanded, Pause, Resume], list[Effect]
]
# The functions the resume table names, by name (a test checks that every cell's is here).
_HANDLERS: Final[dict[str, Resolution]] = {
    handler.__name__: handler
    for handler in (
        resume_as_paused,
        burn_held,
        confirm_no_cards,
        dismiss_unread,
        accept_one,
        accept_held,
        enter_unread,
        enter_idle_card,
        enter_offline_card,
    )
}
