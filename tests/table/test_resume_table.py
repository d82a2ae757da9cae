"""The resume table (``RESUMES``): complete for every revision, every cell's function
exists, and a resume leads only where its cell says."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from controller.kernel.cards import parse_card
from controller.table import resuming
from controller.table.config import TableConfig
from controller.table.effects import CommandAnswered, EventRejected
from controller.table.events import (
    CardDrawn,
    SupervisorCommanded,
)
from controller.table.machine import MACHINE_REVISION, TableMachine
from controller.table.resuming import (
    PAUSE_KINDS,
    RESUME_TARGETS,
    RESUMES,
    RETURNS,
    pause_kind,
)
from controller.table.state import RESOLUTIONS, Pause, PauseReason, Phase
from controller.table.transitions import TRANSITIONS


def test_every_revision_has_a_cell_for_every_pause_kind_and_resolution() -> None:
    assert set(RESUMES) == set(range(1, MACHINE_REVISION + 1))
    for table in RESUMES.values():
        assert set(table) == {(kind, r) for kind in PAUSE_KINDS for r in RESOLUTIONS}


def test_every_cell_names_a_resolution_function_or_a_refusal() -> None:
    for table in RESUMES.values():
        for resume in table.values():
            if resume.handler is None:
                assert resume.refusal and not resume.targets and not resume.returns
            else:
                assert callable(resume.handler)
                assert not resume.refusal


def test_a_resume_leads_only_to_the_phases_the_resume_table_allows() -> None:
    targets = TRANSITIONS[Phase.PAUSED]["command.resume"].targets
    assert targets == RESUME_TARGETS
    assert targets == {
        phase
        for table in RESUMES.values()
        for r in table.values()
        for p in RETURNS
        for phase in r.leads_to(p)
    }
    # Only a resolution that deals no card goes back to the phase paused.
    for table in RESUMES.values():
        for resume in table.values():
            assert resume.returns == (
                resume.handler
                in (
                    resuming.resume_as_paused,
                    resuming.burn_held,
                    resuming.confirm_no_cards,
                    resuming.dismiss_unread,
                )
            )


def test_the_revisions_differ_where_the_machine_revisions_say() -> None:
    changed = {
        revision: {
            key for key in RESUMES[revision] if RESUMES[revision][key] != RESUMES[revision - 1][key]
        }
        for revision in range(2, MACHINE_REVISION + 1)
    }
    # A shoe_empty pause is refused every resolution in every revision (only revision 5
    # makes one); revision 5 changed how pauses nest, and lets no_cards_drawn dismiss an
    # unread card that was none.
    kinds = set(PAUSE_KINDS) - {"shoe_empty"}
    assert changed[2] == set()
    assert changed[3] == {(k, r) for k in kinds for r in ("burn", "no_cards_drawn")} - {
        ("idle_gap", "no_cards_drawn"),
        ("other", "no_cards_drawn"),
    }
    assert changed[4] == {(k, "accept") for k in kinds}
    assert changed[5] == {("unread", "no_cards_drawn")}


@pytest.mark.parametrize(
    ("pause", "kind"),
    [
        (Pause(PauseReason.MISREAD, "", Phase.DEALING, unread="box1"), "unread"),
        (Pause(PauseReason.MISREAD, "", Phase.DEALING, unread="x", offline_gap=True), "unread"),
        (Pause(PauseReason.SHOE_OFFLINE, "", Phase.DEALING, offline_gap=True), "shoe_gap"),
        (
            Pause(PauseReason.SHOE_OFFLINE, "", Phase.DEALING, offline_gap=True, idle_gap=True),
            "shoe_gap",
        ),
        (Pause(PauseReason.DEALER_IDLE, "", Phase.DEALING, idle_gap=True), "idle_gap"),
        (Pause(PauseReason.CARD_OUT_OF_TURN, "", Phase.BETTING, held=(None,)), "other"),
        (Pause(PauseReason.SUPERVISOR, "", Phase.SHOE_READY), "other"),
    ],
)
def test_the_pause_kind_is_the_first_that_fits(pause: Pause, kind: str) -> None:
    assert pause_kind(pause) == kind


def test_a_resume_that_leads_elsewhere_than_its_cell_says_is_refused_and_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A function that went somewhere its cell does not list is a bug: the machine refuses
    the command (an internal error) and keeps its state, as for a row of TRANSITIONS."""
    config = TableConfig(table_id="t", game="baccarat", journal_path=Path(":memory:"))
    machine = TableMachine(config)

    def command(name: str, **fields: object) -> SupervisorCommanded:
        return SupervisorCommanded("c", name, "sam", "supervisor", 1.0, **fields)  # type: ignore[arg-type]

    machine.handle(command("new_shoe"))
    machine.handle(CardDrawn(parse_card("5S"), None, 2.0))  # burn 5
    for number in range(5):
        machine.handle(CardDrawn(parse_card("2H"), None, 3.0 + number))
    assert machine.state.phase is Phase.SHOE_READY
    machine.handle(command("pause", reason="a break"))
    assert machine.state.phase is Phase.PAUSED
    before = machine.snapshot()

    def to_betting(ctx, state, event, pause, resume):  # type: ignore[no-untyped-def]
        state.pause = None
        state.phase = Phase.BETTING
        return []

    # The plain resume's cell, carried out by a function that goes where the cell says not.
    cell = ("other", "")
    assert RESUMES[MACHINE_REVISION][cell].handler is resuming.resume_as_paused
    wrong = {cell: replace(RESUMES[MACHINE_REVISION][cell], handler=to_betting)}
    rows = {**RESUMES, MACHINE_REVISION: {**RESUMES[MACHINE_REVISION], **wrong}}
    monkeypatch.setattr(resuming, "RESUMES", rows)
    effects = machine.handle(command("resume"))
    assert isinstance(effects[0], EventRejected) or (
        isinstance(effects[0], CommandAnswered) and not effects[0].ok
    )
    assert "internal error" in str(effects[0])
    assert machine.snapshot() == before
    monkeypatch.undo()
    effects = machine.handle(command("resume"))
    assert isinstance(effects[0], CommandAnswered) and effects[0].ok
    assert machine.state.phase is Phase.SHOE_READY
