"""The table's transitions, as data: every (phase, event kind) the machine accepts.

Like h11's ``_state.py``, the transitions are a table: :data:`TRANSITIONS` maps each phase to
the kinds of event it accepts, the handler that takes them and the phases the handler may
lead to. :data:`RESUMES` is the second table, the one a supervisor's ``resume`` is looked
up in: per machine revision, (pause kind, resolution) -> the function that carries it out or
the refusal, and the phases it may lead to. ``docs/table.md`` draws its state diagram and
prints the resume table from these (a test checks they agree). :func:`event_kind` and
:func:`pause_kind` file an event and a pause under their kinds. Nothing here changes a state: the
handlers named are functions of ``controller/table/`` (``dealing.py``, ``pausing.py``,
``resuming.py``), which :class:`~controller.table.machine.TableMachine` dispatches to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
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
from controller.table.state import RESOLUTIONS, Pause, Phase, TableState

P = Phase

MACHINE_REVISION: Final = 5
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
leaves the shoe empty ends it."""


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
    # In PAUSED too: refused before machine revision 5 ("already paused"), nested since.
    "command.pause": lambda phase: _t("on_pause_command", P.PAUSED),
}


# -- the resume table ----------------------------------------------------------------------
#
# A supervisor's ``resume`` names a resolution; what it does depends on what the pause is
# waiting for (its kind, :func:`pause_kind`) and on the revision the journal was written
# under. RESUMES[revision][(pause kind, resolution)] names the function of ``resuming.py``
# that carries it out (whose own checks may still refuse it: nothing held to burn, no card
# given) or the refusal, and the phases it may lead to.

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

    ``handler``: the function of ``resuming.py`` that carries the resolution out, or None:
    refused with ``refusal``. ``targets``: the phases it may lead to, besides, if
    ``returns``, the phase paused and wherever that phase goes on to (:data:`RETURNS`).
    ``one_of_several``: a resolution that leaves the pause needing more is applied alone and
    the table stays paused (else it is refused until the resolutions come together)."""

    handler: str | None
    targets: frozenset[Phase] = frozenset()
    returns: bool = False
    one_of_several: bool = False
    refusal: str = ""

    def leads_to(self, paused: Phase) -> frozenset[Phase]:
        """Every phase this resolution may lead to from a pause of the phase ``paused``."""
        return self.targets | RETURNS[paused] if self.returns else self.targets


_AFTER_ROUND: Final = (P.SHOE_READY, P.AWAITING_SHUFFLE)
_ADVANCE: Final = (P.DEALING, P.DECIDING, P.READING, *_AFTER_ROUND)

# Where the table goes when it returns to the phase it paused: that phase, or for a round
# waiting for a card, a decision or the camera, wherever the round goes next (a misread hole
# card the rules now need pauses it again).
RETURNS: Final[dict[Phase, frozenset[Phase]]] = {
    phase: frozenset((*_ADVANCE, P.PAUSED))
    if phase in (P.DEALING, P.DECIDING, P.READING)
    else frozenset({phase})
    for phase in Phase
    if phase is not P.PAUSED
}


def _r(handler: str, *targets: Phase, returns: bool = False) -> Resume:
    return Resume(handler, frozenset(targets), returns)


def _refused(message: str) -> Resume:
    return Resume(None, refusal=message)


_NOTHING: Final = _r("resume_as_paused", returns=True)
_BURN: Final = _r("burn_held", returns=True)
_CONFIRM: Final = _r("confirm_no_cards", returns=True)
_ACCEPT_ONE: Final = _r("accept_one", *_ADVANCE, P.PAUSED)
# A card entered by hand goes where the round expects it (for a misread burn card: the
# burn), and the round goes on.
_ENTER_UNREAD: Final = _r("enter_unread", P.BURNING, *_ADVANCE, P.PAUSED)
_ENTER_IDLE: Final = _r("enter_idle_card", *_ADVANCE, P.PAUSED)
# The table stays paused for the next card that may have left unseen, unless the card
# ended the round's need for cards.
_ENTER_OFFLINE: Final = _r("enter_offline_card", P.PAUSED, P.DECIDING, P.READING, *_AFTER_ROUND)
_NOT_OFFLINE: Final = _refused("the shoe was not offline while cards were due")
# The round cannot be completed from this shoe: a supervisor cancels it. (No pause of an
# older revision is of this kind: its rows are the same in every revision.)
_SHOE_EMPTY: Final = _refused("no card is left in the shoe for this round: cancel it")

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
    ("other", "enter_card"): _refused("no card is waiting to be entered by hand"),
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
        (kind, "accept"): _r("accept_held", *_ADVANCE, P.PAUSED)
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
    "dismiss_unread", frozenset({P.DEALING, P.PAUSED}), returns=True, one_of_several=True
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
    # outlasts the resolution keeps the table paused (``resuming.on_resume``).
    5: _RESUMES_5,
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
        "timer.betting": _t("on_betting_closed", P.DEALING, P.DECIDING, P.PAUSED),
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
        "command.resume": _t("on_resume", *RESUME_TARGETS),
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
                cells.append(f"`{resume.handler}`{several}")
            shown = f"`{resolution}`" if resolution else "(none)"
            lines.append(f"| `{kind}` | {shown} | {' | '.join(cells)} |")
    lines += ["", "| resolution carried out by | one of several | may lead to |", "|---|---|---|"]
    for resume in outcomes:
        leads = sorted(phase.name for phase in resume.targets)
        if resume.returns:
            leads.insert(0, "back")
        several = "yes" if resume.one_of_several else "no"
        lines.append(f"| `{resume.handler}` | {several} | {', '.join(leads)} |")
    rounds = sorted(phase.name for phase in RETURNS if RETURNS[phase] != {phase})
    onwards = sorted(phase.name for phase in RETURNS[P.DEALING])
    lines += [
        "",
        f"back: the phase paused; from {', '.join(rounds)}, wherever the round goes on to "
        f"({', '.join(onwards)}). One of several: a resolution that leaves the pause needing "
        "more is applied, and the table stays paused for the rest.",
    ]
    return "\n".join(lines)
