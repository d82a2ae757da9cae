"""The pause rules: how the table stops, what a pause holds and what it needs.

Every anomaly becomes a pause (phase ``PAUSED``, a reason code and a plain message, the shoe
locked, the dealer told to stop); :func:`pause` is the one way there, and it decides what
the pause needs before the table can resume (cards held, a card unread, a gap the shoe may
not show). The ``on_*`` functions are the handlers that
:data:`~controller.table.transitions.TRANSITIONS` names for the events that pause the table
or that a pause takes in: functions of the :class:`~controller.table.state.Context`, the
state and the event, returning effects. A supervisor's ``pause`` is in ``commands.py``; how
a supervisor resumes is in ``resuming.py``.
"""

from __future__ import annotations

from controller.kernel.cards import Card
from controller.kernel.errors import RulesError
from controller.kernel.vocabulary import NINTH_COPY
from controller.table.effects import Effect, LockShoe, PublishEvent, TellDealer, UnlockShoe
from controller.table.events import (
    CardDrawn,
    CardMisread,
    CardsLost,
    ControllerStarted,
    CutCardDrawn,
    ShoeFault,
    ShoeOffline,
    TimerExpired,
)
from controller.table.state import (
    ACTIVE_PHASES,
    DRAWING_PHASES,
    PAUSE_MESSAGES,
    Cause,
    Context,
    HoldReason,
    Pause,
    PauseReason,
    Phase,
    TableState,
    count_out,
    phase_at_stake,
)
from controller.table.views import published

P = Phase


def pause(
    ctx: Context,
    state: TableState,
    reason: PauseReason,
    at: float,
    detail: str = "",
    held: tuple[Card | None, ...] = (),
    unread: str | None = None,
    by: str | None = None,
    uncounted: tuple[int, ...] = (),
    offline_gap: bool = False,
    shoe_empty: bool = False,
) -> list[Effect]:
    """Pause (or add ``reason`` to the pause in effect). ``offline_gap``: cards may have
    left the shoe unseen (besides a shoe outage while cards are due, which always is)."""
    previous = state.pause
    resume_to = previous.resume_to if previous is not None else state.phase
    message = PAUSE_MESSAGES[reason] + (f": {detail}" if detail else "")
    since = at
    # A resolution given within a supervisor's pause cleared the pause it resolved: the
    # supervisors' pauses are still in effect, and the table has been paused since then.
    earlier = previous.causes if previous is not None else state.holds
    causes = with_cause(earlier, Cause(reason, message, by, at))
    if previous is None and state.holds:
        since = state.holds[0].since
    offline_gap = offline_gap or (
        ctx.revision >= 2 and reason is PauseReason.SHOE_OFFLINE and resume_to in DRAWING_PHASES
    )
    idle_gap = ctx.revision >= 3 and reason is PauseReason.DEALER_IDLE and resume_to is P.DEALING
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
        shoe_empty = shoe_empty or previous.shoe_empty
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
        causes,
        shoe_empty,
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
    # The dealer hears the reason in plain words, and a person's own words; a device's
    # error text (a serial port's, a shoe's) is for the supervisor and the logs.
    said = message if by is not None else PAUSE_MESSAGES[reason]
    effects.append(TellDealer("stop", f"stop: {said}; call the supervisor"))
    effects.append(published(ctx, state))
    return effects


def unshuffled(ctx: Context, state: TableState, at: float) -> list[Effect]:
    """The pause of a shoe whose first cards ran in new-deck order, once the shuffle check
    alarmed (:mod:`controller.games.shuffle_check`); nothing otherwise. A supervisor who
    sees the shoe was shuffled resumes (the check is over for this shoe); else cancels the
    round and ends the shoe."""
    if not state.shuffle_alarm:
        return []
    state.shuffle_alarm = False
    return pause(
        ctx,
        state,
        PauseReason.UNSHUFFLED_SHOE,
        at,
        "resume if it was shuffled; else cancel the round and end the shoe",
    )


