"""The documents and shipped files that name the API's commands name exactly those of its one
list (``controller/kernel/api_commands.py``), with the same roles and fields: adding,
renaming or regranting a command there fails here until each of them says so too.

``docs/asyncapi.yaml``'s channels and request schemas are checked against the list by
``tests/daemon/test_api_schema.py``; the console's and ``ctl``'s by their own tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from controller.client.studio_client import PROBE_TABLE
from controller.kernel.api_commands import ACTING_COMMANDS, COMMANDS, READ_COMMANDS, ROLES
from controller.tools.studio_accounts import Account, Studio, account_rules

ROOT = Path(__file__).resolve().parents[2]
MQTT_API = ROOT / "docs" / "mqtt-api.md"
ASYNCAPI = ROOT / "docs" / "asyncapi.yaml"
SHIPPED_ACL = ROOT / "systemd" / "mosquitto" / "livetable.acl"
IN_BACKTICKS = re.compile(r"`([^`\n]+)`")
# The console's role probe: a dealer station's ``status`` to a table no daemon reads, which
# tells the console the account's role (the API's list has no command for it).
PROBE = f"`status` to the table `{PROBE_TABLE}`"


def table_rows(text: str, header: str) -> list[list[str]]:
    """The cells of each row of the Markdown table whose header line starts ``header``."""
    lines = text.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith(header)]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        # A cell may hold an escaped bar (``accept\|burn``); none of these tables does today.
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_commands_table_lists_each_command_with_its_roles_and_fields() -> None:
    rows = table_rows(MQTT_API.read_text(), "| command | roles | fields")
    documented = [IN_BACKTICKS.fullmatch(row[0]).group(1) for row in rows]  # type: ignore[union-attr]
    assert documented == list(COMMANDS), "docs/mqtt-api.md's commands, in the list's order"
    for row in rows:
        command = COMMANDS[row[0].strip("`")]
        assert {role.strip() for role in row[1].split(",")} == command.roles, command.name
        named = set(IN_BACKTICKS.findall(row[2]))
        if command.fields:
            missing = command.field_names - named
            assert not missing, f"{command.name}: fields {sorted(missing)} not documented"
        else:
            assert row[2] == "none", f"{command.name} takes no field: {row[2]!r}"


def test_the_roles_table_lists_what_each_role_may_send() -> None:
    rows = table_rows(MQTT_API.read_text(), "| role | accounts in the shipped ACL |")
    may_send = {
        row[0].strip("`"): set(IN_BACKTICKS.findall(row[3].replace(PROBE, "")))
        for row in rows
        if row[0][0] == "`"
    }
    assert set(may_send) == set(ROLES)
    for role, named in may_send.items():
        assert named == {name for name, c in COMMANDS.items() if role in c.roles}, role


def test_the_reads_are_said_to_change_nothing() -> None:
    text = MQTT_API.read_text()
    (sentence,) = re.findall(r"^((?:`\w+`(?:, | and ))+`\w+`) read and change nothing", text, re.M)
    assert set(IN_BACKTICKS.findall(sentence)) == READ_COMMANDS


def test_the_audit_names_every_command_a_supervisor_gives() -> None:
    """An audit entry's ``command`` is one a supervisor's account may give that acts (and
    ``open_round``, which the platform gives too); ``decide`` is the platform's alone."""
    document = yaml.safe_load(ASYNCAPI.read_text())
    entry = document["components"]["schemas"]["AuditEntry"]
    audited = {name for name in ACTING_COMMANDS if "supervisor" in COMMANDS[name].roles}
    assert set(entry["properties"]["command"]["enum"]) == audited


def test_the_shipped_acl_lets_a_dealer_station_send_the_dealers_commands_only() -> None:
    dealer_writes = re.findall(
        r"^topic write livetable/t1/request/dealer/dealer-t1/(\S+)$", SHIPPED_ACL.read_text(), re.M
    )
    dealers = {name for name, command in COMMANDS.items() if "dealer" in command.roles}
    assert set(dealer_writes) == dealers
    studio = Studio(prefix="livetable", accounts=(Account("dealer-t1", "dealer", ("t1",)),))
    granted = {
        rule.topic.rsplit("/", 1)[-1]
        for rule in account_rules(studio, studio.accounts[0])
        if not rule.topic.startswith(f"livetable/{PROBE_TABLE}/")
    }
    assert dealers <= granted and not granted & (set(COMMANDS) - dealers)


def test_the_request_without_fields_names_the_commands_that_send_it() -> None:
    """Commands with no field but the transaction share one schema, whose description names
    exactly the messages that use it, each a command of the list without fields."""
    document = yaml.safe_load(ASYNCAPI.read_text())
    schema = document["components"]["schemas"]["NewShoeRequest"]
    named = {word for word in re.findall(r"\w+", schema["description"]) if word in COMMANDS}
    using = {
        message["name"]
        for message in document["components"]["messages"].values()
        if message.get("payload") == {"$ref": "#/components/schemas/NewShoeRequest"}
    }
    assert named == using
    assert all(not COMMANDS[name].fields for name in using)
