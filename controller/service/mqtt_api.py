"""Requests of the MQTT API: parsed, validated and authorised before they reach the table.

A request is published on ``<prefix>/<table>/request/<role>/<account>/<command>`` with a JSON
object carrying at least ``transaction`` (1-128 characters, chosen by the sender; the
response echoes it, and a request repeated with the same transaction is answered again and
executed once). **Who** sent it comes from the topic, which the broker's ACL binds to the
MQTT account (``<account>`` must be the publisher's user name, ``<role>`` a role that account
holds): the payload cannot claim another identity.

Everything here is pure: a request is bytes and a topic in, a :class:`Request` or a
:class:`~controller.kernel.errors.RequestError` (the error tree's, with the code of the error
response) out.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Final

from controller.kernel.api_commands import ACTING_COMMANDS, COMMANDS, ROLES
from controller.kernel.cards import Card, parse_card
from controller.kernel.errors import RequestError, RulesError
from controller.kernel.vocabulary import RESOLUTIONS
from controller.table.events import (
    DealerSignedIn,
    DealerSignedOut,
    PlatformDecided,
    RoundRequested,
    SupervisorCommanded,
)

MAX_REQUEST_BYTES: Final = 16 * 1024
MAX_TRANSACTION_CHARS: Final = 128
MAX_TEXT_CHARS: Final = 500
# Arrays and objects inside one another, at most: a request is one flat object, and deeper
# JSON would make the decoder recurse (Python stops it with a RecursionError).
MAX_JSON_DEPTH: Final = 32
EVENTS_PAGE_MAX: Final = 500
AUDIT_PAGE_MAX: Final = 500
AUDIT_PAGE_DEFAULT: Final = 200

# A dealer's staff id as the studio writes it (``D-1043``): printable, short, no spaces.
STAFF_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
# The commands (controller/kernel/api_commands.py) that act on the table, on its thread; the
# reads are answered at once.
TABLE_COMMANDS: Final = ACTING_COMMANDS


@dataclass(frozen=True, slots=True)
class Request:
    role: str
    account: str
    command: str
    transaction: str
    args: dict[str, Any] = field(default_factory=dict)


def parse_topic(topic: str, prefix: str, table_id: str) -> tuple[str, str, str]:
    """``(role, account, command)`` of a request topic; RequestError if it is not one."""
    levels = topic.split("/")
    if len(levels) != 6 or levels[:3] != [prefix, table_id, "request"]:
        raise RequestError("malformed", f"not a request topic: {topic[:200]!r}")
    _, _, _, role, account, command = levels
    if role not in ROLES:
        raise RequestError("forbidden", f"unknown role {role[:50]!r}", command[:50])
    if not account:
        raise RequestError("malformed", "the topic names no account", command[:50])
    # The account is the journal's and the audit's "by" (mosquitto refuses such a topic
    # itself; another broker may pass it on).
    if _control_character(account) is not None:
        raise RequestError(
            "malformed", "the topic's account holds a control character", _printable(command)
        )
    return role, account, command


def parse_request(topic: str, payload: bytes, prefix: str, table_id: str) -> Request:
    """Validate one request; RequestError names what is wrong (and never echoes much of it)."""
    role, account, command = parse_topic(topic, prefix, table_id)
    command_name = _printable(command)
    if len(payload) > MAX_REQUEST_BYTES:
        raise RequestError(
            "too_large",
            f"the request has {len(payload)} bytes; at most {MAX_REQUEST_BYTES} are accepted",
            command_name,
        )
    body = _decode(payload, command_name)
    if not isinstance(body, dict):
        raise RequestError("malformed", "the request must be a JSON object", command_name)
    transaction = body.get("transaction")
    if (
        not isinstance(transaction, str)
        or not transaction.strip()
        or len(transaction) > MAX_TRANSACTION_CHARS
    ):
        raise RequestError(
            "malformed",
            f"transaction must be a non-empty string of at most {MAX_TRANSACTION_CHARS} characters",
            command_name,
        )
    # Echoed in the answer, part of the command's id in the journal and the audit: it is
    # never echoed with a control character in it.
    if (where := _control_character(transaction)) is not None:
        raise RequestError(
            "malformed", f"transaction holds a control character ({where})", command_name
        )
    if command not in COMMANDS:
        raise RequestError(
            "unknown_command",
            f"unknown command {command_name!r}: expected one of {', '.join(sorted(COMMANDS))}",
            command_name,
            transaction,
        )
    spec = COMMANDS[command]
    if role not in spec.roles:
        raise RequestError(
            "forbidden", f"the {role} role may not give {command}", command, transaction
        )
    args = {key: value for key, value in body.items() if key != "transaction"}
    unknown = sorted(set(args) - spec.field_names)
    if unknown:
        names = ", ".join(_shown(name) for name in unknown)
        raise RequestError("malformed", f"{command} takes no {names}"[:200], command, transaction)
    for each in spec.fields:
        name, kind = each.name, each.kind
        if name not in args:
            if each.required:
                raise RequestError("malformed", f"{command} needs {name}", command, transaction)
            continue
        value = args[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            expected = _KIND_NAMES.get(kind, "a value")  # type: ignore[call-overload]
            raise RequestError(
                "malformed", f"{name} must be {expected}, not {_shown(value)}", command, transaction
            )
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            raise RequestError(
                "malformed",
                f"{name} is longer than {MAX_TEXT_CHARS} characters",
                command,
                transaction,
            )
        if isinstance(value, str) and (where := _control_character(value)) is not None:
            raise RequestError(
                "malformed",
                f"{name} holds a control character ({where})",
                command,
                transaction,
            )
        if isinstance(value, int) and (value < 0 or value > 2**53):
            raise RequestError("malformed", f"{name} is out of range", command, transaction)
    _check_values(command, args, transaction)
    return Request(role, account, command, transaction, args)


_KIND_NAMES: Final[dict[type, str]] = {int: "an integer", str: "a string"}
# Characters no text field may hold: the C0 and C1 controls and DEL (Unicode's Cc: NUL,
# newline, escape...) and the line and paragraph separators. Each breaks or hides what a
# person reads of a reason, a transaction or an account in an answer, a log line, the
# journal's export or the console.
_CONTROL_CATEGORIES: Final = frozenset({"Cc", "Zl", "Zp"})
# A JSON string (escapes included), to be skipped when counting how deep brackets nest.
_JSON_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET: Final = re.compile(r"[\[\]{}]")


def _control_character(text: str) -> str | None:
    """Where ``text`` holds its first control character (``U+0000 at 3``), or None."""
    for index, character in enumerate(text):
        if unicodedata.category(character) in _CONTROL_CATEGORIES:
            return f"U+{ord(character):04X} at {index}"
    return None


def _printable(text: str) -> str:
    """``text`` without its control characters, short: for naming a command in an answer."""
    return "".join(c for c in text if _control_character(c) is None)[:50]


class _RepeatedKey(ValueError):
    """A JSON object names a key twice (:func:`_unique_keys`)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; a key given twice is refused, where ``json`` would
    keep the last one without a word (the sender and the table would read two requests)."""
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            raise _RepeatedKey(key)
        seen.add(key)
    return dict(pairs)


def _decode(payload: bytes, command_name: str) -> Any:
    """The payload's JSON value; RequestError in plain words if it is not UTF-8 JSON of at
    most :data:`MAX_JSON_DEPTH` levels whose every string is Unicode text."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestError(
            "malformed",
            f"the request is not UTF-8 text: byte {error.start} is not valid UTF-8",
            command_name,
        ) from None
    # Counting brackets is cheap; only a payload with many is scanned for its depth.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(text) > MAX_JSON_DEPTH:
        raise RequestError(
            "malformed",
            f"the request is nested more than {MAX_JSON_DEPTH} levels deep",
            command_name,
        )
    try:
        body = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:  # deep nesting the scan did not see: never a traceback
        raise RequestError("malformed", "the request is nested too deeply", command_name) from None
    except _RepeatedKey as repeated:
        raise RequestError(
            "malformed", f"the request repeats the key {_shown(str(repeated))}", command_name
        ) from None
    except ValueError as error:
        raise RequestError("malformed", f"not JSON: {error}"[:200], command_name) from None
    try:
        # JSON may escape half a UTF-16 surrogate pair ("\ud800"), which no UTF-8 text
        # holds: such a string could neither be answered (the transaction is echoed) nor
        # journaled.
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise RequestError(
            "malformed",
            "the request is not valid Unicode: a string holds half a surrogate pair",
            command_name,
        ) from None
    return body


