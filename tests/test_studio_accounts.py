"""The studio's accounts described once (controller/tools/studio_accounts.py) and what is made of
them: a mosquitto ACL that grants exactly what the shipped systemd/mosquitto/livetable.acl
grants, NATS subjects as nats-server names MQTT topics, and ``livetable studio accounts``.
The NATS authorisation is tried on a real cluster in tests/nats/test_identity.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.kernel.errors import ConfigurationError
from controller.tools.cli import main
from controller.tools.studio_accounts import (
    load_accounts,
    mosquitto_acl,
    nats_authorization,
    nats_permissions,
    nats_subjects,
    parse_accounts,
    password_variable,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
SHIPPED_ACL = REPO_ROOT / "systemd" / "mosquitto" / "livetable.acl"
SHIPPED_ACCOUNTS = REPO_ROOT / "systemd" / "nats" / "studio.toml"

Grant = tuple[str, str, str]  # (user, read/write, topic filter)


def acl_grants(text: str) -> set[Grant]:
    """Every (user, access, topic) a mosquitto acl_file grants, its ``pattern`` lines
    written out for each of its users (``%u`` being the user)."""
    patterns: list[tuple[str, str]] = []
    grants: set[Grant] = set()
    users: list[str] = []
    user: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word == "user":
            user = rest.strip()
            users.append(user)
        elif word in ("topic", "pattern"):
            access, _, topic = rest.strip().partition(" ")
            assert access in ("read", "write") and topic, f"an ACL line not understood: {raw}"
            if word == "pattern":
                patterns.append((access, topic))
            else:
                assert user is not None, f"a topic line before any user: {raw}"
                grants.add((user, access, topic))
        else:
            raise AssertionError(f"an ACL line not understood: {raw}")
    for name in users:
        grants |= {(name, access, topic.replace("%u", name)) for access, topic in patterns}
    return grants


def test_the_generated_acl_grants_exactly_what_the_shipped_acl_grants() -> None:
    shipped = acl_grants(SHIPPED_ACL.read_text())
    generated = acl_grants(mosquitto_acl(load_accounts(SHIPPED_ACCOUNTS)))
    assert len(shipped) > 30  # the parse found the shipped blocks
    assert generated - shipped == set(), "granted beyond the shipped ACL"
    assert shipped - generated == set(), "the shipped ACL grants more"


def test_the_generated_acl_keeps_each_account_to_its_own_requests() -> None:
    grants = acl_grants(mosquitto_acl(load_accounts(SHIPPED_ACCOUNTS)))
    writes = {(user, topic) for user, access, topic in grants if access == "write"}
    assert ("alice", "livetable/+/request/supervisor/alice/#") in writes
    assert not any(user == "alice" and "bob" in topic for user, topic in writes)
    assert ("viewer", "livetable/+/request/viewer/viewer/#") in writes
    # Only the table's account writes the table's topics.
    assert {user for user, topic in writes if topic.split("/")[2] != "request"} == {
        "livetable-t1",
        "livetable-t2",
    }


@pytest.mark.parametrize(
    ("topic", "subjects"),
    [
        ("livetable/t1/state", ["livetable.t1.state"]),
        ("livetable/+/state", ["livetable.*.state"]),
        ("livetable/t1/#", ["livetable.t1", "livetable.t1.>"]),
        (
            "livetable/+/request/supervisor/carol.smith/#",
            [
                "livetable.*.request.supervisor.carol//smith",
                "livetable.*.request.supervisor.carol//smith.>",
            ],
        ),
    ],
)
def test_topic_filters_become_the_subjects_nats_server_checks(
    topic: str, subjects: list[str]
) -> None:
    assert nats_subjects(topic) == subjects


def test_the_nats_permissions_of_each_role() -> None:
    studio = load_accounts(SHIPPED_ACCOUNTS)
    by_name = {account.name: account for account in studio.accounts}
    table = nats_permissions(studio, by_name["livetable-t1"])
    assert table.publish == ("livetable.t1", "livetable.t1.>")
    assert set(table.subscribe) == {
        "livetable.t1.request",
        "livetable.t1.request.>",
        "livetable.*.response.livetable-t1",
        "livetable.*.response.livetable-t1.>",
        "$MQTT.sub.>",
    }
    platform = nats_permissions(studio, by_name["platform"])
    assert platform.publish == (
        "livetable.*.request.platform.platform",
        "livetable.*.request.platform.platform.>",
    )
    assert "livetable.*.dealer" not in platform.subscribe
    assert "livetable.*.dealer" in nats_permissions(studio, by_name["viewer"]).subscribe
    text = nats_authorization(studio)
    assert text.count('allowed_connection_types: ["MQTT"]') == len(studio.accounts)
    assert f"password: ${password_variable('alice')}" in text


def test_accounts_limited_to_some_tables() -> None:
    studio = parse_accounts(
        '[[account]]\nname = "pit-boss"\nrole = "supervisor"\ntables = ["t1", "t3"]\n'
    )
    acl = acl_grants(mosquitto_acl(studio))
    assert ("pit-boss", "write", "livetable/t3/request/supervisor/pit-boss/#") in acl
    assert ("pit-boss", "read", "livetable/t1/dealer") in acl
    assert not any("/+/" in topic and "response" not in topic for _u, _a, topic in acl)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "no [[account]]"),
        ('[[account]]\nname = "x"\nrole = "admin"\n', "role 'admin' is not one of"),
        ('[[account]]\nname = "t"\nrole = "table"\n', "a table account names its tables"),
        ('[[account]]\nname = "a/b"\nrole = "viewer"\n', "is not an account name"),
        ('[[account]]\nname = "a+"\nrole = "viewer"\n', "is not an account name"),
        ('[[account]]\nname = "v"\nrole = "viewer"\ntables = ["#"]\n', "tables must be"),
        ('[[account]]\nname = "v"\nrole = "viewer"\npassword = "x"\n', "unknown key(s) password"),
        (
            '[[account]]\nname = "v"\nrole = "viewer"\n[[account]]\nname = "v"\nrole = "viewer"\n',
            "account(s) named twice: v",
        ),
        (
            '[[account]]\nname = "a-b"\nrole = "viewer"\n[[account]]\nname = "a_b"\n'
            'role = "viewer"\n',
            "would share the password variable LIVETABLE_PASSWORD_A_B",
        ),
        ("[[account]\n", "not TOML"),
    ],
)
def test_a_bad_description_is_refused_saying_why(text: str, complaint: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        parse_accounts(text, "studio.toml")
    assert complaint in str(raised.value)
    assert str(raised.value).startswith("studio.toml")


def test_the_command_writes_both_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    acl, users = tmp_path / "livetable.acl", tmp_path / "livetable-users.conf"
    status = main(
        [
            "studio",
            "accounts",
            "--accounts",
            str(SHIPPED_ACCOUNTS),
            "--mosquitto-acl",
            str(acl),
            "--nats",
            str(users),
        ]
    )
    assert status == 0
    assert acl_grants(acl.read_text()) == acl_grants(SHIPPED_ACL.read_text())
    assert users.read_text() == nats_authorization(load_accounts(SHIPPED_ACCOUNTS), "studio.toml")
    assert capsys.readouterr().out.count("6 account(s)") == 2


def test_the_command_writes_nothing_from_a_bad_description(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    accounts = tmp_path / "studio.toml"
    accounts.write_text('[[account]]\nname = "x"\nrole = "root"\n')
    acl = tmp_path / "livetable.acl"
    acl.write_text("user kept\n")
    status = main(["studio", "accounts", "--accounts", str(accounts), "--mosquitto-acl", str(acl)])
    assert status == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "role 'root' is not one of" in error
    assert acl.read_text() == "user kept\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["livetable.acl", "studio.toml"]
