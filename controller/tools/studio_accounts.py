"""The studio's broker accounts, described once, and the broker authorisation made from them.

One TOML file names every account that logs in to the studio's broker, its role and, for a
table's daemon, its table::

    prefix = "livetable"          # optional: the tables' topic prefix

    [[account]]
    name = "livetable-t1"
    role = "table"
    tables = ["t1"]               # a table account: the table(s) whose daemon it is

    [[account]]
    name = "alice"
    role = "supervisor"           # platform, supervisor, viewer, dealer: every table
                                  # unless tables = [...] names some (a dealer station's
                                  # account names its table)

From it :func:`mosquitto_acl` writes a mosquitto ``acl_file`` and :func:`nats_authorization`
a nats-server ``authorization { users = [...] }`` block; both grant what the section
"Accounts, roles and identity" of docs/mqtt-api.md says (and systemd/mosquitto/livetable.acl
grants): an account publishes requests only under its own role and name, a table's topics are
published by the table's account only, an account reads its own responses only, supervisors
and viewers read availability, state, events and dealer, the platform availability, state and
events, a dealer station's account its table's availability, state and dealer.

nats-server checks NATS subjects, not MQTT topics: a topic's levels become a subject's tokens
(``/`` to ``.``, a ``.`` inside a level to ``//``), ``+`` becomes ``*``, and a trailing ``#``
(which also matches its parent level) becomes the parent subject and ``parent.>``. Each user
may also subscribe to ``$MQTT.sub.>``, where the server delivers a QoS 1 subscription's
messages: the NATS documentation's MQTT configuration page asks for it (2.15.1 delivers
without it, and refuses an MQTT client's subscription to ``$MQTT/...`` with it).

On NATS, who may connect at all is decided by ``livetable studio auth-callout``
(controller/tools/studio_auth_callout.py), which nats-server asks about every connection
(``auth_callout``): nats-server has no ``use_username_as_clientid``, so without it any
account could connect with a table's client id and close the table's connection. The block
:func:`nats_authorization` writes names that service's own user, and the public key the
service signs its answers with; the service answers each MQTT client with the permissions
:func:`nats_permissions` gives its account, and refuses a client id that
:func:`client_id_owners` reserves for another account. Passwords stay out of the
description: each is an environment variable (``$LIVETABLE_PASSWORD_ALICE``, the units'
EnvironmentFile, kept apart and readable by root only) that the service reads.

Pure: nothing here reads or writes anything but the description given to :func:`load_accounts`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from controller.client.studio_client import PROBE_TABLE
from controller.kernel.api_commands import ROLES as API_ROLES
from controller.kernel.api_commands import commands_of
from controller.kernel.errors import ConfigurationError

# The API's roles, and a table's own account.
ROLES = ("table", *API_ROLES)
# A dealer station's account signs a dealer in and out at its table(s), and does nothing else:
# exactly the commands the API lets the dealer role give.
_DEALER_REQUESTS = commands_of("dealer")
# What its screen reads of its table: never the events (the state and the dealer's line
# say all a dealer is shown).
_DEALER_READS = ("availability", "state", "dealer")
DEFAULT_PREFIX = "livetable"
# MQTT user names and table ids as docs/mqtt-api.md allows them: never '/', '+', '#', space.
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# What each role reads of every table it may see (the table reads its requests instead).
_PUBLIC_READS: dict[str, tuple[str, ...]] = {
    "platform": ("availability", "state", "events"),
    "supervisor": ("availability", "state", "events", "dealer"),
    "viewer": ("availability", "state", "events", "dealer"),
}
# The internal subjects a restricted MQTT user subscribes to: QoS 1 deliveries.
NATS_MQTT_INTERNAL_SUBSCRIBE = ("$MQTT.sub.>",)
ALL_TABLES = "+"
# The client id a table's daemon uses unless its configuration names another:
# controller/service/config.py defaults [mqtt] client_id to "livetable-<table id>".
TABLE_CLIENT_ID_PREFIX = "livetable-"
# The NATS user of ``livetable studio auth-callout`` (NATS protocol, not MQTT), and the
# environment variable holding its password; no account may be called so.
CALLOUT_USER = "livetable-auth-callout"
CALLOUT_PASSWORD_VARIABLE = "LIVETABLE_AUTH_CALLOUT_PASSWORD"
# nats-server's subject of the authorization requests it sends to the callout service.
CALLOUT_SUBJECT = "$SYS.REQ.USER.AUTH"
# How long a node waits for the callout's answer (the authorization block's ``timeout``, in
# seconds; nats-server's default is 2): a node just elected leader of the MQTT streams on a
# loaded host answers slowly, and a refused connection costs a client a reconnect.
CALLOUT_TIMEOUT_S = 5


@dataclass(frozen=True)
class Account:
    name: str
    role: str
    # The tables the account is for; (ALL_TABLES,) when it names none (not for a table).
    tables: tuple[str, ...]


@dataclass(frozen=True)
class Studio:
    prefix: str
    accounts: tuple[Account, ...]


@dataclass(frozen=True, order=True)
class Rule:
    """One grant: ``access`` ("read" or "write") of the MQTT topic filter ``topic``."""

    access: str
    topic: str


def _fail(source: str, message: str) -> ConfigurationError:
    return ConfigurationError(f"{source}: {message}")


def parse_accounts(text: str, source: str = "the accounts") -> Studio:
    """The studio described by ``text`` (TOML); ConfigurationError naming what is wrong."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _fail(source, f"not TOML: {error}") from error
    unknown = set(document) - {"prefix", "account"}
    if unknown:
        raise _fail(source, f"unknown key(s) {', '.join(sorted(unknown))} (prefix, account)")
    prefix = document.get("prefix", DEFAULT_PREFIX)
    if not isinstance(prefix, str) or not all(
        _NAME.fullmatch(level) for level in prefix.split("/")
    ):
        raise _fail(
            source, f"prefix {prefix!r} is not a topic prefix (levels of A-Z a-z 0-9 _ . -)"
        )
    entries = document.get("account", [])
    if not isinstance(entries, list) or not entries:
        raise _fail(source, "no [[account]]: the broker would let nobody in")
    accounts: list[Account] = []
    for number, entry in enumerate(entries, start=1):
        accounts.append(_account(entry, f"{source}: account {number}"))
    names = [account.name for account in accounts]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise _fail(source, f"account(s) named twice: {', '.join(repeated)}")
    variables: dict[str, str] = {}
    for account in accounts:
        variable = password_variable(account.name)
        if variable in variables:
            raise _fail(
                source,
                f"accounts {variables[variable]!r} and {account.name!r} would share the "
                f"password variable {variable}: rename one",
            )
        variables[variable] = account.name
    if CALLOUT_USER in names:
        raise _fail(source, f"{CALLOUT_USER!r} is the NATS auth callout's own user: rename it")
    studio = Studio(prefix, tuple(accounts))
    _check_client_ids(studio, source)
    return studio


