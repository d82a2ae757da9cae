"""The table's state model: what the state machine knows, in the words it uses.

The phases, the reasons for a pause and what a pause needs before the table can resume,
:class:`TableState`, which the machine copies before every transition, and :class:`Context`,
what every handler is given besides the state and the event. Nothing here decides anything:
every transition is a row of ``controller/table/transitions.py``, whose handlers
(``commands.py``, ``news.py``, ``dealing.py``, ``pausing.py``, ``resuming.py``) alone change
a :class:`TableState`, and ``controller/table/views.py`` says what of it is shown.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controller.games.base import LiveRound
from controller.games.shuffle_check import ShuffleCheck
from controller.kernel.cards import Card, ShoeCount
from controller.kernel.vocabulary import (  # noqa: F401 (the machine takes them from here)
    HOLE_UNREAD,
    NEEDS,
    RESOLUTIONS,
)
from controller.table.config import OperationalSettings, TableConfig


class Phase(enum.Enum):
    """Where the table is. The shoe's lifecycle and the round's share one enum."""

    AWAITING_SHUFFLE = "AWAITING_SHUFFLE"  # no shoe in play: shuffle, then `new_shoe`
    BURN_REVEAL = "BURN_REVEAL"  # new shoe declared: the first card is drawn and revealed
    BURNING = "BURNING"  # that many cards are drawn and discarded face down
    SHOE_READY = "SHOE_READY"  # between rounds
    BETTING = "BETTING"  # a round is open for bets
    DEALING = "DEALING"  # the round waits for a card
    READING = "READING"  # the shoe misread a card: the camera is asked for it
    DECIDING = "DECIDING"  # the round waits for the platform's decision
    PAUSED = "PAUSED"  # an anomaly or a supervisor stopped the table


ROUND_PHASES: Final = frozenset({Phase.BETTING, Phase.DEALING, Phase.READING, Phase.DECIDING})
BURN_PHASES: Final = frozenset({Phase.BURN_REVEAL, Phase.BURNING})
# Phases in which the dealer may draw: the shoe is unlocked only there.
DRAWING_PHASES: Final = frozenset({Phase.BURN_REVEAL, Phase.BURNING, Phase.DEALING})
ACTIVE_PHASES: Final = ROUND_PHASES | BURN_PHASES
# Where the table goes once a round is over (its shoe goes on, or it ended), and where a round
# may go on to after a card or a decision (the rules ask for the next, or it is over).
AFTER_ROUND: Final = (Phase.SHOE_READY, Phase.AWAITING_SHUFFLE)
ONWARDS: Final = (Phase.DEALING, Phase.DECIDING, Phase.READING, *AFTER_ROUND)



class PauseReason(enum.Enum):
    """Why the table is paused: the code published with every pause."""

    SUPERVISOR = "supervisor"  # a supervisor paused the table
    CARD_OUT_OF_TURN = "card_out_of_turn"  # a card (or the cut card) came when none was due
    IMPOSSIBLE_CARD = "impossible_card"  # a ninth copy of a face from an 8-deck shoe
    MISREAD = "misread"  # the shoe and the camera both failed to read a card
    HOLE_CARD_MISREAD = "hole_card_misread"  # the face-down hole card could not be read
    CARDS_LOST = "cards_lost"  # the shoe lost frames: cards left that nobody read
    SHOE_OFFLINE = "shoe_offline"  # the shoe's port vanished or went silent
    SHOE_FAULT = "shoe_fault"  # the shoe reported an error of its own
    CAMERA_MISMATCH = "camera_mismatch"  # camera and shoe disagree on a face-up card
    DEALER_IDLE = "dealer_idle"  # no card came within the dealer idle deadline
    RULES_REFUSED = "rules_refused"  # the rules refused a card the table expected
    RECOVERED = "recovered"  # the controller restarted in the middle of a round or burn
    PLATFORM_SILENT = "platform_silent"  # Boundless: no "more cards?" answer in time
    SHOE_EMPTY = "shoe_empty"  # the round needs a card and every card of the shoe is out
    UNSHUFFLED_SHOE = "unshuffled_shoe"  # the shoe's first cards run in new-deck order


PAUSE_MESSAGES: Final[Mapping[PauseReason, str]] = {
    PauseReason.SUPERVISOR: "paused by a supervisor",
    PauseReason.CARD_OUT_OF_TURN: "a card came out of the shoe when none was expected",
    PauseReason.IMPOSSIBLE_CARD: "a card came out of which all 8 copies were already drawn",
    PauseReason.MISREAD: "a card could not be read by the shoe nor by the camera",
    PauseReason.HOLE_CARD_MISREAD: "the dealer's face-down card could not be read",
    PauseReason.CARDS_LOST: "the shoe lost track of cards that left it",
    PauseReason.SHOE_OFFLINE: "the shoe is offline",
    PauseReason.SHOE_FAULT: "the shoe reported a fault",
    PauseReason.CAMERA_MISMATCH: "the camera and the shoe read different cards",
    PauseReason.DEALER_IDLE: "no card was drawn within the dealer idle deadline",
    PauseReason.RULES_REFUSED: "the rules refused a card",
    PauseReason.RECOVERED: "the controller restarted during a round or a burn",
    PauseReason.PLATFORM_SILENT: "the game platform did not say whether players want a card",
    PauseReason.SHOE_EMPTY: "the round needs a card and the shoe has none left",
    PauseReason.UNSHUFFLED_SHOE: "the shoe looks not shuffled: its first cards run in the "
    "order of new decks",
}


class HoldReason(enum.Enum):
    """Why the table opens no new round (machine revision 6): a hold between rounds lets
    the round in play finish, then keeps the table in ``SHOE_READY`` until it is lifted."""

    DEALER_CHANGE = "dealer_change"  # a supervisor asked for a new dealer after this round
    CLOSING = "closing"  # the table is closing: the process stops, or a supervisor drains it


HOLD_MESSAGES: Final[Mapping[HoldReason, str]] = {
    HoldReason.DEALER_CHANGE: "a dealer change: no new round until the next dealer signs in",
    HoldReason.CLOSING: "the table is closing: no new round",
}


@dataclass(frozen=True, slots=True)
class Hold:
    """One hold between rounds: its reason, who set it (None: the table process itself,
    stopping) and since when."""

    reason: HoldReason
    by: str | None
    since: float


@dataclass(frozen=True, slots=True)
class Dealer:
    """The dealer on duty: a staff id as the studio writes it (``D-1043``), since when."""

    staff_id: str
    since: float


@dataclass(frozen=True, slots=True)
class Cause:
    """One pause in effect: its reason, plain message, who set it (a supervisor; None for
    an anomaly the table noticed) and since when."""

    reason: PauseReason
    message: str
    by: str | None
    since: float

    def detail(self) -> str:
        """The message without the reason's own words (a supervisor's reason, as given)."""
        return self.message.removeprefix(PAUSE_MESSAGES[self.reason] + ": ")


@dataclass(frozen=True, slots=True)
class Pause:
    """A pause and what it needs before the table can resume.

    ``resume_to`` is the phase the table returns to. ``held`` are the cards that came out of
    turn (``None`` for one that was not read): a resume must ``accept`` (one card, into the
    position the round expects) or ``burn`` them. ``unread`` is the position of a card that
    left the shoe unread: a resume must ``enter_card`` it.
    """

    reason: PauseReason
    message: str
    resume_to: Phase
    held: tuple[Card | None, ...] = ()
    unread: str | None = None
    by: str | None = None
    since: float | None = None  # when the table paused (first reason, if several)
    # The shoe went offline while cards were due: a protocol that cannot retransmit loses a
    # card drawn while the cable was out without a gap in its numbers, so a person confirms.
    offline_gap: bool = False
    # The dealer idle deadline passed while the round waited for a card: a frame the shoe
    # lost looks just like this, so the supervisor may enter the card lying on the felt
    # (``enter_card``), or resume if none was drawn.
    idle_gap: bool = False
    # Indices in ``held`` of cards not counted out of the shoe: each has the face of a card
    # entered by hand, whose late frame it may be (that card is counted). ``accept`` counts it.
    uncounted: tuple[int, ...] = ()
    # The cards ``offline_gap`` stands for left the shoe before every card in ``held`` (the
    # held ones came after a restart or a reconnect): they are entered first, and a held
    # card is not accepted into a place that one of them may have taken.
    gap_before_held: bool = False
    # Every pause in effect, in the order they came (the last one's reason, message and
    # ``by`` are the pause's own): a supervisor's pause, anomalies during it, another
    # supervisor's. From machine revision 5 a supervisor's stays until a supervisor lifts it
    # (``TableState.holds``); the anomalies go when they are resolved.
    causes: tuple[Cause, ...] = ()
    # The round needs a card and every card of the shoe is out (revision 5): it cannot be
    # completed from this shoe, and only a supervisor's cancel ends the pause.
    shoe_empty: bool = False

    def needs(self, dismissible: bool = False) -> list[str]:
        """What must be resolved before the table may resume, in a supervisor's words
        (:data:`NEEDS`, in that order). ``dismissible``: an unread card other than the hole
        card may also be dismissed as no card at all (machine revision 5:
        ``dismiss_unread``)."""
        return [NEEDS[code].format(**values) for code, values in self.need_codes(dismissible)]

    def need_codes(self, dismissible: bool = False) -> list[tuple[str, dict[str, object]]]:
        """:meth:`needs` as codes of :data:`NEEDS` and the values their words take."""
        needs: list[tuple[str, dict[str, object]]] = []
        if self.shoe_empty:
            needs.append(("shoe_empty", {}))
        if self.offline_gap:
            recovered = self.reason is PauseReason.RECOVERED
            needs.append(("recovered_gap" if recovered else "offline_gap", {}))
        if self.unread == HOLE_UNREAD:
            needs.append(("unread_hole", {}))
        elif self.unread is not None:
            code = "unread_dismissible" if dismissible else "unread"
            needs.append((code, {"position": self.unread}))
        if self.held:
            needs.append(("held", {"count": len(self.held)}))
        return needs




@dataclass(frozen=True, slots=True)
class Context:
    """What a handler knows besides the state and the event, fixed for a machine's life.

    ``config``: the table's configuration (its game, variant, id). ``revision``: the
    machine revision the journal was written under (``transitions.MACHINE_REVISION``),
    which decides how some events are read. ``dismissible_unread``: whether, under that
    revision, a supervisor may dismiss an unread card as no card at all (the resume table
    says; the published pause's ``needs`` says so too).
    """

    config: TableConfig
    revision: int
    dismissible_unread: bool = False


@dataclass(slots=True)
class TableState:
    """Everything the machine knows. Copied (containers included) before each transition."""

    phase: Phase = Phase.AWAITING_SHUFFLE
    shoes_started: int = 0  # ids of shoes and rounds: counters that the journal replays
    rounds_started: int = 0
    shoe_id: int | None = None
    count: ShoeCount | None = None
    burn_left: int = 0
    burn_cards: tuple[Card | None, ...] = ()  # journaled, never published
    round_number: int = 0  # 1-based number of the current/last round in this shoe
    final_round: int | None = None  # the shoe's last round, once the cut card is out
    round_id: int | None = None
    boxes: int = 1
    round: LiveRound | None = field(default=None, compare=False)
    round_log: tuple[tuple[Any, ...], ...] = ()  # ("card", position, card, face_down) | ...
    timers: dict[int, str] = field(default_factory=dict)  # timer id -> purpose
    next_timer_id: int = 1
    # Face-up cards awaiting the camera's cross-check: (position, card number, card).
    cross_checks: tuple[tuple[str, int, Card], ...] = ()
    reading: str | None = None  # position whose misread card the camera is asked for
    hole_unread: int | None = None  # index in round_log of a misread hole card's stand-in
    pause: Pause | None = None
    # The supervisors' pauses in effect (machine revision 5), in the order they came: each
    # holds the table until a supervisor lifts it (a plain ``resume``, or ``cancel`` or
    # ``end_shoe``, which end what was paused); resolving an anomaly during them does not.
    # Never empty unless the table is paused.
    holds: tuple[Cause, ...] = ()
    # The dealer signed in at the table (machine revision 6), or None: nobody is.
    dealer: Dealer | None = None
    # The holds between rounds in effect (machine revision 6), one per reason: the round in
    # play finishes, and no round opens while any is in effect.
    round_holds: tuple[Hold, ...] = ()
    shoe_online: bool = True
    shoe_locked: bool = True  # what the machine asked of the shoe
    shoe_reports_locked: bool | None = None  # what the shoe last confirmed
    camera_online: bool | None = None  # None: no camera has reported (or none is fitted)
    # Cards entered by hand that the shoe never announced (its frame was lost, or it was
    # offline), in order, until the shoe's next card: a gap in its numbering of up to that
    # many is theirs and needs no pause (``unannounced_gaps``: how many gaps were counted
    # against them), and a next card of the face of any of them may be its frame, late.
    unannounced_entered: tuple[Card, ...] = ()
    unannounced_gaps: int = 0
    deadline: float | None = None  # when betting closes or the awaited decision times out
    # The operational settings in force, and those journaled to apply from the next round.
    settings: OperationalSettings | None = None
    pending_settings: OperationalSettings | None = None
    # Machine revision 6: the check that a new shoe was shuffled, over its first cards (None
    # once it is over, or before revision 6), and whether it alarmed and awaits its pause.
    shuffle_check: ShuffleCheck | None = None
    shuffle_alarm: bool = False

    def copy(self) -> TableState:
        clone = dataclasses.replace(self)
        clone.timers = dict(self.timers)
        if self.count is not None:
            clone.count = ShoeCount(self.count.decks, Counter(self.count.seen))
        return clone


def count_out(state: TableState, card: Card) -> None:
    """Count ``card`` as out of the shoe, and show it to the shuffle check; RulesError for a
    ninth copy (nothing counted, nothing shown)."""
    if state.count is None:
        return
    state.count.record(card)
    if state.shuffle_check is not None:
        state.shuffle_check = state.shuffle_check.seen_card(card)
        if state.shuffle_check.alarmed:
            state.shuffle_alarm = True
            state.shuffle_check = None
        elif not state.shuffle_check.watching:
            state.shuffle_check = None


def phase_at_stake(state: TableState) -> Phase:
    """The phase the table is in or, paused, the phase it paused and returns to: whether a
    round or a burn is in progress, whatever pauses it."""
    return state.pause.resume_to if state.pause is not None else state.phase


def hole_revealed(live: LiveRound | None) -> bool:
    """Whether the live round's face-down card has been turned over."""
    # The LiveRound contract does not say when a face-down card is turned over; the
    # blackjack round exposes it as ``hole_revealed``.
    return bool(getattr(live, "hole_revealed", False))


def hole_card_number(state: TableState) -> int:
    """The misread hole card's place in the dealer's hand: the dealer never splits, so the
    log's cards to that position up to the hole card's stand-in count it exactly."""
    index = state.hole_unread
    assert index is not None
    position = state.round_log[index][1]
    return sum(
        1 for entry in state.round_log[: index + 1] if entry[0] == "card" and entry[1] == position
    )
