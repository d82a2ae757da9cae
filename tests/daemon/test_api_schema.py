"""Every message of the MQTT API fits its schema in docs/asyncapi.yaml, and none tells a secret.

The table's state machine plays full rounds of every game (pauses, a cancel, the cut card,
misreads, the camera, a settings change, device news included); its effects become wire
messages exactly as the daemon makes them (:class:`controller.service.publishing.Publications` over
a real outbox, :mod:`controller.service.wire`), and each message, the requests that drove the table
included, is validated against the AsyncAPI document by its topic. The requests are also
given to :func:`controller.service.mqtt_api.parse_request`, so the schemas and the code's own checks
must agree. A property test carries the table's secrecy property (no burn card, no hole card
before its reveal) from the effects to the serialized messages.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.games.registry import GAME_IDS
from controller.kernel.vocabulary import ANSWERS, SHOE_ENDS
from controller.service.audit import audit_answer, audit_entry
from controller.service.mqtt_api import COMMANDS, Request, RequestError, parse_request
from controller.service.outbox import Outbox
from controller.service.pictures import PictureReader
from controller.service.publishing import Publications, split_command_key
from controller.service.wire import (
    API_VERSION,
    ERROR_CODES,
    EVENT_TYPES,
    dealer_message,
    encode,
    response_message,
)
from controller.table.config import TableConfig
from controller.table.effects import (
    Effect,
    EffectBatch,
    PublishEvent,
    TellDealer,
)
from controller.table.events import (
    CameraOffline,
    CameraOnline,
    CardsLost,
    ControllerStarted,
    DealerSignedIn,
    DealerSignedOut,
    PlatformDecided,
    RoundRequested,
    SettingsChanged,
    ShoeFault,
    ShoeFaultCleared,
    ShoeOffline,
    ShoeOnline,
    SupervisorCommanded,
    encode_event,
)
from controller.table.machine import TableMachine
from controller.table.state import Phase
from tests.support.api_schema import (
    channel_for,
    load_document,
    validate_message,
    validate_value,
)
from tests.table.driver import Driver, config_for, deal_until_settled, shuffled_shoe
from tests.table.test_properties import faces_in_play, helpful_event, random_event

PREFIX = "livetable"
TABLE = "t1"
BASE = f"{PREFIX}/{TABLE}"
CARD_TOKEN = re.compile(r"\b[A2-9TJQK][SHDC]\b")


class Wire:
    """The daemon's publishing, without the broker: effects in, (topic, payload) out."""

    def __init__(self) -> None:
        self.outbox = Outbox(Path(":memory:"))
        self.publications = Publications(TABLE, self.outbox, "5f0c" * 8)
        self.journal_seq = 0
        self.messages: list[tuple[str, bytes]] = []
        self.requests: list[tuple[str, bytes]] = []
        self.event_types: set[str] = set()
        # account/transaction -> the command the request's topic named, which the daemon's
        # answer echoes (the table names open_round "round" and enter_card "resume").
        self.commands: dict[str, str] = {}
        # The commands journaled as the daemon would have (sent by a client): (journal row,
        # kind, fields), what an audit request lists.
        self.commanded: list[tuple[int, str, dict[str, Any]]] = []
        self._state_version = 0

    def publish(self, topic: str, message: dict[str, Any] | str) -> None:
        body = message.encode() if isinstance(message, str) else encode(message)
        self.messages.append((topic, body))

    def request(self, role: str, account: str, command: str, fields: dict[str, Any]) -> str:
        """A request as a client sends it; the code must accept it as the schema does."""
        transaction = f"tx-{len(self.requests) + 1}"
        topic = f"{BASE}/request/{role}/{account}/{command}"
        payload = encode({"transaction": transaction, **fields})
        parse_request(topic, payload, PREFIX, TABLE)  # RequestError if the API refuses it
        self.requests.append((topic, payload))
        self.commands[f"{account}/{transaction}"] = command
        return transaction

    def record(self, effects: list[Effect], at: float | None) -> list[tuple[str, bytes]]:
        """Number and store one journal row's effects as the daemon does; return the
        messages they became (events, the state, responses, the dealer's line)."""
        start = len(self.messages)
        self.journal_seq += 1
        head = (self.journal_seq, hashlib.sha256(str(self.journal_seq).encode()).hexdigest())
        last = self.outbox.last_seq
        answers = self.publications.record(EffectBatch(tuple(effects), *head, at))
        for _seq, body in self.outbox.since(last, 10_000):
            self.messages.append((f"{BASE}/events", body))
            self.event_types.add(json.loads(body)["type"])
        version, state = self.publications.state_snapshot()
        if state is not None and version != self._state_version:
            self._state_version = version
            self.publish(f"{BASE}/state", state)
        for response, answered in answers:
            command = self.commands.get(answered.command_id)
            if command is None:
                continue  # no client sent it: the daemon has nobody to answer
            account, _transaction = split_command_key(answered.command_id)
            self.publish(f"{BASE}/response/{account}", {**response, "command": command})
        for effect in effects:
            if isinstance(effect, TellDealer):
                self.publish(f"{BASE}/dealer", dealer_message(effect))
        return self.messages[start:]

    def status_and_catch_up(self, account: str = "viewer", role: str = "viewer") -> None:
        """A status request and the events requests that page through the whole outbox."""
        transaction = self.request(role, account, "status", {})
        _version, state = self.publications.state_snapshot()
        self.publish(
            f"{BASE}/response/{account}",
            response_message(
                transaction, "status", True, "the table's state", data={"state": state}
            ),
        )
        since = 0
        while True:
            transaction = self.request(role, account, "events", {"since": since, "limit": 50})
            rows = self.outbox.since(since, 50)
            last = self.outbox.last_seq
            more = bool(rows) and rows[-1][0] < last
            self.publish(
                f"{BASE}/response/{account}/console-1",  # an MQTT 5 response topic
                response_message(
                    transaction,
                    "events",
                    True,
                    f"{len(rows)} event(s) after {since}",
                    data={
                        "epoch": self.publications.epoch,
                        "events": [json.loads(body) for _seq, body in rows],
                        "last_seq": last,
                        "more": more,
                    },
                ),
            )
            if not more:
                break
            since = rows[-1][0]
        if role != "platform":
            self.audit(account, role)
        self.pictures(account, role)

    def pictures(self, account: str, role: str) -> None:
        """A ``pictures`` request to this table without a camera, answered as the daemon
        answers it (controller/service/pictures.py; a camera's answers are checked against
        the document in tests/daemon/test_pictures_api.py)."""
        transaction = self.request(role, account, "pictures", {"round_id": 1})
        reader = PictureReader(Path("unused.journal"), None, lambda _r: 65536, print)
        request = Request(role, account, "pictures", transaction, {"round_id": 1})
        self.publish(f"{BASE}/response/{account}", reader.answer(request, 65536))

    def audit(self, account: str, role: str) -> None:
        """The audit requests that page, two at a time, through every command journaled,
        answered as the daemon answers them (controller/service/audit.py)."""
        since = 0
        while True:
            transaction = self.request(role, account, "audit", {"since": since, "limit": 2})
            rows = [row for row in self.commanded if row[0] > since]
            entries = [
                audit_entry(seq, kind, fields, self.outbox.answer(fields["command_id"]))
                for seq, kind, fields in rows[:2]
            ]
            answer = audit_answer(
                transaction, since, entries, len(rows) > 2, self.publications.epoch, 65536
            )
            self.publish(f"{BASE}/response/{account}", answer)
            if not answer["data"]["more"]:
                break
            since = answer["data"]["last"]

    def close(self) -> None:
        self.outbox.close()


