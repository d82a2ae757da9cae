"""The studio's accounts described once (controller/tools/studio_accounts.py) and what is made of
them: a mosquitto ACL that grants exactly what the shipped systemd/mosquitto/livetable.acl
grants, NATS subjects as nats-server names MQTT topics, the client ids kept to one account,
the nodes' authorization block, and ``livetable studio accounts``. The NATS authorisation is
tried on a real cluster in tests/nats/test_identity.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.kernel.errors import ConfigurationError
from controller.tools.cli import main
from controller.tools.studio_accounts import (
    client_id_owners,
    client_id_refusal,
    load_accounts,
    mosquitto_acl,
    nats_authorization,
    nats_permissions,
    nats_subjects,
    parse_accounts,
    password_variable,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_ACL = REPO_ROOT / "systemd" / "mosquitto" / "livetable.acl"
SHIPPED_ACCOUNTS = REPO_ROOT / "systemd" / "nats" / "studio.toml"
# An account nkey's public half, as `livetable studio callout-key` prints one.
ISSUER = "ABJHLOVMPA4CI6R5KLNGOB4GSLNIY7IOUPAJC4YFNDLQVIOBYQGUWVLA"

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


def test_the_nodes_hand_every_account_to_the_callout() -> None:
    studio = load_accounts(SHIPPED_ACCOUNTS)
    text = nats_authorization(studio, ISSUER)
    assert f'issuer: "{ISSUER}"' in text
    assert 'auth_users: ["livetable-auth-callout"]' in text
    # The only user the nodes check themselves is the callout's, NATS protocol only, which
    # reads the requests and answers them and publishes nothing else.
    assert text.count("user:") == 1
    assert 'allowed_connection_types: ["STANDARD"]' in text
    assert 'subscribe: { allow: ["$SYS.REQ.USER.AUTH"] }' in text
    assert 'publish: { deny: [">"] }' in text
    assert password_variable("alice") not in text


def test_the_client_ids_kept_to_one_account() -> None:
    studio = load_accounts(SHIPPED_ACCOUNTS)
    owners = client_id_owners(studio)
    # The daemons' default client ids (controller/service/config.py: livetable-<table id>).
    assert owners["livetable-t1"] == "livetable-t1" and owners["livetable-t2"] == "livetable-t2"
    assert owners["alice"] == "alice" and owners["viewer"] == "viewer"
    assert client_id_refusal(studio, "viewer", "livetable-t1") == (
        "the client id 'livetable-t1' is 'livetable-t1''s, not 'viewer''s"
    )
    assert client_id_refusal(studio, "livetable-t2", "livetable-t1") is not None
    assert client_id_refusal(studio, "bob", "alice") is not None
    assert client_id_refusal(studio, "livetable-t1", "livetable-t1") is None
    assert client_id_refusal(studio, "viewer", "viewer-wall-3") is None
    # A table account not named after its daemon's client id keeps both.
    studio = parse_accounts('[[account]]\nname = "pit-7"\nrole = "table"\ntables = ["t7", "t8"]\n')
    assert client_id_owners(studio) == {
        "pit-7": "pit-7",
        "livetable-t7": "pit-7",
        "livetable-t8": "pit-7",
    }


def test_the_default_client_id_of_a_daemon_is_the_one_kept_for_its_table() -> None:
    from controller.service.config import mqtt_config_from_mapping

    default = mqtt_config_from_mapping({}, "t9", check_files=False).client_id
    studio = parse_accounts('[[account]]\nname = "x"\nrole = "table"\ntables = ["t9"]\n')
    assert client_id_owners(studio)[default] == "x"


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
        (
            '[[account]]\nname = "livetable-t1"\nrole = "viewer"\n[[account]]\nname = "d"\n'
            'role = "table"\ntables = ["t1"]\n',
            "the client id 'livetable-t1' would be both 'livetable-t1''s and 'd''s",
        ),
        (
            '[[account]]\nname = "livetable-auth-callout"\nrole = "viewer"\n',
            "is the NATS auth callout's own user",
        ),
    ],
)
def test_a_bad_description_is_refused_saying_why(text: str, complaint: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        parse_accounts(text, "studio.toml")
    assert complaint in str(raised.value)
    assert str(raised.value).startswith("studio.toml")


def test_the_command_writes_both_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    acl, users = tmp_path / "livetable.acl", tmp_path / "livetable-users.conf"
    key = tmp_path / "auth-callout.nk"
    assert main(["studio", "callout-key", str(key)]) == 0
    public_key = capsys.readouterr().out.strip()
    assert public_key.startswith("A") and len(public_key) == 56
    assert key.stat().st_mode & 0o777 == 0o600
    assert key.read_text().startswith("SA")
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
            "--callout-key",
            str(key),
        ]
    )
    assert status == 0
    assert acl_grants(acl.read_text()) == acl_grants(SHIPPED_ACL.read_text())
    assert users.read_text() == nats_authorization(
        load_accounts(SHIPPED_ACCOUNTS), public_key, "studio.toml"
    )
    assert capsys.readouterr().out.count("7 account(s)") == 2


def test_a_callout_key_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "auth-callout.nk"
    key.write_text("SAkept\n")
    assert main(["studio", "callout-key", str(key)]) == 1
    assert "exists" in capsys.readouterr().err
    assert key.read_text() == "SAkept\n"


def test_nats_without_a_callout_key_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    users = tmp_path / "livetable-users.conf"
    argv = ["studio", "accounts", "--accounts", str(SHIPPED_ACCOUNTS), "--nats", str(users)]
    assert main(argv) == 1
    assert "--callout-key" in capsys.readouterr().err
    assert not users.exists()


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