def _account(entry: object, where: str) -> Account:
    if not isinstance(entry, dict):
        raise ConfigurationError(f"{where}: not a table of name, role, tables")
    unknown = set(entry) - {"name", "role", "tables"}
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))} (name, role, tables)"
        )
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigurationError(
            f"{where}: name {name!r} is not an account name (letters, digits, _ . -)"
        )
    role = entry.get("role")
    if role not in ROLES:
        raise ConfigurationError(
            f"{where} ({name}): role {role!r} is not one of {', '.join(ROLES)}"
        )
    tables = entry.get("tables")
    if tables is None:
        if role == "table":
            raise ConfigurationError(f"{where} ({name}): a table account names its tables")
        return Account(name, role, (ALL_TABLES,))
    if (
        not isinstance(tables, list)
        or not tables
        or not all(isinstance(table, str) and _NAME.fullmatch(table) for table in tables)
    ):
        raise ConfigurationError(
            f"{where} ({name}): tables must be a list of table ids (letters, digits, _ . -)"
        )
    if len(set(tables)) != len(tables):
        raise ConfigurationError(f"{where} ({name}): a table named twice in tables")
    return Account(name, str(role), tuple(tables))


def _table_client_ids(account: Account) -> list[str]:
    if account.role != "table":
        return []
    return [f"{TABLE_CLIENT_ID_PREFIX}{table}" for table in account.tables]