@dataclasses.dataclass
class WiredTable:
    """A machine whose every input is also a client's request and every effect a message
    (what :class:`tests.table.driver.Driver` feeds, as it feeds a machine)."""

    machine: TableMachine
    wire: Wire

    def handle(self, event: object) -> list[Effect]:
        event, transaction = self._as_request(event)
        effects = self.machine.handle(event)
        self.wire.record(effects, getattr(event, "at", None))
        commands = SupervisorCommanded | RoundRequested | DealerSignedIn | DealerSignedOut
        if isinstance(event, commands) and transaction is not None:
            kind, fields = encode_event(event)
            self.wire.commanded.append((self.wire.journal_seq, kind, fields))
        if isinstance(event, PlatformDecided) and transaction is not None:
            self._answer_decision(effects, transaction)
        for effect in effects:
            if isinstance(effect, PublishEvent):
                assert effect.name in EVENT_TYPES, f"{effect.name} is not in wire.EVENT_TYPES"
        return effects

    def _as_request(self, event: object) -> tuple[object, str | None]:
        """The request a client would have sent for ``event``, and the event as the daemon
        journals it (``command_id`` = account/transaction)."""
        wire = self.wire
        if isinstance(event, SupervisorCommanded) and event.role == "supervisor":
            fields: dict[str, Any] = {}
            command = event.command
            if command == "resume" and event.resolution == "enter_card" and event.card:
                command, fields = "enter_card", {"card": str(event.card)}
            elif command == "resume" and event.resolution:
                fields["resolution"] = event.resolution
                if event.card is not None:
                    fields["card"] = str(event.card)
            if command in ("pause", "cancel", "end_shoe") and event.reason:
                fields["reason"] = event.reason
            if command not in COMMANDS or (command == "pause" and not event.reason.strip()):
                return event, None  # the API refuses it before the table sees it
            try:
                transaction = wire.request("supervisor", event.by, command, fields)
            except RequestError:
                return event, None  # refused by the API (e.g. a card without enter_card)
            key = f"{event.by}/{transaction}"
            return dataclasses.replace(event, command_id=key), transaction
        if isinstance(event, DealerSignedIn | DealerSignedOut):
            command = "dealer_sign_in" if isinstance(event, DealerSignedIn) else "dealer_sign_out"
            fields = {"staff_id": event.staff_id} if isinstance(event, DealerSignedIn) else {}
            transaction = wire.request(event.role, event.by, command, fields)
            return dataclasses.replace(event, command_id=f"{event.by}/{transaction}"), transaction
        if isinstance(event, RoundRequested):
            fields = {"boxes": event.boxes} if event.boxes else {}
            if event.boxes > 7:
                return event, None
            transaction = wire.request("platform", event.by, "open_round", fields)
            return dataclasses.replace(event, command_id=f"{event.by}/{transaction}"), transaction
        if isinstance(event, PlatformDecided):
            awaited = wire.publications.awaited
            if awaited is None or min(event.box, event.hand, event.round_id) < 0:
                return event, None  # the daemon answers "stale" without the table
            fields = {
                "round_id": event.round_id,
                "request_seq": awaited[0],
                "kind": event.kind,
                "box": event.box,
                "hand": event.hand,
                "decision": event.decision,
            }
            return event, wire.request("platform", "platform", "decide", fields)
        return event, None

    def _answer_decision(self, effects: list[Effect], transaction: str) -> None:
        """The daemon's answer to a decision the table was given
        (controller/service/request_pipeline.py)."""
        taken = [e for e in effects if isinstance(e, PublishEvent) and e.name == "decision_taken"]
        if taken:
            response = response_message(
                transaction, "decide", True, "decision taken", data=dict(taken[0].payload)
            )
        else:
            reasons = [getattr(e, "reason", "") for e in effects if hasattr(e, "reason")]
            response = response_message(
                transaction,
                "decide",
                False,
                "; ".join(r for r in reasons if r) or "the decision was not taken",
                code="refused",
            )
        self.wire.publish(f"{BASE}/response/platform", response)


