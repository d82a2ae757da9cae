"""The transition table is plain data, built once: function references, one entry per
(phase, event kind), read-only, and a missing pair is an explicit error."""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path

import pytest

from controller.table import commands, dealing, news, pausing, resuming
from controller.table.config import TableConfig
from controller.table.effects import CommandAnswered
from controller.table.events import SupervisorCommanded
from controller.table.machine import TableMachine
from controller.table.state import Phase
from controller.table.transitions import TRANSITIONS, NotAccepted, transition_for

HANDLER_MODULES = (commands, news, dealing, pausing, resuming)


def test_every_entry_holds_a_handler_function_of_the_handler_modules() -> None:
    modules = {module.__name__ for module in HANDLER_MODULES}
    for row in TRANSITIONS.values():
        for transition in row.values():
            handler = transition.handler
            assert inspect.isfunction(handler), handler
            assert handler.__module__ in modules, handler
            assert list(inspect.signature(handler).parameters) == ["ctx", "state", "event"]


def test_a_missing_pair_is_an_error_naming_the_phase_and_the_kind() -> None:
    assert "command.resume" not in TRANSITIONS[Phase.SHOE_READY]
    with pytest.raises(NotAccepted, match=r"not accepted in SHOE_READY \(command\.resume\)"):
        transition_for(Phase.SHOE_READY, "command.resume")
    assert transition_for(Phase.PAUSED, "command.resume").handler is resuming.on_resume


def test_the_machine_answers_a_missing_pair_and_changes_nothing() -> None:
    config = TableConfig(table_id="t", game="baccarat", journal_path=Path(":memory:"))
    machine = TableMachine(config)
    before = machine.snapshot()
    (effect,) = machine.handle(SupervisorCommanded("c", "resume", "sam", "supervisor", 1.0))
    assert isinstance(effect, CommandAnswered) and not effect.ok
    assert effect.message == "the table is not paused (it is AWAITING_SHUFFLE)"
    assert machine.snapshot() == before


def test_the_table_cannot_be_changed_after_it_is_built() -> None:
    row = TRANSITIONS[Phase.PAUSED]
    entry = row["command.pause"]
    with pytest.raises(TypeError):
        del row["command.pause"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        row["command.pause"] = replace(entry, targets=frozenset())  # type: ignore[index]
    with pytest.raises(TypeError):
        TRANSITIONS[Phase.PAUSED] = {}  # type: ignore[index]
    assert TRANSITIONS[Phase.PAUSED]["command.pause"] is entry