def with_cause(causes: tuple[Cause, ...], cause: Cause) -> tuple[Cause, ...]:
    """``causes`` with ``cause`` last. The same reason from the same source again (a second
    card out of turn, a supervisor pausing again) is one pause in effect, with its latest
    message and its first ``since``: the list stays as short as the reasons and people."""
    same = [c for c in causes if (c.reason, c.by) == (cause.reason, cause.by)]
    if same:
        cause = Cause(cause.reason, cause.message, cause.by, same[0].since)
    return (*(c for c in causes if (c.reason, c.by) != (cause.reason, cause.by)), cause)


def on_shoe_offline(ctx: Context, state: TableState, event: ShoeOffline) -> list[Effect]:
    state.shoe_online = False
    notice = PublishEvent("shoe_offline", {"port": event.port, "reason": event.reason})
    if state.phase in ACTIVE_PHASES:
        return [notice, *pause(ctx, state, PauseReason.SHOE_OFFLINE, event.at, event.reason)]
    return [notice, published(ctx, state)]


def on_idle_notice(ctx: Context, state: TableState, event: ShoeFault | CardsLost) -> list[Effect]:
    if isinstance(event, ShoeFault):
        return [PublishEvent("shoe_fault", {"code": event.code, "message": event.message})]
    unaccounted(ctx, state, event)  # news either way; the cards entered are spoken for
    return [PublishEvent("cards_lost", {"count": len(event.sequences)})]


def unaccounted(ctx: Context, state: TableState, event: CardsLost) -> int:
    """How many of the cards the shoe says it lost no card entered by hand accounts for.

    A frame the shoe lost is a card that left it unannounced; if the supervisor entered
    that card from the felt, the shoe's numbering shows the gap with its next card."""
    lost = len(event.sequences)
    if ctx.revision < 3:
        return lost
    accounted = min(lost, len(state.unannounced_entered) - state.unannounced_gaps)
    state.unannounced_gaps += accounted
    return lost - accounted


def on_paused_notice(ctx: Context, state: TableState, event: ShoeFault | CardsLost) -> list[Effect]:
    return on_idle_notice(ctx, state, event)


def on_shoe_fault(ctx: Context, state: TableState, event: ShoeFault) -> list[Effect]:
    return pause(ctx, state, PauseReason.SHOE_FAULT, event.at, f"{event.code}: {event.message}")


def on_cards_lost(ctx: Context, state: TableState, event: CardsLost) -> list[Effect]:
    lost = unaccounted(ctx, state, event)
    if lost == 0:
        return [PublishEvent("cards_lost", {"count": len(event.sequences)})]
    held: tuple[Card | None, ...] = (None,) * lost
    return pause(
        ctx, state, PauseReason.CARDS_LOST, event.at, f"{lost} card(s) left unread", held=held
    )


def on_dealer_idle(ctx: Context, state: TableState, event: TimerExpired) -> list[Effect]:
    return pause(
        ctx,
        state,
        PauseReason.DEALER_IDLE,
        event.at,
        f"nothing for {state.settings.dealer_idle_s:g} s",
    )


def on_started(ctx: Context, state: TableState, event: ControllerStarted) -> list[Effect]:
    if ctx.revision >= 6:
        # The hold the stopped process set (closing, by nobody) went with it; a
        # supervisor's drain stays until a supervisor lifts it.
        state.round_holds = tuple(
            hold
            for hold in state.round_holds
            if not (hold.reason is HoldReason.CLOSING and hold.by is None)
        )
    # Whatever the daemon was doing before the restart is gone: its timers and the
    # shoe's gate. Ask again for the lock the phase needs.
    state.timers = {}
    lock: Effect = LockShoe() if state.shoe_locked else UnlockShoe()
    # A card drawn while nobody read the shoe is gone unless the protocol resends it or
    # names it lost: a person says whether one was (see MACHINE_REVISION 4).
    unseen = ctx.revision >= 4 and not event.gaps_visible
    if state.phase in ACTIVE_PHASES:
        return pause(
            ctx, state, PauseReason.RECOVERED, event.at, "resume or cancel", offline_gap=unseen
        )
    if state.phase is P.PAUSED and unseen and state.pause.resume_to in ACTIVE_PHASES:  # type: ignore[union-attr]
        return pause(
            ctx, state, PauseReason.RECOVERED, event.at, "resume or cancel", offline_gap=True
        )
    if state.phase is P.PAUSED:
        state.shoe_locked = True
        return [LockShoe(), published(ctx, state)]
    return [lock, published(ctx, state)]