def wired_driver(game: str, wire: Wire, **overrides: Any) -> Driver:
    overrides = {"decision_s": 8.0, **overrides}
    return Driver(WiredTable(TableMachine(config_for(game, **overrides)), wire))


def at(driver: Driver) -> float:
    return driver.tick()


# -- the scenarios: full rounds of every game, with what goes wrong at a table -------------


def play_baccarat(game: str, wire: Wire) -> None:
    driver = wired_driver(game, wire, rounds_after_cut_card=0)
    wire.publish(f"{BASE}/availability", "online")
    driver.send(ControllerStarted(at(driver)))
    driver.send(ShoeOnline("/dev/ttyUSB0", at(driver)))
    driver.send(CameraOnline("rtsp://camera-t1", 1920, 1080, at(driver)))
    driver.send(CardsLost((7, 8), at(driver)))  # before any shoe: news only
    driver.send(ShoeFault("E3", "card jam", at(driver)))
    driver.send(ShoeFaultCleared("E3", at(driver)))
    driver.send(SettingsChanged(12.0, 8.0, 60.0, 0, True, at(driver)))  # applies now
    driver.new_shoe(reveal="4S", burn=("3D", "5D", "6D", "7D"))
    cards = shuffled_shoe(11)

    # Round 1 as dealt, the camera confirming every face-up card, by dealer D-1043 who
    # signed in from the dealer's own account; a dealer change asked for during it.
    driver.send(DealerSignedIn("i1", "D-1043", "dealer-t1", "dealer", at(driver)))
    driver.open_and_close_betting()
    assert driver.command("dealer_change").ok
    while driver.phase is Phase.DEALING:
        card = cards.pop(0)
        effects = driver.draw(card)
        for ask in (e for e in effects if type(e).__name__ == "AskCamera"):
            driver.camera(ask.position, str(card), ask.card_number)  # type: ignore[attr-defined]
    assert driver.phase is Phase.SHOE_READY, driver.phase
    assert not driver.request_round().ok  # held until the next dealer signs in
    driver.send(DealerSignedOut("o1", "dealer-t1", "dealer", at(driver)))
    driver.send(DealerSignedIn("i2", "D-2001", "alice", "supervisor", at(driver)))
    assert driver.command("drain").ok
    assert driver.command("resume_rounds").ok

    # Round 2: a misread read by the camera; another the camera cannot read, entered by a
    # supervisor; a supervisor's pause; a settings change that waits for the next round.
    driver.open_and_close_betting()
    driver.send(SettingsChanged(10.0, 8.0, 45.0, 0, False, at(driver)))  # next_round
    driver.misread()
    assert driver.phase is Phase.READING
    driver.camera(driver.machine.state.reading, "KH")
    driver.misread()
    driver.camera(driver.machine.state.reading, None)
    assert driver.phase is Phase.PAUSED
    assert driver.command("resume", resolution="enter_card", card="QC").ok
    assert driver.command("pause", reason="a player disputes the last card").ok
    assert driver.command("resume").ok
    deal_until_settled(driver, cards)

    # Between rounds: a card out of turn, burned; the shoe goes away and comes back.
    driver.draw(cards.pop(0))
    assert driver.phase is Phase.PAUSED
    assert driver.command("resume", resolution="burn").ok
    driver.send(ShoeOffline("/dev/ttyUSB0", "no heartbeat for 5 s", at(driver)))
    driver.send(ShoeOnline("/dev/ttyUSB0", at(driver)))
    driver.camera("player", "AS")  # nobody asked the camera: rejected
    assert driver.rejections()

    # Round 3 is cancelled; round 4 sees the cut card during betting and ends the shoe.
    driver.request_round()
    assert driver.command("cancel", reason="dealer error").ok
    driver.open_and_close_betting()
    driver.cut_card()
    deal_until_settled(driver, cards)
    assert driver.phase is Phase.AWAITING_SHUFFLE

    # A second shoe, ended by a supervisor; the camera goes away.
    driver.new_shoe()
    assert driver.command("end_shoe", reason="table closing").ok
    driver.send(CameraOffline("rtsp://camera-t1", "no frame for 3 s", 2.0, at(driver)))
    wire.status_and_catch_up()
    wire.publish(f"{BASE}/availability", "offline")


