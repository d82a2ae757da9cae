"""The API's one list of commands: what a command declares, and what the list refuses to hold."""

from __future__ import annotations

import json

import pytest

from controller.kernel.api_commands import (
    ACTING_COMMANDS,
    COMMANDS,
    READ_COMMANDS,
    ROLES,
    Command,
    Field,
    commands_of,
)


def test_every_command_is_either_a_read_or_an_act() -> None:
    assert {"status", "events", "audit", "pictures"} == READ_COMMANDS
    assert set(COMMANDS) == READ_COMMANDS | ACTING_COMMANDS
    assert not READ_COMMANDS & ACTING_COMMANDS


def test_each_role_gives_some_command_and_a_dealer_only_signs_in_and_out() -> None:
    assert all(commands_of(role) for role in ROLES)
    assert commands_of("dealer") == ("dealer_sign_in", "dealer_sign_out")
    assert "decide" in commands_of("platform") and "decide" not in commands_of("supervisor")


def test_a_command_as_the_console_serves_it() -> None:
    shown = COMMANDS["cancel"].as_json()
    assert shown == {
        "name": "cancel",
        "roles": ["supervisor"],
        "fields": [
            {"name": "reason", "type": "string", "required": False},
            {"name": "round_id", "type": "integer", "required": False},
        ],
        "reads": False,
        "help": "void the round in play (every bet refunded, its cards discarded)",
    }
    json.dumps([command.as_json() for command in COMMANDS.values()])  # all plain JSON
    assert COMMANDS["end_shoe"].ctl_action == "end-shoe"


@pytest.mark.parametrize(
    ("make", "complaint"),
    [
        (lambda: Field("boxes", bool), "an int or a str"),
        (lambda: Field("at", float), "an int or a str"),
        (lambda: Command("x", frozenset({"croupier"}), "x"), "not of"),
        (lambda: Command("x", frozenset(), "x"), "not of"),
        (lambda: Command("x", frozenset({"viewer"}), "x", (Field("a", int), Field("a", str))),
         "repeat"),
        (lambda: Command("x", frozenset({"viewer"}), "x", (Field("transaction", str),)), "repeat"),
    ],
)
def test_a_command_the_api_could_not_carry_is_refused(make: object, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        make()  # type: ignore[operator]
