"""The round's and the shoe's cards: entering a phase, dealing, the burn, the hole card,
the settlement.

Functions of the :class:`~controller.table.state.Context` (the table's config and the
machine revision) and of the state they change (the machine's copy, see
:meth:`~controller.table.machine.TableMachine.apply`), returning effects; the ``on_*`` ones
are handlers that :data:`~controller.table.transitions.TRANSITIONS` names. The rules are
never copied here: every round is a live round of the rules engine (``controller/games``),
asked what it needs next. An anomaly is handed to ``pausing.py``, which pauses the table.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from controller.games.base import CardNeeded, DecisionNeeded, LiveRound
from controller.games.shoe import burn_count
from controller.kernel.cards import RANKS, Card
from controller.kernel.errors import RulesError, TransitionError
from controller.kernel.vocabulary import SHOE_ENDS
from controller.table import games, pausing
from controller.table.effects import (
    AskCamera,
    Effect,
    LockShoe,
    PublishEvent,
    StartTimer,
    TellDealer,
    UnlockShoe,
)
from controller.table.events import (
    CameraRead,
    CardDrawn,
    CardMisread,
    PlatformDecided,
    TimerExpired,
)
from controller.table.pausing import NINTH_COPY
from controller.table.state import (
    DRAWING_PHASES,
    HOLE_UNREAD,
    Context,
    HoldReason,
    PauseReason,
    Phase,
    TableState,
    count_out,
    hole_card_number,
    hole_revealed,
)
from controller.table.views import published, step_data

logger = logging.getLogger(__name__)

P = Phase

# Stands in for a misread hole card in the live round until the card is read at its reveal.
# Any face would do: the machine checks, after every step, that the round would have gone
# exactly the same whatever the hole card is (see hole_matters).
HOLE_PLACEHOLDER: Final = Card("2", "S")
HOLE_CANDIDATES: Final = tuple(Card(rank, "S") for rank in RANKS)


def cards_held(state: TableState, position: str) -> int:
    """How many cards the hand ``position`` of the live round holds now, the hole card
    included. The rules are asked, not the round log: after a split the box's second card
    belongs to the new hand, and a resplit renumbers the hands after it, which only the
    rules know."""
    return state.round.cards_held(position)  # type: ignore[union-attr]


def new_round(ctx: Context, state: TableState) -> LiveRound:
    return games.new_round(ctx.config.game, state.round_number, state.boxes, ctx.config.variant)


def rebuild_round(
    ctx: Context, state: TableState, log: tuple[tuple[Any, ...], ...] | None = None
) -> LiveRound:
    live = new_round(ctx, state)
    for entry in state.round_log if log is None else log:
        if entry[0] == "card":
            live.deal(entry[2])
        else:
            live.decide(entry[1], entry[2], entry[3])
    return live


def log_with_hole(state: TableState, hole: Card) -> tuple[tuple[Any, ...], ...]:
    index = state.hole_unread
    assert index is not None
    kind, position, _, face_down = state.round_log[index]
    return (
        *state.round_log[:index],
        (kind, position, hole, face_down),
        *state.round_log[index + 1 :],
    )


def hole_matters(ctx: Context, state: TableState) -> bool:
    """Whether the round would have gone differently had the unread hole card been any
    other rank: then the rules need it now (a peek), before it is turned over."""
    outcomes = set()
    for candidate in HOLE_CANDIDATES:
        try:
            live = rebuild_round(ctx, state, log_with_hole(state, candidate))
        except RulesError:
            return True
        step = step_data(live.next_step())
        outcomes.add(repr((step, live.complete, hole_revealed(live))))
    return len(outcomes) > 1


def fill_hole(ctx: Context, state: TableState, card: Card, at: float, source: str) -> list[Effect]:
    """Put the hole card, read at last, in place of its stand-in (already counted)."""
    index = state.hole_unread
    assert index is not None
    log = log_with_hole(state, card)
    state.round = rebuild_round(ctx, state, log)
    state.round_log = log
    state.hole_unread = None
    payload: dict[str, Any] = {
        "round_id": state.round_id,
        "position": log[index][1],
        "source": source,
    }
    if hole_revealed(state.round):
        payload["card"] = str(card)
    return [PublishEvent("hole_card_read", payload), *advance(ctx, state, at)]


def start_timer(state: TableState, purpose: str, duration: float, at: float) -> Effect:
    timer_id = state.next_timer_id
    state.next_timer_id += 1
    state.timers[timer_id] = purpose
    return StartTimer(timer_id, purpose, duration, at + duration)


def lock_shoe(state: TableState, locked: bool) -> list[Effect]:
    if state.shoe_locked == locked:
        return []
    state.shoe_locked = locked
    return [LockShoe() if locked else UnlockShoe()]


def reading_number(state: TableState) -> int:
    """The slot number of the card the camera is asked to read (``state.reading``): the
    hole card's own place, or for a misread card, which is not in the round yet, the
    next slot of its hand."""
    if reading_hole(state):
        return hole_card_number(state)
    return cards_held(state, state.reading) + 1  # type: ignore[arg-type]


def reading_hole(state: TableState) -> bool:
    return state.hole_unread is not None and hole_revealed(state.round)


def enter(ctx: Context, state: TableState, phase: Phase, at: float) -> list[Effect]:
    """Move to ``phase`` and say so: shoe lock, dealer's line, timers, the new state."""
    state.phase = phase
    state.timers = {}
    state.deadline = None
    if phase in (P.SHOE_READY, P.AWAITING_SHUFFLE) and state.pending_settings is not None:
        state.settings, state.pending_settings = state.pending_settings, None
    if state.holds:
        # A resolution given within a supervisor's pause led here: the pause holds the
        # table (``pausing.hold``), so nothing of this phase is said or started. Its lift
        # enters it again.
        return []
    effects: list[Effect] = lock_shoe(state, phase not in DRAWING_PHASES)
    if phase is P.BURN_REVEAL:
        effects.append(TellDealer("reveal", "draw the first card of the shoe and reveal it"))
        effects.append(start_timer(state, "dealer_idle", state.settings.dealer_idle_s, at))
    elif phase is P.BURNING:
        effects.append(
            TellDealer(
                "burn",
                f"burn {state.burn_left} card(s) face down",
                count=state.burn_left,
            )
        )
        effects.append(start_timer(state, "dealer_idle", state.settings.dealer_idle_s, at))
    elif phase is P.DEALING:
        step = state.round.next_step()  # type: ignore[union-attr]
        assert isinstance(step, CardNeeded)
        how = "face down" if step.face_down else "face up"
        effects.append(
            TellDealer("deal", f"next card to {step.position}, {how}", position=step.position)
        )
        effects.append(start_timer(state, "dealer_idle", state.settings.dealer_idle_s, at))
    elif phase is P.READING:
        position: str = state.reading  # type: ignore[assignment]
        if reading_hole(state):
            effects.append(AskCamera(position, "hole_reveal", reading_number(state)))
            effects.append(TellDealer("reveal", "turn the hole card over for the camera"))
        else:
            effects.append(AskCamera(position, "misread", reading_number(state)))
            effects.append(TellDealer("wait", "the card is being read by the camera"))
        effects.append(start_timer(state, "camera", state.settings.dealer_idle_s, at))
    elif phase is P.DECIDING:
        step = state.round.next_step()  # type: ignore[union-attr]
        assert isinstance(step, DecisionNeeded)
        timer = start_timer(state, "decision", state.settings.decision_s, at)
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
        betting = start_timer(state, "betting", state.settings.betting_s, at)
        state.deadline = betting.due_at  # type: ignore[attr-defined]
        effects.append(betting)
        effects.append(TellDealer("wait", "betting is open"))
    elif phase is P.SHOE_READY and state.round_holds:
        effects.append(TellDealer("hold", hold_line(state)))
    elif phase is P.SHOE_READY:
        effects.append(TellDealer("wait", "waiting for the next round"))
    elif phase is P.AWAITING_SHUFFLE:
        effects.append(TellDealer("shuffle", "shuffle the shoe, then declare a new shoe"))
    effects.append(published(ctx, state))
    return effects