def play_blackjack_classic(game: str, wire: Wire) -> None:
    driver = wired_driver(game, wire)
    driver.new_shoe()
    # Insurance offered on the dealer's ace and declined at the deadline, then a split.
    driver.open_and_close_betting(boxes=2)
    driver.draw("TS", "8S", "7D", "8C", "8H", "AH")  # box 1, box 2, hole, 1, 2, up
    assert driver.published_events("decision_requested")[-1]["kind"] == "insurance"
    driver.expire("decision")
    driver.decide("insurance", 2, 1, "Y")
    deal_until_settled(driver, ["3C", "TC", "4H", "9S", *shuffled_shoe(4)], decide="P")
    assert driver.phase is Phase.SHOE_READY, driver.phase
    # A decision the rules refuse, then a round played out from a shuffled shoe.
    driver.open_and_close_betting()
    cards = shuffled_shoe(5)
    while driver.phase is Phase.DEALING:
        driver.draw(cards.pop(0))
    if driver.phase is Phase.DECIDING:
        step = driver.machine.state.round.next_step()  # type: ignore[union-attr]
        driver.decide(step.kind, step.box, step.hand, "X")
    deal_until_settled(driver, cards, decide="H")
    wire.status_and_catch_up("platform", "platform")


def play_blackjack_21(game: str, wire: Wire) -> None:
    driver = wired_driver(game, wire)
    driver.new_shoe()
    cards = shuffled_shoe(21)
    for decide in ("H", None, "D"):
        driver.open_and_close_betting()
        deal_until_settled(driver, cards, decide=decide)
        assert driver.phase is Phase.SHOE_READY, driver.phase
    wire.status_and_catch_up("alice", "supervisor")


