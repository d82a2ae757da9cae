"""The resume rules: what each resolution a supervisor gives does to a pause, and the
resume table that says which does what.

``resume`` takes a resolution (``accept``, ``burn``, ``enter_card`` with the card,
``no_cards_drawn`` or nothing) and returns the table to the phase it paused once nothing is
left to resolve. :func:`on_resume` is the handler that
:data:`~controller.table.transitions.TRANSITIONS` names for it: it looks the pause's kind
(:func:`pause_kind`) and the resolution up in :data:`RESUMES`, the second table, whose cells
are the functions below (or a refusal) and the phases each may lead to. ``docs/table.md``
prints that table (:func:`resume_table`; a test checks they agree). How the table pauses,
and what a pause needs, is in ``pausing.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final

from controller.games.base import CardNeeded
from controller.kernel.cards import Card
from controller.kernel.errors import RulesError, TransitionError
from controller.kernel.vocabulary import ACCEPTED, ANSWERS, CARD_ENTERED, RESOLVED, STILL_HELD
from controller.table import dealing, pausing
from controller.table.effects import Effect, PublishEvent, answer
from controller.table.events import SupervisorCommanded
from controller.table.state import (
    AFTER_ROUND,
    HOLE_UNREAD,
    ONWARDS,
    RESOLUTIONS,
    Context,
    Pause,
    PauseReason,
    Phase,
    TableState,
)
from controller.table.views import published

P = Phase


def on_resume(ctx: Context, state: TableState, event: SupervisorCommanded) -> list[Effect]:
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
        raise TransitionError(ANSWERS["shoe_offline_resume"])
    resume = RESUMES[ctx.revision][pause_kind(pause), resolution]
    if resume.handler is None:
        raise TransitionError(resume.refusal)
    if not resolution:
        # A plain resume lifts the supervisors' pauses too (it is refused, and lifts
        # nothing, while anything else is still needed). A resolution alone resolves an
        # anomaly, within the supervisors' pauses, which hold.
        state.holds = ()
    effects = resume.handler(ctx, state, event, pause, resume)
    if state.phase not in resume.leads_to(pause.resume_to):  # a bug here, not in the input
        raise AssertionError(
            f"{resume.handler.__name__} led a pause of {pause.resume_to.name} to "
            f"{state.phase.name}, which the resume table does not list"
        )
    if state.holds and state.phase is not P.PAUSED:
        effects += pausing.hold(ctx, state, pause.since)
    return effects


def still_held(state: TableState) -> str:
    """What the answer to a resolution given within supervisors' pauses adds."""
    return STILL_HELD.format(by=pausing.held_by(state.holds))


def _resumed(
    ctx: Context,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resolution: str,
    done: str | None = None,
) -> list[Effect]:
    """The answer to a resolution that leaves nothing of the pause it resolved, and the
    ``table_resumed`` event, unless a supervisor's pause still holds the table."""
    if state.holds:
        what = done or RESOLVED.format(resolution=resolution)
        return [answer(event, True, f"{what}; {still_held(state)}")]
    said = done or (
        ANSWERS["resumed"].format(resolution=resolution) if resolution else ANSWERS["resumed_plain"]
    )
    return [answer(event, True, said), resumed_event(state, event, pause, resolution)]


# -- the resolutions the resume table names -------------------------------------------------
# Each takes (ctx, state, event, pause, resume) and returns the effects; a
# TransitionError refuses the resolution and changes nothing.