def hold_line(state: TableState) -> str:
    """The dealer's line while the table holds between rounds: the first hold's words."""
    if any(hold.reason is HoldReason.DEALER_CHANGE for hold in state.round_holds):
        return "dealer change: no new round; the next dealer signs in"
    return "the table is closing: no new round"


def round_dealer(ctx: Context, state: TableState) -> dict[str, Any]:
    """``{"dealer": staff id or None}`` for a round's events (machine revision 6; an older
    journal's events are exported as they were published)."""
    if ctx.revision < 6:
        return {}
    return {"dealer": None if state.dealer is None else state.dealer.staff_id}


def advance(ctx: Context, state: TableState, at: float) -> list[Effect]:
    """Ask the round what it needs next and go there (or settle it)."""
    if state.shuffle_alarm:
        # Before anything else, and before a settlement: the round waits where it is.
        state.phase = P.DEALING
        return pausing.unshuffled(ctx, state, at)
    if state.hole_unread is not None:
        if hole_revealed(state.round):
            # The dealer turns the hole card over now: the camera can read it.
            state.reading = state.round_log[state.hole_unread][1]
            return enter(ctx, state, P.READING, at)
        if hole_matters(ctx, state):
            return pausing.pause(
                ctx,
                state,
                PauseReason.HOLE_CARD_MISREAD,
                at,
                "the rules need it before its reveal: the supervisor reads it privately "
                "and enters it by hand",
                unread=HOLE_UNREAD,
            )
    step = state.round.next_step()  # type: ignore[union-attr]
    if isinstance(step, CardNeeded):
        if ctx.revision >= 5 and state.count is not None and state.count.cards_left == 0:
            # No card can come: waiting would be for ever. The round cannot be completed
            # from this shoe; a supervisor decides (cancel).
            state.phase = P.DEALING  # the phase paused (not betting, not a decision)
            return pausing.pause(
                ctx,
                state,
                PauseReason.SHOE_EMPTY,
                at,
                f"every card is out and {step.position} needs one",
                shoe_empty=True,
            )
        return enter(ctx, state, P.DEALING, at)
    if isinstance(step, DecisionNeeded):
        return enter(ctx, state, P.DECIDING, at)
    return settle(ctx, state, at)


