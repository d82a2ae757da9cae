"""The table's transitions, as data: every (phase, event kind) the machine accepts.

Like h11's ``_state.py``, the transitions are a table: :data:`TRANSITIONS` maps each phase to
the kinds of event it accepts, the handler that takes them and the phases the handler may
lead to. ``docs/table.md`` draws its state diagram from that same table (a test checks they
agree). :func:`event_kind` files an event under its kind. Nothing here changes a state: the
handlers named are functions of ``controller/table/`` (``dealing.py``, ``pausing.py``,
``resuming.py``), which :class:`~controller.table.machine.TableMachine` dispatches to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

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
)
from controller.table.state import Phase, TableState

P = Phase

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