def resume_as_paused(
    ctx: Context,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """No resolution: back to the phase paused, if the pause needs nothing."""
    return _applied(ctx, state, event, pause, resume, "", [])


def burn_held(
    ctx: Context,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The cards held (counted when they came) are set aside."""
    if not pause.held:
        raise TransitionError(ANSWERS["nothing_to_burn"])
    burned = PublishEvent("cards_burned", {"count": len(pause.held)})
    return _applied(ctx, state, event, pause, resume, "burn", [burned], held=())


def confirm_no_cards(
    ctx: Context,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The supervisor confirms that no card left the shoe unseen."""
    if not pause.offline_gap:
        raise TransitionError("the shoe was not offline while cards were due")
    return _applied(ctx, state, event, pause, resume, "no_cards_drawn", [], offline_gap=False)


def dismiss_unread(
    ctx: Context,
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
        return confirm_no_cards(ctx, state, event, pause, resume)
    if pause.unread is None:
        raise TransitionError(ANSWERS["no_card_to_enter"])
    if pause.unread == HOLE_UNREAD:
        raise TransitionError(ANSWERS["hole_on_felt"])
    dismissed = replace(pause, unread=None)
    if pause.resume_to is P.READING:
        state.reading = None
        dismissed = replace(dismissed, resume_to=P.DEALING)
    return _applied(ctx, state, event, dismissed, resume, "no_cards_drawn", [])


def accept_one(
    ctx: Context,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The one card held, read, is dealt where the round expects a card (revisions 1 to 3)."""
    held = pause.held
    if len(held) != 1 or held[0] is None:
        raise TransitionError(ANSWERS["one_read_card"])
    if pause.unread is not None:
        raise TransitionError(ANSWERS["unread_first"])
    if pause.resume_to is not P.DEALING:
        raise TransitionError(ANSWERS["no_card_expected"])
    card = held[0]
    if pause.uncounted:  # another card of that face, not the late frame
        count_accepted(state, card)
    _nothing_left(pause, (), None, pause.offline_gap)
    return _dealt(ctx, state, event, pause, "accept", card, entered=False)


def enter_unread(
    ctx: Context,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The card that left the shoe unread, from the felt (or the hole card, read privately):
    it goes where the round expected it, or for the revealed burn card, starts the burn."""
    if event.card is None:
        raise TransitionError(ANSWERS["card_needed"])
    _nothing_left(pause, pause.held, None, pause.offline_gap)
    return _dealt(ctx, state, event, pause, "enter_card", event.card, entered=True)


def enter_idle_card(
    ctx: Context,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """The card the shoe never announced while the dealer seemed idle, from the felt: dealt
    like any card entered by hand, and remembered so that the gap it left in the shoe's
    numbering is not a new pause."""
    if event.card is None:
        raise TransitionError(ANSWERS["card_needed"])
    state.unannounced_entered += (event.card,)
    _nothing_left(pause, pause.held, None, pause.offline_gap)
    return _dealt(ctx, state, event, pause, "enter_card", event.card, entered=True)


def _applied(
    ctx: Context,
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
    rest = _still_needed(ctx, state, event, pause, resume, resolution, effects, held, offline_gap)
    if rest is not None:
        return rest
    state.pause = None
    said = _resumed(ctx, state, event, pause, resolution)
    effects += resume_into(ctx, state, pause.resume_to, event.at)
    return [*said, *effects]


def _still_needed(
    ctx: Context,
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
        done = RESOLVED.format(resolution=resolution)
        said = answer(event, True, f"{done}; still needed: {rest}")
        return [said, *effects, published(ctx, state)]
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
    ctx: Context,
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
    said = _resumed(ctx, state, event, pause, resolution)
    effects: list[Effect]
    if pause.resume_to is P.BURN_REVEAL:
        count_entered(state, card)
        state.phase = P.BURN_REVEAL
        effects = dealing.reveal_burn_card(ctx, state, card, event.at)
    elif pause.unread == HOLE_UNREAD:
        count_entered(state, card)
        effects = dealing.fill_hole(ctx, state, card, event.at, "supervisor")
    else:
        if entered:
            count_entered(state, card)
        state.phase = P.DEALING
        effects = dealing.deal(ctx, state, card, event.at, "supervisor")
    return [*said, *effects]


def enter_offline_card(
    ctx: Context,
    state: TableState,
    event: SupervisorCommanded,
    pause: Pause,
    resume: Resume,
) -> list[Effect]:
    """A card that left the shoe while it was offline, entered by hand: it goes where
    the round expected it, and the table stays paused until the supervisor confirms no
    other card left (or enters the next)."""
    if event.card is None:
        raise TransitionError(ANSWERS["card_needed"])
    # Cards held that came before the gap are dealt (or burnt) first; those that came
    # after it (revision 4) wait for the gap's cards, entered here.
    held_after = ctx.revision >= 4 and pause.gap_before_held
    if pause.held and not held_after:
        raise TransitionError(ANSWERS["held_first"])
    if pause.resume_to is not P.DEALING:
        raise TransitionError(ANSWERS["no_round_card_due"])
    count_entered(state, event.card)
    if ctx.revision >= 3:
        state.unannounced_entered += (event.card,)
    state.pause = None
    state.phase = P.DEALING
    effects = dealing.deal(ctx, state, event.card, event.at, "supervisor")
    said = answer(event, True, ANSWERS["card_entered_paused"])
    if state.phase is not P.DEALING:
        # The card finished the round or asks for a decision: nothing more can be due;
        # cards held after it came out of turn.
        if not pause.held and state.phase is not P.PAUSED:
            goes_on = f"; {still_held(state)}" if state.holds else ""
            said = answer(event, True, f"{CARD_ENTERED}{goes_on}")
        if pause.held:
            effects += pausing.pause(
                ctx,
                state,
                PauseReason.CARD_OUT_OF_TURN,
                event.at,
                "after the cards entered by hand",
                held=pause.held,
                uncounted=pause.uncounted,
            )
        return [said, *effects]
    # Revision 4: the pause stays the table's (its reason and who made it, if anyone);
    # the supervisor who entered the card did not pause the table.
    reason, by = (
        pausing.anomaly_of(ctx, pause)
        if ctx.revision >= 4
        else (PauseReason.SHOE_OFFLINE, event.by)
    )
    effects += pausing.pause(
        ctx,
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
    return [said, *effects]


def accept_held(
    ctx: Context,
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
        raise TransitionError(ANSWERS["nothing_to_accept"])
    if any(card is None for card in held):
        raise TransitionError(ANSWERS["held_unread"])
    if pause.unread is not None:
        raise TransitionError(ANSWERS["unread_first"])
    if pause.offline_gap and pause.gap_before_held:
        raise TransitionError(ANSWERS["gap_before_held"])
    if pause.resume_to is not P.DEALING:
        raise TransitionError(ANSWERS["no_card_expected"])
    said = _resumed(ctx, state, event, pause, "accept", ACCEPTED.format(count=len(held)))
    state.pause = None
    state.phase = P.DEALING
    effects: list[Effect] = []
    for number, card in enumerate(held):
        if state.phase is not P.DEALING:
            raise TransitionError(ANSWERS["took_fewer"].format(taken=number, count=len(held)))
        if number in pause.uncounted:  # another card of that face, not the late frame
            count_accepted(state, card)  # type: ignore[arg-type]
        effects += dealing.deal(ctx, state, card, event.at, "supervisor")  # type: ignore[arg-type]
    if pause.offline_gap and state.phase is P.DEALING:
        # Held cards that came before the gap: dealt; the gap's cards are still to come.
        reason, by = pausing.anomaly_of(ctx, pause)
        effects += pausing.pause(
            ctx,
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
        raise TransitionError(ANSWERS["late_frame"]) from error


def count_entered(state: TableState, card: Card) -> None:
    try:
        dealing.count_out(state, card)
    except RulesError as error:
        raise TransitionError(ANSWERS["ninth_copy"]) from error


def resume_into(ctx: Context, state: TableState, phase: Phase, at: float) -> list[Effect]:
    if phase is P.READING:
        # The camera's answer may have been lost with the pause: ask again.
        return enter_reading_again(ctx, state, at)
    if phase in (P.DEALING, P.DECIDING):
        return dealing.advance(ctx, state, at)
    return dealing.enter(ctx, state, phase, at)


def enter_reading_again(ctx: Context, state: TableState, at: float) -> list[Effect]:
    if dealing.reading_hole(state):
        return dealing.advance(ctx, state, at)
    step = state.round.next_step()  # type: ignore[union-attr]
    assert isinstance(step, CardNeeded)
    state.reading = step.position
    return dealing.enter(ctx, state, P.READING, at)


Resolution = Callable[[Context, TableState, SupervisorCommanded, Pause, "Resume"], list[Effect]]
"""A resolution's function: a TransitionError refuses it and changes nothing."""


# -- the resume table ----------------------------------------------------------------------
#
# A supervisor's ``resume`` names a resolution; what it does depends on what the pause is
# waiting for (its kind, :func:`pause_kind`) and on the revision the journal was written
# under. RESUMES[revision][(pause kind, resolution)] is the function above that carries it
# out (whose own checks may still refuse it: nothing held to burn, no card given) or the
# refusal, and the phases it may lead to.

PAUSE_KINDS: Final[dict[str, str]] = {
    "shoe_empty": "the round needs a card and every card of the shoe is out "
    "(`Pause.shoe_empty`, revision 5)",
    "unread": "a card left the shoe unread and its place is known (`Pause.unread`)",
    "shoe_gap": "none unread, but cards may have left the shoe unseen while it was offline "
    "or the table was down (`Pause.offline_gap`)",
    "idle_gap": "none of those, but the dealer idle deadline passed while a round card was "
    "due: its frame may be lost (`Pause.idle_gap`)",
    "other": "nothing to enter: cards held, or nothing at all",
}


def pause_kind(pause: Pause) -> str:
    """The kind under which :data:`RESUMES` files ``pause`` (the first that fits)."""
    if pause.shoe_empty:
        return "shoe_empty"
    if pause.unread is not None:
        return "unread"
    if pause.offline_gap:
        return "shoe_gap"
    if pause.idle_gap:
        return "idle_gap"
    return "other"


@dataclass(frozen=True, slots=True)
class Resume:
    """One cell of the resume table.

    ``handler``: the function (above) that carries the resolution out, or None:
    refused with ``refusal``. ``targets``: the phases it may lead to, besides, if
    ``returns``, the phase paused and wherever that phase goes on to (:data:`RETURNS`).
    ``one_of_several``: a resolution that leaves the pause needing more is applied alone and
    the table stays paused (else it is refused until the resolutions come together)."""

    handler: Resolution | None
    targets: frozenset[Phase] = frozenset()
    returns: bool = False
    one_of_several: bool = False
    refusal: str = ""

    def leads_to(self, paused: Phase) -> frozenset[Phase]:
        """Every phase this resolution may lead to from a pause of the phase ``paused``."""
        return self.targets | RETURNS[paused] if self.returns else self.targets


# Where the table goes when it returns to the phase it paused: that phase, or for a round
# waiting for a card, a decision or the camera, wherever the round goes next (a misread hole
# card the rules now need pauses it again).
RETURNS: Final[dict[Phase, frozenset[Phase]]] = {
    phase: frozenset((*ONWARDS, P.PAUSED))
    if phase in (P.DEALING, P.DECIDING, P.READING)
    else frozenset({phase})
    for phase in Phase
    if phase is not P.PAUSED
}


def _r(handler: Resolution, *targets: Phase, returns: bool = False) -> Resume:
    return Resume(handler, frozenset(targets), returns)


def _refused(message: str) -> Resume:
    return Resume(None, refusal=message)


_NOTHING: Final = _r(resume_as_paused, returns=True)
_BURN: Final = _r(burn_held, returns=True)
_CONFIRM: Final = _r(confirm_no_cards, returns=True)
_ACCEPT_ONE: Final = _r(accept_one, *ONWARDS, P.PAUSED)
# A card entered by hand goes where the round expects it (for a misread burn card: the
# burn), and the round goes on.
_ENTER_UNREAD: Final = _r(enter_unread, P.BURNING, *ONWARDS, P.PAUSED)
_ENTER_IDLE: Final = _r(enter_idle_card, *ONWARDS, P.PAUSED)
# The table stays paused for the next card that may have left unseen, unless the card
# ended the round's need for cards.
_ENTER_OFFLINE: Final = _r(enter_offline_card, P.PAUSED, P.DECIDING, P.READING, *AFTER_ROUND)
_NOT_OFFLINE: Final = _refused(ANSWERS["not_offline"])
# The round cannot be completed from this shoe: a supervisor cancels it. (No pause of an
# older revision is of this kind: its rows are the same in every revision.)
_SHOE_EMPTY: Final = _refused(ANSWERS["shoe_empty"])

_RESUMES_1: Final[dict[tuple[str, str], Resume]] = {
    **{("shoe_empty", resolution): _SHOE_EMPTY for resolution in RESOLUTIONS},
    ("unread", ""): _NOTHING,
    ("unread", "accept"): _ACCEPT_ONE,
    ("unread", "burn"): _BURN,
    ("unread", "enter_card"): _ENTER_UNREAD,
    ("unread", "no_cards_drawn"): _CONFIRM,
    ("shoe_gap", ""): _NOTHING,
    ("shoe_gap", "accept"): _ACCEPT_ONE,
    ("shoe_gap", "burn"): _BURN,
    ("shoe_gap", "enter_card"): _ENTER_OFFLINE,
    ("shoe_gap", "no_cards_drawn"): _CONFIRM,
    ("idle_gap", ""): _NOTHING,
    ("idle_gap", "accept"): _ACCEPT_ONE,
    ("idle_gap", "burn"): _BURN,
    ("idle_gap", "enter_card"): _ENTER_IDLE,
    ("idle_gap", "no_cards_drawn"): _NOT_OFFLINE,
    ("other", ""): _NOTHING,
    ("other", "accept"): _ACCEPT_ONE,
    ("other", "burn"): _BURN,
    ("other", "enter_card"): _refused(ANSWERS["no_card_to_enter"]),
    ("other", "no_cards_drawn"): _NOT_OFFLINE,
}
# Revision 3: a burn or a confirmation that leaves the pause needing more is applied alone.
_RESUMES_3: Final = {
    key: replace(resume, one_of_several=True, targets=resume.targets | {P.PAUSED})
    if resume in (_BURN, _CONFIRM)
    else resume
    for key, resume in _RESUMES_1.items()
}
# Revision 4: accept deals every card held, in the order they came.
_RESUMES_4: Final = {
    **_RESUMES_3,
    **{
        (kind, "accept"): _r(accept_held, *ONWARDS, P.PAUSED)
        for kind in PAUSE_KINDS
        if kind != "shoe_empty"
    },
}

# Revision 5: a card the shoe reported unread that no card was (nothing on the felt: a
# glitched or forged frame) is dismissed by ``no_cards_drawn``; the round waits for its card
# again. Before, only a cancel ended such a pause.
# In a pause that also has a shoe outage to confirm, the same words confirm that first, as
# revisions 3 and 4 did (one of several): the unread card is then entered or dismissed.
_DISMISS: Final = Resume(
    dismiss_unread, frozenset({P.DEALING, P.PAUSED}), returns=True, one_of_several=True
)
_RESUMES_5: Final = {**_RESUMES_4, ("unread", "no_cards_drawn"): _DISMISS}

RESUMES: Final[dict[int, dict[tuple[str, str], Resume]]] = {
    1: _RESUMES_1,
    # Revision 2 brought shoe gaps (no_cards_drawn, enter_card for a card the shoe never
    # announced): a revision-1 pause never has one, so its table needs no other row.
    2: _RESUMES_1,
    3: _RESUMES_3,
    4: _RESUMES_4,
    # Revision 5 also dismisses an unread card that was none; a supervisor's pause that
    # outlasts the resolution keeps the table paused (:func:`on_resume`).
    5: _RESUMES_5,
    # Revision 6 brought the dealers on duty and the holds between rounds, and checks a new
    # shoe's first cards for new-deck order: its pause is resolved as any other (resume,
    # cancel, end_shoe).
    6: _RESUMES_5,
}
DISMISSIBLE: Final[dict[int, frozenset[tuple[str, str]]]] = {
    revision: frozenset(key for key, resume in table.items() if resume is _DISMISS)
    for revision, table in RESUMES.items()
}
"""Per revision, the resume table's cells that dismiss an unread card as no card."""
RESUME_TARGETS: Final = frozenset(
    phase
    for table in RESUMES.values()
    for resume in table.values()
    for paused in RETURNS
    for phase in resume.leads_to(paused)
)


def resume_table() -> str:
    """:data:`PAUSE_KINDS` and :data:`RESUMES` as Markdown tables (``docs/table.md``): one
    column per run of machine revisions that read a resume the same way, then where each
    resolution may lead."""
    lines = ["| pause kind | when (the first that fits) |", "|---|---|"]
    lines += [f"| `{kind}` | {when} |" for kind, when in PAUSE_KINDS.items()]
    runs: list[list[int]] = []
    for revision in sorted(RESUMES):
        if runs and RESUMES[runs[-1][-1]] == RESUMES[revision]:
            runs[-1].append(revision)
        else:
            runs.append([revision])
    names = [
        f"revisions {run[0]}–{run[-1]}" if len(run) > 1 else f"revision {run[0]}" for run in runs
    ]
    lines += ["", f"| pause kind | resolution | {' | '.join(names)} |"]
    lines.append("|---|---|" + "---|" * len(runs))
    outcomes: list[Resume] = []
    for kind in PAUSE_KINDS:
        for resolution in RESOLUTIONS:
            cells = []
            for run in runs:
                resume = RESUMES[run[0]][kind, resolution]
                if resume.handler is None:
                    cells.append(f"refused: {resume.refusal}")
                    continue
                if resume not in outcomes:
                    outcomes.append(resume)
                several = " (one of several)" if resume.one_of_several else ""
                cells.append(f"`{resume.handler.__name__}`{several}")
            shown = f"`{resolution}`" if resolution else "(none)"
            lines.append(f"| `{kind}` | {shown} | {' | '.join(cells)} |")
    lines += ["", "| resolution carried out by | one of several | may lead to |", "|---|---|---|"]
    for resume in outcomes:
        leads = sorted(phase.name for phase in resume.targets)
        if resume.returns:
            leads.insert(0, "back")
        several = "yes" if resume.one_of_several else "no"
        lines.append(f"| `{resume.handler.__name__}` | {several} | {', '.join(leads)} |")
    rounds = sorted(phase.name for phase in RETURNS if RETURNS[phase] != {phase})
    onwards = sorted(phase.name for phase in RETURNS[P.DEALING])
    lines += [
        "",
        f"back: the phase paused; from {', '.join(rounds)}, wherever the round goes on to "
        f"({', '.join(onwards)}). One of several: a resolution that leaves the pause needing "
        "more is applied, and the table stays paused for the rest.",
    ]
    return "\n".join(lines)