def play_blackjack_boundless(game: str, wire: Wire) -> None:
    driver = wired_driver(game, wire)
    driver.new_shoe()
    # The hole card is misread; the camera reads it when the dealer turns it over.
    driver.open_and_close_betting()
    driver.draw("5S", "6H", "3C")
    driver.misread()
    driver.decide("more_cards", 1, 1, "Y")
    driver.draw("9D")
    driver.decide("more_cards", 1, 1, "N")
    assert driver.phase is Phase.READING
    driver.camera("dealer", "QD")
    deal_until_settled(driver, ["TC", "TD", "TH"], decide="N")
    assert driver.phase is Phase.SHOE_READY, driver.phase
    # The platform falls silent: the table pauses, a supervisor cancels the round.
    driver.open_and_close_betting()
    driver.draw("5S", "6H", "3C", "7C")
    driver.expire("decision")
    assert driver.machine.state.pause is not None
    assert driver.command("cancel", reason="platform down").ok
    # A round played out.
    driver.open_and_close_betting()
    deal_until_settled(driver, shuffled_shoe(9), decide="N")
    wire.status_and_catch_up()


def play_dragon_tiger(game: str, wire: Wire) -> None:
    driver = wired_driver(game, wire, rounds_after_cut_card=0)
    wire.publish(f"{BASE}/availability", "online")
    driver.send(ControllerStarted(at(driver)))
    driver.send(ShoeOnline("/dev/ttyUSB0", at(driver)))
    driver.new_shoe(reveal="3C", burn=("5D", "6D", "7D"))
    # A suited tie, a Tiger win (ace low), then a Dragon card the camera reads after a
    # misread and a cut card that ends the shoe.
    for dragon, tiger in (("7H", "7H"), ("AS", "2C")):
        driver.open_and_close_betting()
        driver.draw(dragon, tiger)
        assert driver.phase is Phase.SHOE_READY, driver.phase
    driver.open_and_close_betting()
    driver.cut_card()
    driver.misread()
    assert driver.phase is Phase.READING
    driver.camera(driver.machine.state.reading, "KH")
    driver.draw("QS")
    assert driver.phase is Phase.AWAITING_SHUFFLE, driver.phase
    wire.status_and_catch_up()


# A scenario for each game of the registry, written for that game's rules and given its id.
SCENARIOS: dict[str, Callable[[str, Wire], None]] = {
    "baccarat": play_baccarat,
    "dragon-tiger": play_dragon_tiger,
    "blackjack-classic": play_blackjack_classic,
    "blackjack-21": play_blackjack_21,
    "blackjack-boundless": play_blackjack_boundless,
}


def test_every_message_of_full_rounds_of_every_game_fits_its_schema() -> None:
    assert set(SCENARIOS) == set(GAME_IDS), "a scenario for every game, and only those"
    seen: set[str] = set()
    channels: set[str] = set()
    for game in GAME_IDS:
        wire = Wire()
        try:
            SCENARIOS[game](game, wire)
            for topic, payload in wire.requests + wire.messages:
                validate_message(topic, payload)
                channels.add(channel_for(topic))
            seen |= wire.event_types
            assert wire.messages, game
        finally:
            wire.close()
    missing = set(EVENT_TYPES) - seen
    assert not missing, f"no scenario produced {sorted(missing)}"
    assert seen <= set(EVENT_TYPES), sorted(seen - set(EVENT_TYPES))
    # Every channel of the document was used: availability to new_shoe.
    assert channels == set(load_document()["channels"]), sorted(
        set(load_document()["channels"]) - channels
    )


def test_every_error_response_fits_the_response_schema() -> None:
    for code, meaning in ERROR_CODES.items():
        message = response_message("tx-9", "pause", False, meaning, code=code)
        validate_message(f"{BASE}/response/alice", encode(message))
    # Refused before a transaction or a command could be read.
    message = response_message(None, "", False, "not JSON", code="malformed")
    validate_message(f"{BASE}/response/alice", encode(message))


