"""docs/table.md is checked against the transition table it describes."""

from __future__ import annotations

import re
from pathlib import Path

from controller.table.resuming import resume_table
from controller.table.state import PauseReason, Phase
from controller.table.transitions import TRANSITIONS, mermaid_diagram

DOC = Path(__file__).resolve().parents[2] / "docs" / "table.md"


def test_the_state_diagram_is_the_one_generated_from_the_transition_table() -> None:
    text = DOC.read_text()
    match = re.search(
        r"<!-- BEGIN GENERATED DIAGRAM -->\n```mermaid\n(.*?)\n```\n<!-- END GENERATED DIAGRAM -->",
        text,
        re.S,
    )
    assert match, "docs/table.md lost its generated diagram"
    assert match.group(1) == mermaid_diagram()


def test_the_resume_table_is_the_one_generated_from_the_resume_decisions() -> None:
    text = DOC.read_text()
    match = re.search(
        r"<!-- BEGIN GENERATED RESUME TABLE -->\n(.*?)\n<!-- END GENERATED RESUME TABLE -->",
        text,
        re.S,
    )
    assert match, "docs/table.md lost its generated resume table"
    assert match.group(1) == resume_table()


def test_every_phase_has_a_row_and_every_pause_reason_is_documented() -> None:
    text = DOC.read_text()
    assert set(TRANSITIONS) == set(Phase)
    for reason in PauseReason:
        assert f"| `{reason.value}` |" in text, reason


def test_every_handler_in_the_table_exists() -> None:
    for row in TRANSITIONS.values():
        for transition in row.values():
            assert callable(transition.handler)