def settle(ctx: Context, state: TableState, at: float) -> list[Effect]:
    settlement = dict(state.round.settlement())  # type: ignore[union-attr]
    side_bets = settlement.get("side_bets")
    if isinstance(side_bets, Mapping):
        # The rules score every side bet; only those offered in this round of the shoe
        # (round_opened's "bets") may be settled: no bet on the others was taken.
        offered = set(games.available_bets(ctx.config.game, state.round_number))
        settlement["side_bets"] = {b: net for b, net in side_bets.items() if b in offered}
    effects: list[Effect] = [
        PublishEvent(
            "round_settled",
            {
                "round_id": state.round_id,
                "shoe_id": state.shoe_id,
                "result": settlement,
                **round_dealer(ctx, state),
            },
        )
    ]
    return effects + close_round(ctx, state, at)


def _forget_round(state: TableState) -> None:
    """The round's live parts gone: its rules object, its log, what it had asked and held."""
    state.round = None
    state.round_log = ()
    state.cross_checks = ()
    state.reading = None
    state.hole_unread = None
    state.pause = None


def close_round(ctx: Context, state: TableState, at: float) -> list[Effect]:
    _forget_round(state)
    if state.final_round is not None and state.round_number >= state.final_round:
        return end_shoe(ctx, state, at, SHOE_ENDS["final_round"])
    if ctx.revision >= 5 and state.count is not None and state.count.cards_left == 0:
        return end_shoe(ctx, state, at, SHOE_ENDS["shoe_out"])
    return enter(ctx, state, P.SHOE_READY, at)