@pytest.mark.parametrize(
    ("topic", "payload"),
    [
        (f"{BASE}/request/viewer/viewer/status", b"[]"),
        (f"{BASE}/request/viewer/viewer/status", b'{"transaction": ""}'),
        (f"{BASE}/request/viewer/viewer/status", b'{"transaction": "   "}'),
        (f"{BASE}/request/viewer/viewer/status", b'{"transaction": "' + b"x" * 129 + b'"}'),
        (f"{BASE}/request/viewer/viewer/status", b'{"transaction": "t", "since": 1}'),
        (f"{BASE}/request/viewer/viewer/events", b'{"transaction": "t"}'),
        (f"{BASE}/request/viewer/viewer/events", b'{"transaction": "t", "since": -1}'),
        (f"{BASE}/request/viewer/viewer/events", b'{"transaction": "t", "since": true}'),
        (f"{BASE}/request/viewer/viewer/events", b'{"transaction": "t", "since": 0, "limit": 501}'),
        (f"{BASE}/request/platform/platform/open_round", b'{"transaction": "t", "boxes": 8}'),
        (f"{BASE}/request/platform/platform/open_round", b'{"transaction": "t", "boxes": "2"}'),
        (
            f"{BASE}/request/platform/platform/decide",
            b'{"transaction": "t", "round_id": 1, "kind": "play", "box": 1, "hand": 1,'
            b' "decision": "H"}',
        ),
        (f"{BASE}/request/supervisor/alice/pause", b'{"transaction": "t", "reason": " "}'),
        (f"{BASE}/request/supervisor/alice/pause", b'{"transaction": "t", "why": "x"}'),
        (f"{BASE}/request/supervisor/alice/resume", b'{"transaction": "t", "resolution": "skip"}'),
        (
            f"{BASE}/request/supervisor/alice/resume",
            b'{"transaction": "t", "resolution": "burn", "card": "AS"}',
        ),
        (f"{BASE}/request/supervisor/alice/enter_card", b'{"transaction": "t", "card": "ZZ"}'),
        (f"{BASE}/request/supervisor/alice/enter_card", b'{"transaction": "t"}'),
        (f"{BASE}/request/supervisor/alice/cancel", b'{"transaction": "t", "reason": 5}'),
        (f"{BASE}/request/supervisor/alice/new_shoe", b'{"transaction": "t", "decks": 8}'),
        (f"{BASE}/request/viewer/viewer/status", b'{"transaction": "t\\u0000"}'),
        (f"{BASE}/request/supervisor/alice/pause", b'{"transaction": "t", "reason": "a\\nb"}'),
        (f"{BASE}/request/supervisor/alice/cancel", b'{"transaction": "t", "reason": "\\u0085"}'),
        (
            f"{BASE}/request/platform/platform/decide",
            b'{"transaction": "t", "round_id": 1, "request_seq": 1, "kind": "play\\u2028",'
            b' "box": 1, "hand": 1, "decision": "H"}',
        ),
    ],
)
def test_requests_the_api_refuses_fail_their_schema_too(topic: str, payload: bytes) -> None:
    with pytest.raises(RequestError):
        parse_request(topic, payload, PREFIX, TABLE)
    with pytest.raises(AssertionError):
        validate_message(topic, payload)


@pytest.mark.parametrize(
    "topic",
    [
        f"{BASE}/request/platform/platform/pause",  # the platform may not pause
        f"{BASE}/request/viewer/viewer/open_round",  # nor a viewer open a round
        f"{BASE}/request/dealer/dave/status",  # no such role
        f"{BASE}/request/supervisor/alice/reboot",  # no such command
        f"{BASE}/telemetry",
    ],
)
def test_a_topic_outside_the_api_matches_no_channel(topic: str) -> None:
    with pytest.raises(AssertionError, match="matches 0 channels"):
        validate_message(topic, b'{"transaction": "t"}')


def good_messages() -> dict[str, dict[str, Any]]:
    """One valid message of each kind, to break one field at a time."""
    machine = TableMachine(TableConfig(table_id=TABLE, game="baccarat"))
    wire = Wire()
    try:
        driver = Driver(WiredTable(machine, wire))
        driver.new_shoe()
        driver.open_and_close_betting()
        driver.draw("9S", "TD")
        by_type: dict[str, dict[str, Any]] = {}
        for topic, payload in wire.messages:
            message = json.loads(payload)
            if topic.endswith("/events"):
                by_type.setdefault(message["type"], message)
            else:  # the last: the state in the round, with its view
                by_type[topic.rsplit("/", 1)[-1]] = message
        return by_type
    finally:
        wire.close()


