"""The contract and its documents agree: what the daemon does (requests parsed by
:func:`controller.service.mqtt_api.parse_request`, messages made as the daemon makes them, the
shipped broker ACL) is what ``docs/mqtt-api.md`` and ``docs/asyncapi.yaml`` say, and the
schemas hold the messages to every promise the prose makes ("every field is always
present", "an object", "a settled hand").

The messages come from the table's state machine through the wire of
``test_api_schema.py`` (:class:`~tests.daemon.test_api_schema.Wire`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from controller.service.mqtt_api import COMMANDS, MAX_REQUEST_BYTES, RequestError, parse_request
from controller.service.wire import encode, response_message
from controller.table.games import default_boxes
from controller.table.state import Phase
from tests.daemon.test_api_schema import BASE, PREFIX, SCENARIOS, TABLE, Wire, wired_driver
from tests.support.api_schema import load_document, validate_message, validate_value
from tests.support.daemon import check_stream

REPO = Path(__file__).resolve().parents[2]
API_DOC = REPO / "docs" / "mqtt-api.md"
ACL = REPO / "systemd" / "mosquitto" / "livetable.acl"


def refusal(command: str, payload: bytes, role: str = "supervisor") -> RequestError:
    account = {"supervisor": "alice", "viewer": "viewer", "platform": "platform"}[role]
    topic = f"{BASE}/request/{role}/{account}/{command}"
    with pytest.raises(RequestError) as caught:
        parse_request(topic, payload, PREFIX, TABLE)
    error = caught.value
    # Whatever was sent, the answer can be sent: it encodes, and is small.
    answer = encode(
        response_message(error.transaction, error.command, False, error.message, code=error.code)
    )
    validate_message(f"{BASE}/response/{account}", answer)
    assert len(answer) < 1000, answer
    return error


# -- request parsing -----------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1_000, 5_000, MAX_REQUEST_BYTES // 2 - 40])
def test_json_nested_deeper_than_python_recurses_is_malformed(depth: int) -> None:
    payload = b'{"transaction": "t", "reason": ' + b"[" * depth + b"]" * depth + b"}"
    assert len(payload) <= MAX_REQUEST_BYTES
    error = refusal("pause", payload)
    assert error.code == "malformed"
    assert "nested" in error.message, error.message


@pytest.mark.parametrize(
    "payload",
    [b'{"transaction": "t", "reason": "caf\xe9"}', b"\xff\xfe{}", b'{"transaction": "\xc3"}'],
)
def test_invalid_utf8_is_malformed_in_plain_words(payload: bytes) -> None:
    error = refusal("pause", payload)
    assert error.code == "malformed"
    assert "UTF-8" in error.message, error.message
    assert "codec" not in error.message and "invalid start byte" not in error.message


@pytest.mark.parametrize(
    ("command", "fields", "role", "message"),
    [
        ("events", {"since": "5"}, "viewer", 'since must be an integer, not "5"'),
        ("events", {"since": True}, "viewer", "since must be an integer, not true"),
        ("events", {"since": 1.5}, "viewer", "since must be an integer, not 1.5"),
        ("events", {"since": None}, "viewer", "since must be an integer, not null"),
        ("events", {"since": [1]}, "viewer", "since must be an integer, not an array"),
        ("events", {"since": {"a": 1}}, "viewer", "since must be an integer, not an object"),
        ("pause", {"reason": 5}, "supervisor", "reason must be a string, not 5"),
        ("pause", {"reason": "x" * 600}, "supervisor", "reason is longer than 500 characters"),
        (
            "open_round",
            {"boxes": "x" * 100},
            "platform",
            'boxes must be an integer, not "' + "x" * 30 + '..."',
        ),
    ],
)
def test_a_mistyped_field_names_its_type_and_quotes_the_value(
    command: str, fields: dict[str, Any], role: str, message: str
) -> None:
    error = refusal(command, json.dumps({"transaction": "t", **fields}).encode(), role)
    assert (error.code, error.message, error.transaction) == ("malformed", message, "t")


@pytest.mark.parametrize(
    "payload",
    [
        b'{"transaction": "\\ud800", "reason": "x"}',
        b'{"transaction": "t", "reason": "half a pair \\udc00"}',
        b'{"transaction": "t", "reason": "x", "\\ud800": 1}',
    ],
)
def test_a_lone_surrogate_is_malformed_and_the_answer_still_encodes(payload: bytes) -> None:
    """JSON may escape half a UTF-16 pair, which no UTF-8 text can hold: the answer (which
    echoes the transaction) and the journal could not be written."""
    error = refusal("pause", payload)
    assert error.code == "malformed"
    assert "Unicode" in error.message, error.message


def test_control_characters_in_an_unknown_field_name_are_not_echoed() -> None:
    error = refusal("pause", b'{"transaction": "t", "reason": "x", "\\u001b[2J": 1}')
    assert error.code == "malformed" and "\x1b" not in error.message, error.message


# A valid request of each command with text fields: each text field in turn gets a control
# character.
VALID_TEXT: dict[str, dict[str, Any]] = {
    "pause": {"reason": "spill"},
    "resume": {"resolution": "enter_card", "card": "7H"},
    "enter_card": {"card": "7H"},
    "cancel": {"reason": "dispute"},
    "end_shoe": {"reason": "end of shift"},
    "dealer_sign_in": {"staff_id": "D-1043"},
    "pictures": {"round_id": 1, "view": "live"},
    "decide": {
        "round_id": 1,
        "request_seq": 1,
        "kind": "play",
        "box": 1,
        "hand": 1,
        "decision": "H",
    },
}
ROLE_OF = {"decide": "platform"}
# C0 and C1 controls, DEL, and the line and paragraph separators: each would break or hide
# text that is echoed, journaled and shown to people.
CONTROLS = ["\x00", "\n", "\r", "\t", "\x1b", "\x7f", "\x85", "\x9b", "\u2028", "\u2029"]


def test_every_text_field_is_covered() -> None:
    text = {
        command
        for command, spec in COMMANDS.items()
        if any(field.kind is str for field in spec.fields)
    }
    assert text == set(VALID_TEXT)


@pytest.mark.parametrize("char", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
def test_a_control_character_in_a_text_field_is_malformed(char: str) -> None:
    for command, valid in VALID_TEXT.items():
        for name in (field.name for field in COMMANDS[command].fields if field.kind is str):
            body = {"transaction": "t", **valid, name: valid[name][:1] + char + valid[name][1:]}
            error = refusal(command, json.dumps(body).encode(), ROLE_OF.get(command, "supervisor"))
            assert (error.code, error.transaction) == ("malformed", "t"), (command, name, error)
            assert error.message.startswith(f"{name} "), (command, name, error.message)
            assert char not in error.message


@pytest.mark.parametrize("char", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
def test_a_control_character_in_the_transaction_or_the_account_is_malformed(char: str) -> None:
    error = refusal("pause", json.dumps({"transaction": f"t{char}1", "reason": "x"}).encode())
    assert (error.code, error.transaction) == ("malformed", None), error
    assert "transaction" in error.message and "control character" in error.message
    # Mosquitto refuses such a topic itself; a broker that passes it on must not make the
    # account (the journal's "by") of it.
    with pytest.raises(RequestError) as caught:
        parse_request(
            f"{BASE}/request/supervisor/al{char}ice/pause",
            b'{"transaction": "t", "reason": "x"}',
            PREFIX,
            TABLE,
        )
    assert caught.value.code == "malformed" and "account" in caught.value.message
    assert char not in caught.value.message


@pytest.mark.parametrize(
    "payload",
    [
        b'{"transaction": "t", "transaction": "u", "reason": "x"}',
        b'{"transaction": "t", "reason": "x", "reason": "y"}',
        b'{"transaction": "t", "reason": {"a": 1, "a": 2}}',
    ],
)
def test_a_key_given_twice_is_malformed(payload: bytes) -> None:
    error = refusal("pause", payload)
    assert error.code == "malformed" and "repeats" in error.message, error.message


# -- the schemas hold what the prose promises -------------------------------------------------


def paused_state() -> dict[str, Any]:
    """The state of a baccarat table a supervisor paused in a round, as published."""
    wire = Wire()
    try:
        driver = wired_driver("baccarat", wire)
        driver.new_shoe()
        driver.open_and_close_betting()
        driver.draw("9S")
        assert driver.command("pause", reason="a dispute").ok
        assert driver.phase is Phase.PAUSED
        states = [json.loads(p) for t, p in wire.messages if t == f"{BASE}/state"]
        return states[-1]  # type: ignore[no-any-return]
    finally:
        wire.close()


def without(message: dict[str, Any], *path: str) -> dict[str, Any]:
    copy = json.loads(json.dumps(message))
    node = copy
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return copy


@pytest.mark.parametrize("field", ["offline_gap", "idle_gap"])
def test_the_pause_always_carries_its_gaps(field: str) -> None:
    """docs/mqtt-api.md, state: "Every field is always present"."""
    state = paused_state()
    validate_message(f"{BASE}/state", encode(state))
    with pytest.raises(AssertionError, match=field):
        validate_message(f"{BASE}/state", encode(without(state, "pause", field)))


def test_the_settings_are_always_an_object() -> None:
    """The table always has settings in force (the configuration's, or those journaled)."""
    state = paused_state()
    assert isinstance(state["settings"], dict)
    with pytest.raises(AssertionError, match="settings"):
        validate_message(f"{BASE}/state", encode({**state, "settings": None}))


# The boxes' two cards (box 1 a 16, box 2 a blackjack, the others small hands), dealt to the
# game's default number of boxes in its deal order around the dealer's blackjack.
BOX_CARDS = [
    ("9S", "7D"),
    ("AC", "QH"),
    *[("2C", "3C"), ("4C", "5C"), ("2D", "3D"), ("4D", "5D"), ("2H", "3H")],
]


def deal_order(game: str, boxes: int, up: str, hole: str) -> list[str]:
    firsts = [first for first, _second in BOX_CARDS[:boxes]]
    seconds = [second for _first, second in BOX_CARDS[:boxes]]
    if game == "blackjack-classic":  # firsts, the hole card, seconds, the up card
        return [*firsts, hole, *seconds, up]
    return [*firsts, up, *seconds, hole]  # 21: firsts, the up card, seconds, the hole card


def dealer_blackjack_round(game: str, up: str, hole: str) -> list[dict[str, Any]]:
    """The events of a boxed round that a dealer blackjack ends (every insurance or even
    money offer declined at its deadline), from the shoe's declaration on."""
    wire = Wire()
    try:
        driver = wired_driver(game, wire)
        driver.new_shoe()
        driver.open_and_close_betting()  # the table's default boxes, as check_stream takes
        driver.draw(*deal_order(game, default_boxes(game), up, hole))
        while driver.phase is Phase.DECIDING:
            driver.expire("decision")
        assert driver.phase is Phase.SHOE_READY, driver.phase
        for topic, payload in wire.messages:
            validate_message(topic, payload)
        return [json.loads(payload) for topic, payload in wire.messages if "/events" in topic]
    finally:
        wire.close()


@pytest.mark.parametrize("game", ["blackjack-classic", "blackjack-21"])
@pytest.mark.parametrize(("up", "hole"), [("KH", "AH"), ("AH", "KH")])
def test_a_hand_a_dealer_blackjack_ended_is_published_as_stood(
    game: str, up: str, hole: str
) -> None:
    """docs/mqtt-api.md, round.view: every hand of a complete round is finished; the hands
    a dealer blackjack ends stand as dealt."""
    events = dealer_blackjack_round(game, up, hole)
    (settled,) = [event for event in events if event["type"] == "round_settled"]
    # The end-to-end tests' check recomputes it with the rules engine, as the wire does.
    assert check_stream(events, game) == 1
    result = settled["data"]["result"]
    assert result["dealer"]["blackjack"] is True
    hands = [(h["state"], h["result"], h["net"]) for box in result["boxes"] for h in box["hands"]]
    boxes = default_boxes(game)
    assert hands == [("stood", "lose", -1.0), ("blackjack", "push", 0.0)] + [
        ("stood", "lose", -1.0)
    ] * (boxes - 2), hands
    # A settled hand that says it is still playing breaks the contract.
    result["boxes"][0]["hands"][0]["state"] = "playing"
    with pytest.raises(AssertionError, match="state"):
        validate_message(f"{BASE}/events", encode(settled))


# -- docs/mqtt-api.md says what the code does ---------------------------------------------------


def api_doc() -> str:
    return API_DOC.read_text(encoding="utf-8")


def event_rejected_kinds_seen() -> set[str]:
    """The inputs the scenarios of every game got refused as ``event_rejected``."""
    kinds: set[str] = set()
    for game, play in SCENARIOS.items():
        wire = Wire()
        try:
            play(game, wire)
            for topic, payload in wire.messages:
                message = json.loads(payload) if topic.endswith("/events") else {}
                if message.get("type") == "event_rejected":
                    kinds.add(message["data"]["event"])
        finally:
            wire.close()
    return kinds


def test_every_input_refused_as_event_rejected_is_documented() -> None:
    """A decision the rules refuse is answered ``refused`` and published as event_rejected
    (the journal keeps the input); the docs name each kind of input that can be."""
    kinds = event_rejected_kinds_seen()
    assert "PlatformDecided" in kinds, kinds  # the classic scenario's refused "X"
    (row,) = [line for line in api_doc().splitlines() if line.startswith("| `event_rejected` |")]
    for kind in kinds:
        assert f"`{kind}`" in row, (kind, row)
    (decide,) = [line for line in api_doc().splitlines() if line.startswith("| `decide` |")]
    assert "event_rejected" in decide, decide


def worked_example() -> tuple[str, list[tuple[str, Any]]]:
    """The worked example's prose, and each JSON message in it with the request topic the
    prose named last before it (or "")."""
    text = api_doc().split("## A worked example", 1)[1]
    messages: list[tuple[str, Any]] = []
    topic = ""
    decoder = json.JSONDecoder()
    for prose, block in re.findall(r"(.*?)```json\n(.*?)```", text, re.S):
        topics = re.findall(r"`(livetable/t1/request/[^`]+)`", prose)
        topic = topics[-1] if topics else topic
        position = 0
        while position < len(block):
            if block[position].isspace():
                position += 1
                continue
            value, position = decoder.raw_decode(block, position)
            messages.append((topic, value))
    return text, messages


def test_the_worked_example_is_what_the_daemon_would_publish() -> None:
    _text, messages = worked_example()
    commands: dict[str, str] = {}
    events: list[dict[str, Any]] = []
    responses = 0
    for topic, message in messages:
        if "..." in message:
            continue  # a state shortened for the page
        if "ok" in message:
            validate_value("#/components/schemas/Response", message, "a response")
            # The answer names the command as the request's topic did.
            assert message["command"] == commands[message["transaction"]], message
            responses += 1
        elif "type" in message:
            validate_value("#/components/schemas/Event", message, f"event {message['seq']}")
            events.append(message)
        elif "phase" in message:
            validate_value("#/components/schemas/State", message, "a state")
        else:
            assert topic, message
            validate_message(topic, encode(message))
            commands[message["transaction"]] = topic.rsplit("/", 1)[-1]
    assert responses >= 3 and "open_round" in commands.values()
    # The baccarat round: betting closes when round_opened said it would, and time only
    # moves on from there.
    baccarat = [event for event in events if event["seq"] <= 12 and "kind" not in event["data"]]
    (opened,) = [event for event in baccarat if event["type"] == "round_opened"]
    (closed,) = [event for event in baccarat if event["type"] == "betting_closed"]
    assert closed["at"] == opened["data"]["betting_closes_at"], (opened, closed)
    times = [event["at"] for event in baccarat if event["seq"] >= opened["seq"]]
    assert times == sorted(times), times


# -- who reads the dealer's line: the ACL as shipped, and the documents ------------------------


def acl_readers() -> dict[str, tuple[str, set[str]]]:
    """Each client account of the shipped ACL: its role (from the requests it may write) and
    the table topics it may read (``availability``, ``state``, ``dealer``, ...)."""
    accounts: dict[str, tuple[str, set[str]]] = {}
    user = None
    for line in ACL.read_text().splitlines():
        words = line.split()
        if words[:1] == ["user"]:
            user = words[1]
            accounts[user] = ("", set())
        elif user is not None and words[:2] == ["topic", "read"]:
            accounts[user][1].add(words[2].rsplit("/", 1)[-1])
        elif user is not None and words[:2] == ["topic", "write"] and "/request/" in words[2]:
            role = words[2].split("/request/", 1)[1].split("/")[0]
            accounts[user] = (role, accounts[user][1])
    return {name: entry for name, entry in accounts.items() if entry[0]}


def test_the_dealer_line_is_read_by_whom_the_documents_say() -> None:
    """The dealer's line names no card (the wire's secrecy property covers it); supervisors
    and viewers may read it, and both documents say so, as the ACL does."""
    readers = acl_readers()
    roles = {"platform", "supervisor", "viewer", "dealer"}
    assert {role for role, _topics in readers.values()} == roles
    by_role: dict[str, set[str]] = {}
    for role, topics in readers.values():
        by_role.setdefault(role, set()).update(topics)
    # docs/mqtt-api.md, the roles table: what each role reads.
    doc = api_doc()
    for role, topics in by_role.items():
        (row,) = [line for line in doc.splitlines() if line.startswith(f"| `{role}` |")]
        reads = row.split("|")[3]
        for topic in ("availability", "state", "events", "dealer"):
            assert (topic in reads) == (topic in topics), (role, topic, row)
    assert "gives no client account read access" not in doc
    # docs/asyncapi.yaml: each public channel says who reads it.
    channels = load_document()["channels"]
    for topic in ("availability", "state", "events", "dealer"):
        description = " ".join(channels[topic]["description"].split())
        found = re.search(r"[Rr]eadable by ([a-z, ]+?) accounts", description)
        assert found is not None, (topic, description)
        named = set(re.split(r", | and ", found.group(1)))
        assert named == {role for role, seen in by_role.items() if topic in seen}, topic