def end_shoe(ctx: Context, state: TableState, at: float, why: str) -> list[Effect]:
    effects: list[Effect] = [PublishEvent("shoe_ended", {"shoe_id": state.shoe_id, "why": why})]
    state.shoe_id = None
    state.count = None
    state.shuffle_check = None
    state.shuffle_alarm = False
    state.burn_left = 0
    state.burn_cards = ()
    state.final_round = None
    state.round_number = 0
    state.round_id = None
    _forget_round(state)
    return effects + enter(ctx, state, P.AWAITING_SHUFFLE, at)


def deal(ctx: Context, state: TableState, card: Card, at: float, source: str) -> list[Effect]:
    """Give ``card`` (already counted) to the position the round expects, then advance."""
    live = state.round
    step = live.next_step()  # type: ignore[union-attr]
    assert isinstance(step, CardNeeded)
    try:
        live.deal(card)  # type: ignore[union-attr]
    except RulesError:
        # Not the rules' message: it names the card, which may be the secret hole card.
        logger.error("the rules refused the card dealt to %s", step.position)
        return pausing.pause(
            ctx, state, PauseReason.RULES_REFUSED, at, f"at {step.position}", held=(card,)
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
        number = cards_held(state, step.position)
        state.cross_checks += ((step.position, number, card),)
        effects.append(AskCamera(step.position, "cross_check", number))
    return effects + advance(ctx, state, at)


def take_card(ctx: Context, state: TableState, card: Card, at: float, source: str) -> list[Effect]:
    """A card for the round from the shoe or the camera: count it, check it, deal it."""
    try:
        count_out(state, card)
    except RulesError:
        return pausing.pause(ctx, state, PauseReason.IMPOSSIBLE_CARD, at, NINTH_COPY)
    return deal(ctx, state, card, at, source)


def on_burn_reveal(ctx: Context, state: TableState, event: CardDrawn) -> list[Effect]:
    return reveal_burn_card(ctx, state, event.card, event.at)


def reveal_burn_card(ctx: Context, state: TableState, card: Card, at: float) -> list[Effect]:
    try:
        count_out(state, card)
    except RulesError:
        return pausing.pause(ctx, state, PauseReason.IMPOSSIBLE_CARD, at, NINTH_COPY)
    state.burn_cards = (card,)
    state.burn_left = burn_count(card)
    # The revealed card's face is on the table for all to see, but it is a burn card: it
    # goes to the journal (as the event) and nowhere else.
    effects = [
        PublishEvent("burn_started", {"shoe_id": state.shoe_id, "cards": state.burn_left}),
        *enter(ctx, state, P.BURNING, at),
    ]
    return effects + pausing.unshuffled(ctx, state, at)


def on_burn_card(ctx: Context, state: TableState, event: CardDrawn | CardMisread) -> list[Effect]:
    card = event.card if isinstance(event, CardDrawn) else None
    if card is not None:
        try:
            count_out(state, card)
        except RulesError:
            return pausing.pause(ctx, state, PauseReason.IMPOSSIBLE_CARD, event.at, NINTH_COPY)
    state.burn_cards += (card,)
    state.burn_left -= 1
    if state.burn_left > 0:
        state.timers = {}
        # The state says how many are left to burn (never their faces).
        timer = start_timer(state, "dealer_idle", state.settings.dealer_idle_s, event.at)
        return [timer, published(ctx, state), *pausing.unshuffled(ctx, state, event.at)]
    return [
        PublishEvent("burn_completed", {"shoe_id": state.shoe_id, "cards": len(state.burn_cards)}),
        *enter(ctx, state, P.SHOE_READY, event.at),
        *pausing.unshuffled(ctx, state, event.at),
    ]


def on_betting_closed(ctx: Context, state: TableState, event: TimerExpired) -> list[Effect]:
    state.round = new_round(ctx, state)
    state.round_log = ()
    closed = PublishEvent("betting_closed", {"round_id": state.round_id})
    return [closed, *advance(ctx, state, event.at)]


def on_card(ctx: Context, state: TableState, event: CardDrawn) -> list[Effect]:
    if event.card in state.unannounced_entered:
        # It has the face of a card entered by hand whose frame never came (a gap before
        # it may be another card's): it may be that frame, late. Dealt, it would go to
        # the next position. Its face is not said: it may be the hole card.
        return pausing.hold_out_of_turn(
            ctx,
            state,
            event,
            "the shoe announced a card of the face of one entered by hand: burn it if it "
            "is that card's frame, late, accept it if the dealer drew another",
        )
    return take_card(ctx, state, event.card, event.at, "shoe")


def on_misread(ctx: Context, state: TableState, event: CardMisread) -> list[Effect]:
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
        return [dealt, *advance(ctx, state, event.at)]
    state.reading = step.position
    return enter(ctx, state, P.READING, event.at)


def on_camera_read(ctx: Context, state: TableState, event: CameraRead) -> list[Effect]:
    asked = event.position == state.reading and event.card_number in (
        None,
        reading_number(state),
    )
    if not asked:
        return on_cross_check(ctx, state, event)
    hole = reading_hole(state)
    state.reading = None
    if event.card is None:
        return pausing.pause(
            ctx,
            state,
            PauseReason.MISREAD,
            event.at,
            f"the card for {event.position}",
            unread=HOLE_UNREAD if hole else event.position,
        )
    if hole:
        try:
            count_out(state, event.card)
        except RulesError:
            return pausing.pause(
                ctx,
                state,
                PauseReason.IMPOSSIBLE_CARD,
                event.at,
                NINTH_COPY,
                unread=HOLE_UNREAD,
            )
        return fill_hole(ctx, state, event.card, event.at, "camera")
    return take_card(ctx, state, event.card, event.at, "camera")


def on_camera_timeout(ctx: Context, state: TableState, event: TimerExpired) -> list[Effect]:
    position = HOLE_UNREAD if reading_hole(state) else state.reading
    return pausing.pause(
        ctx, state, PauseReason.MISREAD, event.at, "the camera did not answer", unread=position
    )


def on_cross_check(ctx: Context, state: TableState, event: CameraRead) -> list[Effect]:
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
    return pausing.pause(
        ctx,
        state,
        PauseReason.CAMERA_MISMATCH,
        event.at,
        f"at {position} the shoe read {card}, the camera {event.card}",
    )


def on_decision(ctx: Context, state: TableState, event: PlatformDecided) -> list[Effect]:
    step = state.round.next_step()  # type: ignore[union-attr]
    assert isinstance(step, DecisionNeeded)
    if event.round_id != state.round_id:
        raise TransitionError(f"round {event.round_id} is not the round in progress")
    if event.kind != step.kind:
        raise TransitionError(f"a {step.kind} decision is pending, not {event.kind!r}")
    return take_decision(ctx, state, event.box, event.hand, event.decision, event.at, auto=False)


def on_decision_timeout(ctx: Context, state: TableState, event: TimerExpired) -> list[Effect]:
    step = state.round.next_step()  # type: ignore[union-attr]
    assert isinstance(step, DecisionNeeded)
    if step.kind == "more_cards":
        # Not a player's decision but the platform's summary of every player's: the
        # players' own timeouts are auto-played by the platform, which holds their
        # hands. Silence here means the platform is down, and any guess (the shared
        # cards played as one unsplit hand) can leave a player who split with a hand
        # the common sequence never finishes. A system problem: pause
        # (docs/rules-baccarat.md, Errors and disconnections).
        return pausing.pause(
            ctx,
            state,
            PauseReason.PLATFORM_SILENT,
            event.at,
            f"no answer within {state.settings.decision_s:g} s",
        )
    return take_decision(ctx, state, step.box, step.hand, step.default, event.at, auto=True)


def take_decision(
    ctx: Context, state: TableState, box: int, hand: int, token: str, at: float, auto: bool
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
    return [taken, *advance(ctx, state, at)]