def _depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (brackets in strings ignored)."""
    depth = deepest = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub("", text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _shown(value: object) -> str:
    """A value as JSON, short and printable (control characters escaped), for a message
    that must not echo much of what it was sent."""
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str) and len(value) > 30:
        return json.dumps(value[:30])[:-1] + '..."'
    return json.dumps(value)[:40]


def _check_values(command: str, args: dict[str, Any], transaction: str) -> None:
    def bad(message: str) -> RequestError:
        return RequestError("malformed", message, command, transaction)

    if command == "pause" and not args["reason"].strip():
        raise bad("pause needs a reason")
    if command == "dealer_sign_in" and not STAFF_ID.fullmatch(args["staff_id"]):
        raise bad("staff_id must be 1 to 32 letters, digits, '.', '_' or '-' (e.g. D-1043)")
    if command == "events" and "limit" in args and not 1 <= args["limit"] <= EVENTS_PAGE_MAX:
        raise bad(f"limit must be 1 to {EVENTS_PAGE_MAX}")
    if command == "audit" and "limit" in args and not 1 <= args["limit"] <= AUDIT_PAGE_MAX:
        raise bad(f"limit must be 1 to {AUDIT_PAGE_MAX}")
    if command == "pictures" and (
        args["round_id"] < 1 or args.get("row", 0) < 0 or args.get("offset", 0) < 0
    ):
        raise bad("round_id must be 1 or more, row and offset 0 or more")
    if command == "pictures" and args.get("view", "live") != "live":
        raise bad('view must be "live" (or absent: the journaled pictures)')
    if command == "open_round" and args.get("boxes", 0) > 7:
        raise bad("boxes must be 0 (the table's default) to 7")
    if command == "resume" and args.get("resolution", "") not in RESOLUTIONS:
        raise bad(f"resolution must be one of {', '.join(r for r in RESOLUTIONS if r)}")
    if "card" in args:
        try:
            parse_card(args["card"])
        except RulesError:
            raise bad(f"card {args['card'][:10]!r} is not a card (e.g. 7H, TD, AS)") from None
        if command == "resume" and args.get("resolution") != "enter_card":
            raise bad("a card goes with the resolution enter_card")


def table_event(request: Request, command_id: str, at: float) -> object:
    """The journaled table event a validated table command becomes."""
    if not math.isfinite(at):
        raise ValueError("the time must be finite")
    args = request.args
    if request.command == "open_round":
        return RoundRequested(command_id, request.account, at, int(args.get("boxes", 0)))
    if request.command == "dealer_sign_in":
        return DealerSignedIn(command_id, str(args["staff_id"]), request.account, request.role, at)
    if request.command == "dealer_sign_out":
        return DealerSignedOut(command_id, request.account, request.role, at)
    if request.command == "decide":
        return PlatformDecided(
            int(args["round_id"]),
            str(args["kind"]),
            int(args["box"]),
            int(args["hand"]),
            str(args["decision"]),
            at,
        )
    command, resolution = request.command, str(args.get("resolution", ""))
    card: Card | None = parse_card(args["card"]) if "card" in args else None
    if command == "enter_card":
        command, resolution = "resume", "enter_card"
    return SupervisorCommanded(
        command_id,
        command,
        request.account,
        request.role,
        at,
        str(args.get("reason", "")),
        resolution,
        card,
    )