def broken(message: dict[str, Any], path: tuple[str, ...], change: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(message))
    node = copy
    for key in path[:-1]:
        node = node[key]
    change(node, path[-1])
    return copy


def rename(to: str) -> Any:
    def apply(node: dict[str, Any], key: str) -> None:
        node[to] = node.pop(key)

    return apply


def set_to(value: Any) -> Any:
    def apply(node: dict[str, Any], key: str) -> None:
        node[key] = value

    return apply


@pytest.mark.parametrize(
    ("kind", "path", "change"),
    [
        ("state", ("shoe", "cards_drawn"), rename("cards_seen")),
        ("state", ("devices", "camera_online"), rename("camera")),
        ("state", ("phase",), set_to("SHUFFLING")),
        ("state", ("seq",), set_to("12")),
        ("state", ("round", "view", "player_total"), set_to(12)),
        ("state", ("api",), set_to(2)),
        ("card_dealt", ("data", "position"), rename("where")),
        ("card_dealt", ("data", "card"), set_to("1S")),
        ("card_dealt", ("data", "face_down"), set_to(True)),  # a face-down card with its face
        ("card_dealt", ("seq",), set_to(0)),
        ("card_dealt", ("type",), set_to("card_drawn")),  # no such event type
        ("round_opened", ("data", "betting_closes_at"), set_to(None)),
        ("round_opened", ("data", "bets"), rename("offered")),
        ("shoe_started", ("data", "by"), set_to(7)),
        ("burn_started", ("data", "cards"), set_to(None)),
        ("dealer", ("action",), set_to("dance")),
        ("dealer", ("count",), rename("cards")),
    ],
)
def test_a_renamed_field_a_wrong_type_or_an_unknown_event_type_fails(
    kind: str, path: tuple[str, ...], change: Any
) -> None:
    message = good_messages()[kind]
    topic = {"state": f"{BASE}/state", "dealer": f"{BASE}/dealer"}.get(kind, f"{BASE}/events")
    validate_message(topic, encode(message))  # the original fits
    with pytest.raises(AssertionError, match=re.escape(topic)):
        validate_message(topic, encode(broken(message, path, change)))


def test_responses_that_break_their_contract_fail() -> None:
    topic = f"{BASE}/response/platform"
    good = response_message(
        "t",
        "decide",
        True,
        "decision taken",
        data={"round_id": 1, "kind": "play", "box": 1, "hand": 1, "decision": "H", "auto": False},
    )
    validate_message(topic, encode(good))
    for bad in (
        {**good, "ok": False},  # a refusal without its error
        {**good, "data": {**good["data"], "decision": "hit"}},
        {k: v for k, v in good.items() if k != "data"},  # a taken decision without its data
        {**good, "command": "pause"},  # data where the command gives none
        {
            **response_message("t", "pause", False, "no", code="refused"),
            "error": {"code": "nope", "message": "no"},
        },
    ):
        with pytest.raises(AssertionError):
            validate_message(topic, encode(bad))
    with pytest.raises(AssertionError, match="not JSON"):
        validate_message(topic, b"{")
    with pytest.raises(AssertionError):
        validate_message(f"{BASE}/availability", b"maybe")


# -- the document itself -----------------------------------------------------------------------


def _walk(node: Any, path: str = "#") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, value in node.items():
            found += _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _walk(value, f"{path}/{index}")
    return found


