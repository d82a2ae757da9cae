"""Every command of the API's one list (``controller/kernel/api_commands.py``) that acts
becomes a journaled table event that the table's transition table takes in some phase: a
command added to the list without a way into the table fails here, not on a table."""

from __future__ import annotations

import json

import pytest

from controller.kernel.api_commands import ACTING_COMMANDS, COMMANDS
from controller.service.mqtt_api import parse_request, table_event
from controller.table.config import TableConfig
from controller.table.events import SUPERVISOR_COMMANDS, SupervisorCommanded
from controller.table.machine import TableMachine
from controller.table.transitions import TRANSITIONS, event_kind

# A valid value of each text field a command requires (any integer 1 will do).
TEXT = {"reason": "spilled drink", "card": "KH", "staff_id": "D-1043", "kind": "play",
        "decision": "H"}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ACTING_COMMANDS))
def test_an_acting_command_has_a_transition_in_some_phase(name: str) -> None:
    command = COMMANDS[name]
    body = {"transaction": "t1"} | {
        field.name: TEXT[field.name] if field.kind is str else 1
        for field in command.fields
        if field.required
    }
    role = sorted(command.roles)[0]
    request = parse_request(
        f"livetable/t1/request/{role}/someone/{name}", json.dumps(body).encode(), "livetable", "t1"
    )
    event = table_event(request, "c1", 1.0)
    if isinstance(event, SupervisorCommanded):
        assert event.command in SUPERVISOR_COMMANDS, name
    kind = event_kind(TableMachine(TableConfig(table_id="t1")).state, event)
    assert any(kind in transitions for transitions in TRANSITIONS.values()), (name, kind)