def _check_client_ids(studio: Studio, source: str) -> None:
    owners: dict[str, str] = {}
    for account in studio.accounts:
        for client_id in [account.name, *_table_client_ids(account)]:
            owner = owners.setdefault(client_id, account.name)
            if owner != account.name:
                raise _fail(
                    source,
                    f"the client id {client_id!r} would be both {owner!r}'s and "
                    f"{account.name!r}'s (an account's name, or a table's daemon's "
                    f"{TABLE_CLIENT_ID_PREFIX}<table>): rename one",
                )


def client_id_owners(studio: Studio) -> dict[str, str]:
    """The MQTT client ids only one account may use, and that account: each account's own
    name, and for a table's account the client id of its daemon (``livetable-<table>``).
    On mosquitto ``use_username_as_clientid`` gives every account its name as its client
    id; on NATS the auth callout refuses anyone else these ids, so that nobody can take a
    table's session and close its daemon's connection."""
    owners: dict[str, str] = {}
    for account in studio.accounts:
        for client_id in [account.name, *_table_client_ids(account)]:
            owners[client_id] = account.name
    return owners


def client_id_refusal(studio: Studio, account: str, client_id: str) -> str | None:
    """Why ``account`` may not connect with ``client_id``, or None if it may."""
    owner = client_id_owners(studio).get(client_id)
    if owner is None or owner == account:
        return None
    return f"the client id {client_id!r} is {owner!r}'s, not {account!r}'s"


def load_accounts(path: Path) -> Studio:
    """Read and parse the description at ``path`` (the only I/O of this module)."""
    return parse_accounts(path.read_text(encoding="utf-8"), str(path))


# -- what each account may do, as MQTT topic filters --------------------------------------


def account_rules(studio: Studio, account: Account) -> list[Rule]:
    """Every grant of ``account``, as MQTT topic filters (its own responses included)."""
    prefix = studio.prefix
    rules: list[Rule] = []
    for table in account.tables:
        base = f"{prefix}/{table}"
        if account.role == "table":
            rules += [Rule("read", f"{base}/request/#"), Rule("write", f"{base}/#")]
        elif account.role == "dealer":
            rules += [Rule("read", f"{base}/{topic}") for topic in _DEALER_READS]
            rules += [
                Rule("write", f"{base}/request/dealer/{account.name}/{request}")
                for request in _DEALER_REQUESTS
            ]
        else:
            rules += [Rule("read", f"{base}/{topic}") for topic in _PUBLIC_READS[account.role]]
            rules.append(Rule("write", f"{base}/request/{account.role}/{account.name}/#"))
    if account.role == "dealer":
        # The console's role probe (a request to a table no daemon reads): its dealer screen
        # tells a dealer station's account by it.
        rules.append(Rule("write", f"{prefix}/{PROBE_TABLE}/request/dealer/{account.name}/status"))
    return rules + response_rules(studio, account.name)


def response_rules(studio: Studio, name: str) -> list[Rule]:
    """An account reads the answers to its own requests, on any table, and the MQTT 5
    response topics it may name below them."""
    base = f"{studio.prefix}/{ALL_TABLES}/response/{name}"
    return [Rule("read", base), Rule("read", f"{base}/#")]


# -- mosquitto --------------------------------------------------------------------------------


