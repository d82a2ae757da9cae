"""``livetable ctl`` offers the API's commands as its one list declares them
(``controller/kernel/api_commands.py``): an action for each command (or a stated reason why
not), with the list's help; it sends no command the list lacks; and the operations guide's
table of actions is its actions.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from controller.kernel.api_commands import ACTING_COMMANDS, COMMANDS, ROLES
from controller.tools import ctl
from controller.tools.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
CTL_SOURCES = sorted((ROOT / "controller" / "tools").glob("ctl*.py"))
OPERATIONS = ROOT / "docs" / "operations.md"
# Where ctl names a command it sends: ``_command(args, client, "pause", ...)``,
# ``_ask(args, client, "audit", ...)``.
SENDS = re.compile(r"\b_(?:command|ask)\(\s*args,\s*client,\s*\"(\w+)\"")


def ctl_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices["ctl"]


def ctl_actions() -> dict[str, argparse.ArgumentParser]:
    (actions,) = [a for a in ctl_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions.choices)


def ctl_help() -> dict[str, str]:
    (actions,) = [a for a in ctl_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {choice.dest: choice.help for choice in actions._choices_actions}


def test_every_command_is_an_action_of_ctl_or_says_why_not() -> None:
    actions = ctl_actions()
    for name, command in COMMANDS.items():
        if name in ctl.NOT_OFFERED:
            assert command.ctl_action not in actions, f"{name}: offered after all"
            assert ctl.NOT_OFFERED[name].strip(), name
        else:
            assert command.ctl_action in actions, f"ctl offers no {command.ctl_action}"
    assert set(ctl.NOT_OFFERED) <= set(COMMANDS)
    # Its other actions (following the table, a round's story) are its own, in its words.
    others = set(actions) - {command.ctl_action for command in COMMANDS.values()}
    assert others <= set(ctl.OWN_ACTIONS) <= set(actions)


def test_each_action_says_what_its_command_does_in_the_lists_words() -> None:
    helps = ctl_help()
    for name, command in COMMANDS.items():
        if command.ctl_action in helps and name not in ctl.OWN_ACTIONS:
            assert helps[command.ctl_action] == command.help, name


def test_ctl_sends_only_the_lists_commands_and_waits_for_an_online_table_to_act() -> None:
    sent = {name for path in CTL_SOURCES for name in SENDS.findall(path.read_text())}
    assert sent, "no command found: the pattern no longer matches ctl's source"
    assert sent <= set(COMMANDS), sorted(sent - set(COMMANDS))
    assert ctl.ACTING == ACTING_COMMANDS
    (role,) = [a for a in ctl_parser()._actions if a.dest == "role"]
    assert sorted(role.choices) == sorted(ROLES)  # type: ignore[arg-type]


def test_the_operations_guide_lists_every_action_and_what_it_sends() -> None:
    lines = OPERATIONS.read_text().splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith("| action | what it sends |")]
    documented: dict[str, str] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        action, sends, _when = re.split(r"(?<!\\)\|", line.strip("|"))
        documented[re.match(r"\s*`([\w-]+)", action).group(1)] = sends  # type: ignore[union-attr]
    assert set(documented) == set(ctl_actions())
    for name, command in COMMANDS.items():
        if command.ctl_action in documented and name not in ctl.OWN_ACTIONS:
            assert f"`{name}`" in documented[command.ctl_action], name


def test_the_operations_guide_names_the_commands_ctl_has_no_action_for() -> None:
    (said,) = re.findall(r"ctl has no action for (.*?)\n\n", OPERATIONS.read_text(), re.S)
    named = {word for word in re.findall(r"`(\w+)`", said) if word in COMMANDS}
    assert named == set(ctl.NOT_OFFERED)