def held_by(holds: tuple[Cause, ...]) -> str:
    """Who holds the table paused, and why, in a supervisor's words."""
    return "; ".join(f"{hold.by}: {hold.detail()}" for hold in holds)


def hold(ctx: Context, state: TableState, since: float | None) -> list[Effect]:
    """Keep the table paused by the supervisors' pauses in effect (``state.holds``) where a
    resolution given within them led it (the phase it would be in now becomes the phase
    to resume to). The shoe stays locked and the dealer stopped; nothing of that phase was
    said (``dealing.enter`` says nothing while a supervisor's pause holds the table)."""
    last = state.holds[-1]
    state.pause = Pause(
        PauseReason.SUPERVISOR,
        last.message,
        state.phase,
        by=last.by,
        since=since,
        causes=state.holds,
    )
    state.phase = P.PAUSED
    state.reading = None
    state.timers = {}
    state.deadline = None
    state.shoe_locked = True
    return [
        LockShoe(),
        TellDealer("stop", f"stop: {last.message}; call the supervisor"),
        published(ctx, state),
    ]


def anomaly_of(ctx: Context, pause_: Pause) -> tuple[PauseReason, str | None]:
    """The reason and ``by`` a pause keeps when it is paused again after a resolution that
    leaves it needing more: its own (revision 4); from revision 5 its latest anomaly's,
    since the supervisors' pauses among its causes are still in effect by themselves."""
    if ctx.revision >= 5:
        for cause in reversed(pause_.causes):
            if cause.reason is not PauseReason.SUPERVISOR:
                return cause.reason, cause.by
    return pause_.reason, pause_.by


def on_card_out_of_turn(
    ctx: Context, state: TableState, event: CardDrawn | CardMisread
) -> list[Effect]:
    return hold_out_of_turn(ctx, state, event, why_out_of_turn(state))


def hold_out_of_turn(
    ctx: Context, state: TableState, event: CardDrawn | CardMisread, why: str
) -> list[Effect]:
    """Pause and hold a card that came when none was due (counted: a ninth copy is
    impossible whenever it comes)."""
    card = event.card if isinstance(event, CardDrawn) else None
    # The face of a card entered by hand: perhaps its late frame, which was counted
    # when it was entered. It is counted if it is accepted as another card.
    late = card is not None and card in state.unannounced_entered
    if card is not None and state.count is not None and not late:
        try:
            count_out(state, card)
        except RulesError:
            return pause(ctx, state, PauseReason.IMPOSSIBLE_CARD, event.at, NINTH_COPY)
    return pause(
        ctx,
        state,
        PauseReason.CARD_OUT_OF_TURN,
        event.at,
        why,
        held=(card,),
        uncounted=(0,) if late else (),
    )


def why_out_of_turn(state: TableState) -> str:
    phase = phase_at_stake(state)
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
    ctx: Context, state: TableState, event: CardDrawn | CardMisread
) -> list[Effect]:
    return hold_out_of_turn(ctx, state, event, "while the table was paused")


def on_cut_card_out_of_turn(ctx: Context, state: TableState, event: CutCardDrawn) -> list[Effect]:
    return pause(
        ctx,
        state,
        PauseReason.CARD_OUT_OF_TURN,
        event.at,
        "the cut card came out during the burn",
    )


def on_misread_pause(ctx: Context, state: TableState, event: CardMisread) -> list[Effect]:
    return pause(ctx, state, PauseReason.MISREAD, event.at, "the revealed burn card", unread="burn")
