"""The table's transitions, as data: every (phase, event kind) the machine accepts.

Like h11's ``_state.py``, the transitions are one plain-data table: :data:`TRANSITIONS` maps
each phase to the kinds of event it accepts, each to one :class:`Transition`: the handler
that takes it and the phases the handler may lead to. A pair that is not in the table is an
error (:func:`transition_for` raises :class:`NotAccepted`; the machine answers it and changes
nothing). The table is built once, here, and cannot be changed afterwards. The handlers are
functions of (context, state, event) returning effects: the commands in ``commands.py``, the
news that deals no card in ``news.py``, the round's and the shoe's cards in ``dealing.py``,
pauses in ``pausing.py``, resumes in ``resuming.py``, which holds the second table, the
resume table. :func:`event_kind` files an event under its kind; ``docs/table.md`` draws the
state diagram from this table (:func:`mermaid_diagram`; a test checks they agree).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from controller.kernel.errors import TransitionError
from controller.table import commands, dealing, news, pausing, resuming
from controller.table.effects import Effect
from controller.table.events import (
    SUPERVISOR_COMMANDS,
    CameraOffline,
    CameraOnline,
    CameraRead,
    CardDrawn,
    CardMisread,
    CardPictured,
    CardsLost,
    ControllerStarted,
    ControllerStopping,
    CutCardDrawn,
    DealerSignedIn,
    DealerSignedOut,
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
from controller.table.state import AFTER_ROUND, ONWARDS, Context, Phase, TableState

P = Phase

MACHINE_REVISION: Final = 6
"""How the machine reads events, recorded in each journal so that a journal replays under
the rules it was written with. 2: a shoe that goes offline while cards are due needs the
supervisor's confirmation (``no_cards_drawn``) or the missing cards (``enter_card``).
3: a dealer-idle pause while a card is due takes ``enter_card`` (a frame the shoe lost),
and a gap in the shoe's numbering that cards entered by hand account for pauses nothing.
4: a restart during a round or a burn needs the same confirmation unless the shoe accounts
for every card (``ControllerStarted.gaps_visible``); cards held after such a gap are not
accepted before the gap's cards are entered (or none confirmed), and ``accept`` deals every
card held, in the order they came. 5: pauses nest: a supervisor's pause holds until a
supervisor lifts it (a plain ``resume``, ``cancel`` or ``end_shoe``), an anomaly during it is
resolved within it, and a supervisor may pause a table that is already paused; a round
that needs a card from a shoe with none left pauses (``shoe_empty``), and a round that
leaves the shoe empty ends it. 6: the dealers on duty (``DealerSignedIn``, ``DealerSignedOut``,
named in ``round_opened`` and ``round_settled``) and the holds between rounds (a supervisor's
``dealer_change`` or ``drain``, the process's ``ControllerStopping``): the round in play
finishes and no round opens while one is in effect."""


Handler = Callable[[Context, TableState, Any], list[Effect]]
"""A transition's handler: it changes the state it is given (the machine's copy) and returns
the effects; a TransitionError refuses the event and nothing it did counts."""


@dataclass(frozen=True, slots=True)
class Transition:
    """One entry of the table: the handler and every phase it may lead to."""

    handler: Handler
    targets: frozenset[Phase]


def _t(handler: Handler, *targets: Phase) -> Transition:
    return Transition(handler, frozenset(targets))


class NotAccepted(TransitionError):
    """The phase takes no event of that kind: the pair is not in :data:`TRANSITIONS`.

    Examples: a ``resume`` while the table deals (``DEALING``, ``command.resume``), a round
    request before the burn is done (``BURNING``, ``round_request``). A card during betting is
    not one: its entry pauses the table (a card out of turn)."""

    def __init__(self, phase: Phase, kind: str) -> None:
        super().__init__(f"not accepted in {phase.name} ({kind})")
        self.phase = phase
        self.kind = kind


# Event kinds: "card", "misread", "cut_card", "cards_lost", "shoe_fault",
# "shoe_fault_cleared", "shoe_online", "shoe_offline", "shoe_lock", "camera",
# "camera_status", "settings", "decision", "round_request", "started", "stopping",
# "dealer_sign_in", "dealer_sign_out", "timer.<purpose>", "command.<name>".


def _in_every_phase(phase: Phase) -> dict[str, Transition]:
    """The entries every phase has: news that leaves the phase as it is, and a supervisor's
    pause (in PAUSED too: refused before machine revision 5, "already paused"; nested since).
    """
    return {
        "shoe_online": _t(news.on_shoe_online, phase),
        "shoe_lock": _t(news.on_shoe_lock, phase),
        # A fault's end is news, not a resolution: a pause it caused still needs a supervisor.
        "shoe_fault_cleared": _t(news.on_shoe_fault_cleared, phase),
        "camera_status": _t(news.on_camera_status, phase),
        # The record of a picture taken (event encoding 6): the table's state is unchanged.
        "picture": _t(news.on_picture, phase),
        "settings": _t(commands.on_settings, phase),
        "timer.stale": _t(news.on_stale_timer, phase),
        "command.pause": _t(commands.on_pause_command, P.PAUSED),
        # The dealers on duty and the holds between rounds (machine revision 6): news for
        # the round in play, which goes on; a hold keeps the next one from opening.
        "dealer_sign_in": _t(commands.on_dealer_sign_in, phase),
        "dealer_sign_out": _t(commands.on_dealer_sign_out, phase),
        "stopping": _t(commands.on_stopping, phase),
        "command.dealer_change": _t(commands.on_dealer_change, phase),
        "command.drain": _t(commands.on_drain, phase),
        "command.resume_rounds": _t(commands.on_resume_rounds, phase),
    }


_BY_PHASE: Final[dict[Phase, dict[str, Transition]]] = {
    P.AWAITING_SHUFFLE: {
        "card": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "misread": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "cards_lost": _t(pausing.on_idle_notice, P.AWAITING_SHUFFLE),
        "shoe_fault": _t(pausing.on_idle_notice, P.AWAITING_SHUFFLE),
        "shoe_offline": _t(pausing.on_shoe_offline, P.AWAITING_SHUFFLE),
        "started": _t(pausing.on_started, P.AWAITING_SHUFFLE),
        "command.new_shoe": _t(commands.on_new_shoe, P.BURN_REVEAL),
    },
    P.BURN_REVEAL: {
        "card": _t(dealing.on_burn_reveal, P.BURNING, P.PAUSED),
        "misread": _t(pausing.on_misread_pause, P.PAUSED),
        "cut_card": _t(pausing.on_cut_card_out_of_turn, P.PAUSED),
        "cards_lost": _t(pausing.on_cards_lost, P.BURN_REVEAL, P.PAUSED),
        "shoe_fault": _t(pausing.on_shoe_fault, P.PAUSED),
        "shoe_offline": _t(pausing.on_shoe_offline, P.PAUSED),
        "timer.dealer_idle": _t(pausing.on_dealer_idle, P.PAUSED),
        "started": _t(pausing.on_started, P.PAUSED),
        "command.end_shoe": _t(commands.on_end_shoe, P.AWAITING_SHUFFLE),
    },
    P.BURNING: {
        "card": _t(dealing.on_burn_card, P.BURNING, P.SHOE_READY, P.PAUSED),
        "misread": _t(dealing.on_burn_card, P.BURNING, P.SHOE_READY),
        "cut_card": _t(pausing.on_cut_card_out_of_turn, P.PAUSED),
        "cards_lost": _t(pausing.on_cards_lost, P.BURNING, P.PAUSED),
        "shoe_fault": _t(pausing.on_shoe_fault, P.PAUSED),
        "shoe_offline": _t(pausing.on_shoe_offline, P.PAUSED),
        "timer.dealer_idle": _t(pausing.on_dealer_idle, P.PAUSED),
        "started": _t(pausing.on_started, P.PAUSED),
        "command.end_shoe": _t(commands.on_end_shoe, P.AWAITING_SHUFFLE),
    },
    P.SHOE_READY: {
        "card": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "misread": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "cut_card": _t(news.on_cut_card, P.SHOE_READY),
        "cards_lost": _t(pausing.on_cards_lost, P.SHOE_READY, P.PAUSED),
        "shoe_fault": _t(pausing.on_idle_notice, P.SHOE_READY),
        "shoe_offline": _t(pausing.on_shoe_offline, P.SHOE_READY),
        "round_request": _t(commands.on_round_request, P.BETTING),
        "started": _t(pausing.on_started, P.SHOE_READY),
        "command.end_shoe": _t(commands.on_end_shoe, P.AWAITING_SHUFFLE),
        "command.new_shoe": _t(commands.on_new_shoe, P.BURN_REVEAL),
    },
    P.BETTING: {
        "card": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "misread": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "cut_card": _t(news.on_cut_card, P.BETTING),
        "cards_lost": _t(pausing.on_cards_lost, P.BETTING, P.PAUSED),
        "shoe_fault": _t(pausing.on_shoe_fault, P.PAUSED),
        "shoe_offline": _t(pausing.on_shoe_offline, P.PAUSED),
        "timer.betting": _t(dealing.on_betting_closed, P.DEALING, P.DECIDING, P.PAUSED),
        "started": _t(pausing.on_started, P.PAUSED),
        "command.cancel": _t(commands.on_cancel, *AFTER_ROUND),
    },
    P.DEALING: {
        "card": _t(dealing.on_card, *ONWARDS, P.PAUSED),
        # A misread hole card is played on with a stand-in; the round cannot end before
        # its reveal, which goes to READING.
        "misread": _t(dealing.on_misread, P.READING, P.DEALING, P.DECIDING, P.PAUSED),
        "cut_card": _t(news.on_cut_card, P.DEALING),
        "camera": _t(dealing.on_cross_check, P.DEALING, P.PAUSED),
        "cards_lost": _t(pausing.on_cards_lost, P.DEALING, P.PAUSED),
        "shoe_fault": _t(pausing.on_shoe_fault, P.PAUSED),
        "shoe_offline": _t(pausing.on_shoe_offline, P.PAUSED),
        "timer.dealer_idle": _t(pausing.on_dealer_idle, P.PAUSED),
        "started": _t(pausing.on_started, P.PAUSED),
        "command.cancel": _t(commands.on_cancel, *AFTER_ROUND),
    },
    P.READING: {
        "camera": _t(dealing.on_camera_read, *ONWARDS, P.PAUSED),
        "card": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "misread": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "cut_card": _t(news.on_cut_card, P.READING),
        "cards_lost": _t(pausing.on_cards_lost, P.READING, P.PAUSED),
        "shoe_fault": _t(pausing.on_shoe_fault, P.PAUSED),
        "shoe_offline": _t(pausing.on_shoe_offline, P.PAUSED),
        "timer.camera": _t(dealing.on_camera_timeout, P.PAUSED),
        "started": _t(pausing.on_started, P.PAUSED),
        "command.cancel": _t(commands.on_cancel, *AFTER_ROUND),
    },
    P.DECIDING: {
        "decision": _t(dealing.on_decision, *ONWARDS, P.PAUSED),
        "timer.decision": _t(dealing.on_decision_timeout, *ONWARDS, P.PAUSED),
        "card": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "misread": _t(pausing.on_card_out_of_turn, P.PAUSED),
        "cut_card": _t(news.on_cut_card, P.DECIDING),
        "camera": _t(dealing.on_cross_check, P.DECIDING, P.PAUSED),
        "cards_lost": _t(pausing.on_cards_lost, P.DECIDING, P.PAUSED),
        "shoe_fault": _t(pausing.on_shoe_fault, P.PAUSED),
        "shoe_offline": _t(pausing.on_shoe_offline, P.PAUSED),
        "started": _t(pausing.on_started, P.PAUSED),
        "command.cancel": _t(commands.on_cancel, *AFTER_ROUND),
    },
    P.PAUSED: {
        "card": _t(pausing.on_card_while_paused, P.PAUSED),
        "misread": _t(pausing.on_card_while_paused, P.PAUSED),
        "cut_card": _t(news.on_cut_card, P.PAUSED),
        "camera": _t(dealing.on_cross_check, P.PAUSED),
        "cards_lost": _t(pausing.on_paused_notice, P.PAUSED),
        "shoe_fault": _t(pausing.on_paused_notice, P.PAUSED),
        "shoe_offline": _t(pausing.on_shoe_offline, P.PAUSED),
        "started": _t(pausing.on_started, P.PAUSED),
        "command.resume": _t(resuming.on_resume, *resuming.RESUME_TARGETS),
        "command.cancel": _t(commands.on_cancel, *AFTER_ROUND),
        "command.end_shoe": _t(commands.on_end_shoe, P.AWAITING_SHUFFLE),
    },
}


def _build() -> Mapping[Phase, Mapping[str, Transition]]:
    """The table, checked: a row for every phase, one entry for each (phase, kind)."""
    table: dict[Phase, Mapping[str, Transition]] = {}
    for phase in Phase:
        always, own = _in_every_phase(phase), _BY_PHASE[phase]
        twice = always.keys() & own.keys()
        if twice:
            raise AssertionError(f"{phase.name} has two entries for {sorted(twice)}")
        table[phase] = MappingProxyType({**always, **own})
    return MappingProxyType(table)


TRANSITIONS: Final[Mapping[Phase, Mapping[str, Transition]]] = _build()


def transition_for(phase: Phase, kind: str) -> Transition:
    """The entry for ``kind`` in ``phase``; :class:`NotAccepted` if the table has none."""
    try:
        return TRANSITIONS[phase][kind]
    except KeyError:
        raise NotAccepted(phase, kind) from None


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
    ControllerStopping: "stopping",
    DealerSignedIn: "dealer_sign_in",
    DealerSignedOut: "dealer_sign_out",
    CardPictured: "picture",
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