def mosquitto_acl(studio: Studio, source: str = "the studio's accounts") -> str:
    """A mosquitto ``acl_file``: the response rules as ``pattern`` lines (``%u`` is the
    account), then one block per account."""
    lines = [
        f"# Generated by `livetable studio accounts` from {source}: edit that, not this.",
        "#",
        "# An account reads the answers to its own requests, and nobody else's (%u is the",
        "# account); MQTT 5 clients may name a response topic below their own.",
    ]
    lines += [f"pattern {rule.access} {rule.topic}" for rule in response_rules(studio, "%u")]
    for account in studio.accounts:
        lines += ["", f"# {account.role}", f"user {account.name}"]
        own_responses = set(response_rules(studio, account.name))
        lines += [
            f"topic {rule.access} {rule.topic}"
            for rule in account_rules(studio, account)
            if rule not in own_responses
        ]
    return "\n".join(lines) + "\n"


# -- nats-server ------------------------------------------------------------------------------


def topic_level_token(level: str) -> str:
    """One MQTT topic level as nats-server names it in a subject (a '.' becomes '//')."""
    return level.replace(".", "//")


def nats_subjects(topic_filter: str) -> list[str]:
    """The NATS subjects an MQTT topic filter covers: ``+`` is ``*``; a trailing ``#``,
    which matches its parent level too, is the parent and ``parent.>``."""
    levels = topic_filter.split("/")
    if "#" in levels[:-1] or any(not level for level in levels):
        raise ValueError(f"not a topic filter livetable grants: {topic_filter!r}")
    tokens = ["*" if level == "+" else topic_level_token(level) for level in levels]
    if tokens[-1] == "#":
        parent = ".".join(tokens[:-1])
        return [parent, f"{parent}.>"]
    return [".".join(tokens)]


def password_variable(name: str) -> str:
    """The NATS configuration variable that holds ``name``'s password."""
    return "LIVETABLE_PASSWORD_" + re.sub(r"[^A-Z0-9]", "_", name.upper())


@dataclass(frozen=True)
class NatsPermissions:
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]


def nats_permissions(studio: Studio, account: Account) -> NatsPermissions:
    rules = account_rules(studio, account)
    publish = _subjects(rule.topic for rule in rules if rule.access == "write")
    subscribe = _subjects(rule.topic for rule in rules if rule.access == "read")
    return NatsPermissions(publish, subscribe + NATS_MQTT_INTERNAL_SUBSCRIBE)


def _subjects(topics: Iterable[str]) -> tuple[str, ...]:
    subjects: list[str] = []
    for topic in topics:
        subjects += [subject for subject in nats_subjects(topic) if subject not in subjects]
    return tuple(subjects)


def nats_authorization(
    studio: Studio, callout_issuer: str, source: str = "the studio's accounts"
) -> str:
    """A nats-server ``authorization`` block that hands every connection to the auth
    callout (``livetable studio auth-callout``) but the callout's own: that user, which may
    only read the authorization requests and answer them, and the public account nkey
    ``callout_issuer`` whose signature nats-server requires on the answers."""
    account_names = ", ".join(account.name for account in studio.accounts)
    lines = [
        f"# Generated by `livetable studio accounts` from {source}: edit that, not this.",
        "# Every connection but the callout's own is authorised by `livetable studio",
        "# auth-callout` (one per node's host), with the permissions of its account in the",
        "# same description; it refuses a client id that belongs to another account (a",
        "# table's daemon's). Accounts:",
        f"#   {account_names}",
        "authorization {",
        f"  timeout: {CALLOUT_TIMEOUT_S}",
        "  users = [",
        "    {",
        f'      user: "{CALLOUT_USER}"',
        f"      password: ${CALLOUT_PASSWORD_VARIABLE}",
        '      allowed_connection_types: ["STANDARD"]',
        "      permissions: {",
        f'        subscribe: {{ allow: ["{CALLOUT_SUBJECT}"] }}',
        '        publish: { deny: [">"] }',
        "        # Only the answer to each request, on the reply subject the node named.",
        "        allow_responses: true",
        "      }",
        "    }",
        "  ]",
        "  auth_callout {",
        f'    issuer: "{callout_issuer}"',
        f'    auth_users: ["{CALLOUT_USER}"]',
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"