def test_the_document_is_asyncapi_3_with_valid_schemas_that_agree_with_the_code() -> None:
    from jsonschema import Draft7Validator, Draft202012Validator

    document = load_document()
    assert document["asyncapi"] == "3.0.0"
    schemas = document["components"]["schemas"]
    for name, schema in schemas.items():
        Draft202012Validator.check_schema(schema)
        Draft7Validator.check_schema(schema)  # AsyncAPI's own format is a draft-07 superset
        assert "$defs" not in schema and "prefixItems" not in json.dumps(schema), name
    for path, node in _walk(document):
        if "$ref" in node:
            # Beside a $ref, draft-07 ignores every keyword: the subset forbids them.
            assert set(node) == {"$ref"}, path
            target: Any = document
            for part in node["$ref"][2:].split("/"):
                assert part in target, f"{path}: {node['$ref']} does not resolve"
                target = target[part]
    # The lists of the code and of the document are the same lists.
    assert set(schemas["Event"]["properties"]["type"]["enum"]) == set(EVENT_TYPES)
    assert set(schemas["ErrorCode"]["enum"]) == set(ERROR_CODES)
    assert set(schemas["ShoeEnded"]["properties"]["why_code"]["enum"]) == set(SHOE_ENDS)
    message_code = re.compile(schemas["AuditEntry"]["properties"]["message_code"]["pattern"])
    assert all(message_code.fullmatch(code) for code in ANSWERS), sorted(ANSWERS)
    assert schemas["ApiVersion"]["const"] == API_VERSION
    requests = {
        channel["address"].rsplit("/", 1)[-1]: channel
        for channel in document["channels"].values()
        if "/request/" in channel["address"]
    }
    assert set(requests) == set(COMMANDS)
    for command, spec in COMMANDS.items():
        role = requests[command]["parameters"]["role"]
        role = document["components"]["parameters"]["supervisorRole"] if "$ref" in role else role
        assert set(role["enum"]) == spec.roles, command
        (message_ref,) = requests[command]["messages"].values()
        message = document["components"]["messages"][message_ref["$ref"].rsplit("/", 1)[-1]]
        schema = schemas[message["payload"]["$ref"].rsplit("/", 1)[-1]]
        assert set(schema["properties"]) == {"transaction", *spec.field_names}, command
        assert set(schema["required"]) == {"transaction"} | {
            field.name for field in spec.fields if field.required
        }, command
    validate_value("#/components/schemas/Availability", "online")


# -- secrecy on the wire ------------------------------------------------------------------------


def check_no_secret_on_the_wire(
    machine: TableMachine, public_before: set[str], messages: list[tuple[str, bytes]]
) -> None:
    """No serialized message names a burn card or the unrevealed hole card, unless another
    copy of that face is public anyway (dealt face up in this round, or revealed by the very
    messages checked: a face-up card_dealt, hole_card_read with its card, round_settled)."""
    public, secret = faces_in_play(machine)
    for topic, payload in messages:
        if not topic.endswith("/events"):
            continue
        message = json.loads(payload)
        data = message["data"]
        if message["type"] in ("card_dealt", "hole_card_read") and "card" in data:
            public.add(data["card"])
        elif message["type"] == "round_settled":
            public |= set(CARD_TOKEN.findall(json.dumps(data["result"])))
    secrets = secret - public - public_before
    if not secrets:
        return
    pattern = re.compile(r"\b(" + "|".join(sorted(secrets)) + r")\b")
    for topic, payload in messages:
        text = payload.decode()
        assert not pattern.search(text), (sorted(secrets), topic, text)


@pytest.mark.parametrize("game", GAME_IDS)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_no_message_on_the_wire_names_a_burn_card_or_the_hole_card_before_its_reveal(
    game: str, data: st.DataObject
) -> None:
    wire = Wire()
    table = WiredTable(TableMachine(TableConfig(table_id=TABLE, game=game)), wire)
    machine = table.machine
    try:
        for step in range(data.draw(st.integers(1, 100), label="length")):
            now = 1_000.0 + step
            if data.draw(st.integers(0, 3), label="helpful?"):
                event = helpful_event(data.draw, machine, now)
            else:
                event = random_event(data.draw, machine, now)
            public_before, _ = faces_in_play(machine)
            start = len(wire.messages)
            table.handle(event)
            produced = wire.messages[start:]
            check_no_secret_on_the_wire(machine, public_before, produced)
            for topic, payload in produced:
                validate_message(topic, payload)
        for topic, payload in wire.requests:
            validate_message(topic, payload)
    finally:
        wire.close()


def test_the_secrecy_check_catches_a_leak() -> None:
    """The wire check is not vacuous: the hole card's face in any message before the reveal
    fails it, while the messages the table really published pass."""
    wire = Wire()
    driver = wired_driver("blackjack-classic", wire)
    try:
        driver.new_shoe()
        driver.open_and_close_betting(boxes=1)
        public_before, _ = faces_in_play(driver.machine)
        start = len(wire.messages)
        driver.draw("9S", "QD")  # box 1, then the dealer's hole card, face down
        _public, secret = faces_in_play(driver.machine)
        assert "QD" in secret
        check_no_secret_on_the_wire(driver.machine, public_before, wire.messages[start:])
        leak = encode({"api": API_VERSION, "note": "the hole card is QD"})
        with pytest.raises(AssertionError):
            check_no_secret_on_the_wire(driver.machine, public_before, [(f"{BASE}/state", leak)])
    finally:
        wire.close()
