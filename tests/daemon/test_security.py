"""Security of the MQTT API against the real daemon (``livetable run`` as a subprocess, its
shoe a simulator on a pty) and a real mosquitto.

- Who may do what: with the production password file and ACL the broker refuses unknown
  clients and drops a request published under another role or account, so the table never
  sees it; the daemon itself refuses a command the sender's role may not give.
- Hostile input: malformed, mistyped, oversized, unknown and flooded requests get the right
  error code and change nothing.
- Idempotency: a repeated request is answered again and executed once, across a SIGKILL.
- TLS to the broker, and MQTT 5 response topics that cannot point the table elsewhere.

Which layer refuses what: the broker refuses unknown clients, publishes outside an
account's ACL (an MQTT 5 PUBACK says "Not authorized"; the daemon never sees them) and, with
the studio's ``max_packet_size``, packets over 64 KiB; the daemon refuses everything else
with an error response (``malformed``, ``unknown_command``, ``forbidden``, ``too_large``).

Absence is never shown by waiting: each check of "nothing happened" follows a marker that
must come after it (a ``decide`` that no decision awaits is answered ``stale`` by the table's
own thread, after every request queued before it, without touching the journal).
"""

from __future__ import annotations

import json
import signal
import socket
import ssl
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.service.journal import Journal, JournalEntry
from controller.service.mqtt_api import MAX_REQUEST_BYTES
from simulators.shoe.simulator import ShoeSimulator
from tests.support.broker import BrokerProcess, free_port, start_broker
from tests.support.daemon import DaemonProcess, unique_by_seq, write_config
from tests.support.wait import wait_until

BASE = "livetable/t1"
TIMEOUT_S = 10.0
PUBACK_NOT_AUTHORIZED = "Not authorized"


def request_topic(role: str, account: str, command: str) -> str:
    return f"{BASE}/request/{role}/{account}/{command}"


def response_topic(account: str) -> str:
    return f"{BASE}/response/{account}"


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    correlation: bytes | None

    def json(self) -> Any:
        return json.loads(self.payload)


class Peer:
    """One MQTT connection (MQTT 5 unless told) that records every message it receives."""

    def __init__(
        self,
        port: int,
        *,
        username: str | None = None,
        password: str | None = None,
        subscribe: tuple[str, ...] = (),
        protocol: int = mqtt.MQTTv5,
        tls_ca: Path | None = None,
    ) -> None:
        self._lock = threading.Condition()
        self.messages: list[Message] = []
        self.ready = threading.Event()
        self.refusal: str | None = None
        self.disconnects: list[str] = []
        self._acks: dict[int, str] = {}
        self._subscribe = subscribe
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"{username or 'anonymous'}-{uuid.uuid4().hex[:8]}",
            protocol=protocol,
        )
        if username is not None:
            self.client.username_pw_set(username, password)
        if tls_ca is not None:
            self.client.tls_set(ca_certs=str(tls_ca))
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        self.client.on_publish = self._on_publish
        self.client.on_disconnect = self._on_disconnect
        self.client.connect_async("127.0.0.1", port, keepalive=30)
        self.client.loop_start()

    # -- callbacks (the client's thread) ------------------------------------------------

    def _on_connect(self, client: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if reason.is_failure:
            with self._lock:
                self.refusal = str(reason)
                self._lock.notify_all()
            return
        if self._subscribe:
            client.subscribe([(topic, 1) for topic in self._subscribe])
        else:
            self.ready.set()

    def _on_subscribe(self, _c: Any, _u: Any, _mid: int, reasons: Any, _p: Any) -> None:
        assert all(not reason.is_failure for reason in reasons), reasons
        self.ready.set()

    def _on_message(self, _c: Any, _u: Any, message: Any) -> None:
        properties = getattr(message, "properties", None)
        correlation = getattr(properties, "CorrelationData", None) if properties else None
        with self._lock:
            self.messages.append(Message(message.topic, bytes(message.payload), correlation))
            self._lock.notify_all()

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        with self._lock:
            self.disconnects.append(str(reason))
            self._lock.notify_all()

    def _on_publish(self, _c: Any, _u: Any, mid: int, reason: Any, _p: Any) -> None:
        self._acks[mid] = str(reason)

    # -- use (the test's thread) --------------------------------------------------------

    def wait_ready(self) -> Peer:
        assert self.ready.wait(TIMEOUT_S), f"the broker did not take this client ({self.refusal})"
        return self

    def publish(
        self, topic: str, payload: bytes | str, properties: Properties | None = None
    ) -> str:
        """Publish at QoS 1 and return the broker's PUBACK reason ("Success", or
        "Not authorized" when the ACL refuses it: MQTT 5 says so, 3.1.1 does not)."""
        info = self.client.publish(topic, payload, qos=1, properties=properties)
        info.wait_for_publish(TIMEOUT_S)
        assert info.is_published(), f"no PUBACK for {topic}"
        return self._acks.pop(info.mid, "Success")

    def received(self) -> list[Message]:
        """Every message so far (a copy: the client's thread goes on appending)."""
        with self._lock:
            return list(self.messages)

    def on(self, topic: str) -> list[Message]:
        return [message for message in self.received() if message.topic == topic]

    def wait_for(
        self, predicate: Callable[[list[Message]], Any], what: str, timeout: float = TIMEOUT_S
    ) -> Any:
        """Wait until ``predicate(messages so far)`` is true; return what it returned."""
        found: Any = None

        def check() -> Any:
            nonlocal found
            with self._lock:
                found = predicate(self.messages[:])
            return found

        wait_until(check, timeout, what)
        return found

    def ask(
        self,
        topic: str,
        payload: bytes | str | dict[str, Any],
        *,
        answer_on: str,
        properties: Properties | None = None,
        timeout: float = TIMEOUT_S,
    ) -> Message:
        """Send one request and return the next message on ``answer_on`` (the requests of
        one test go one at a time, so the next answer there is this one's, transaction or
        not)."""
        before = len(self.on(answer_on))
        body = json.dumps(payload) if isinstance(payload, dict) else payload
        reason = self.publish(topic, body, properties)
        assert reason == "Success", f"the broker refused {topic}: {reason}"
        return self.wait_for(
            lambda messages: [m for m in messages if m.topic == answer_on][before:][:1],
            f"an answer on {answer_on} to {topic}",
            timeout,
        )[0]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class Table:
    """A daemon and its shoe simulator, with the broker given."""

    def __init__(
        self,
        workdir: Path,
        port: int,
        *,
        game: str = "baccarat",
        account: tuple[str, str] | None = None,
        decision_s: float = 2.0,
        extra_mqtt: str = "",
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.shoe = ShoeSimulator("angel-eye", workdir / "shoe", seed=5)
        self.shoe.__enter__()
        username, password = account if account is not None else (None, None)
        config = write_config(
            workdir / "t1.toml",
            game=game,
            shoe_port=workdir / "shoe",
            broker_port=port,
            username=username,
            password=password,
            decision_s=decision_s,
            extra_mqtt=extra_mqtt,
        )
        self.daemon = DaemonProcess(config, workdir / "daemon.log")
        self.journal_path = workdir / "t1.journal"

    def entries(self, after: int = 0) -> list[JournalEntry]:
        """The journal's rows after row ``after``, its hash chain checked (SQLite lets a
        read-only reader in while the daemon writes)."""
        with Journal(self.journal_path, read_only=True) as journal:
            journal.verify()
            return list(journal.entries(after))

    def journal(self) -> list[tuple[int, str, dict[str, Any]]]:
        """Every row of the stopped daemon's journal as (seq, kind, fields)."""
        assert not self.daemon.alive()
        return [(entry.seq, entry.kind, entry.fields) for entry in self.entries()]

    def journal_rows(self, kind: str) -> list[dict[str, Any]]:
        return [fields for _seq, found, fields in self.journal() if found == kind]

    def close(self) -> None:
        self.daemon.stop()
        self.shoe.__exit__(None, None, None)


@pytest.fixture
def peers() -> Iterator[Callable[..., Peer]]:
    made: list[Peer] = []

    def make(port: int, **kwargs: Any) -> Peer:
        peer = Peer(port, **kwargs)
        made.append(peer)
        return peer

    yield make
    for peer in made:
        peer.close()


@pytest.fixture
def tables(tmp_path: Path) -> Iterator[Callable[..., Table]]:
    made: list[Table] = []

    def make(port: int, **kwargs: Any) -> Table:
        table = Table(tmp_path / f"table-{len(made)}", port, **kwargs)
        made.append(table)
        return table

    yield make
    for table in made:
        table.close()


def latest_state(watch: Peer) -> dict[str, Any] | None:
    states = watch.on(f"{BASE}/state")
    return states[-1].json() if states else None


def wait_online(table: Table, watch: Peer) -> dict[str, Any]:
    """Wait until the daemon says ``online`` and publishes a state with its shoe online;
    return that state."""

    def up() -> dict[str, Any] | None:
        availability = watch.on(f"{BASE}/availability")
        state = latest_state(watch)
        if not table.daemon.alive():
            raise AssertionError(f"the daemon died:\n{table.daemon.log()[-3000:]}")
        if availability and availability[-1].payload == b"online" and state is not None:
            return state if state["devices"]["shoe_online"] else None
        return None

    return wait_until(up, TIMEOUT_S, "the daemon online with its shoe")


# A fresh daemon journals ControllerStarted, ShoeOnline, then ShoeLockChanged once the shoe
# confirms the lock the daemon asked for (a second confirmation may follow: assert_unchanged).
STARTUP_ROWS = 3


def settled(peer: Peer, role: str, account: str) -> dict[str, Any]:
    """The state of a fresh daemon once its start-up rows are journaled (from ``status``)."""
    return wait_until(
        lambda: (state := status(peer, role, account))["journal"]["seq"] >= STARTUP_ROWS and state,
        TIMEOUT_S,
        "the daemon's start-up rows",
    )


def barrier(platform: Peer, account: str = "platform") -> None:
    """A marker through the table's own thread: a ``decide`` that no decision awaits is
    answered ``stale`` after every request queued before it, and touches no journal."""
    answer = platform.ask(
        request_topic("platform", account, "decide"),
        {
            "transaction": f"barrier-{uuid.uuid4().hex}",
            "round_id": 999_999,
            "request_seq": 999_999,
            "kind": "play",
            "box": 1,
            "hand": 1,
            "decision": "stand",
        },
        answer_on=response_topic(account),
    ).json()
    assert answer["error"]["code"] == "stale", answer


def status(peer: Peer, role: str, account: str) -> dict[str, Any]:
    answer = peer.ask(
        request_topic(role, account, "status"),
        {"transaction": f"status-{uuid.uuid4().hex}"},
        answer_on=response_topic(account),
    ).json()
    assert answer["ok"], answer
    return dict(answer["data"]["state"])


def assert_unchanged(table: Table, before: dict[str, Any], *states: dict[str, Any]) -> None:
    """No request changed the table: each state has the phase, pause and event count of
    ``before``, and the journal's head of ``before``, or of a later row that is only the shoe
    confirming its lock. (A fresh daemon asks the shoe to lock once or twice, as the shoe
    comes online; the second confirmation may be journaled a moment after the others, with
    or without requests: device news, not a change a request made.)"""
    allowed = {(before["journal"]["seq"], before["journal"]["hash"])}
    for entry in table.entries(after=before["journal"]["seq"]):
        assert entry.kind == "ShoeLockChanged" and entry.fields["locked"], entry
        allowed.add((entry.seq, entry.hash))
    for state in states:
        assert (state["phase"], state["pause"], state["seq"]) == (
            before["phase"],
            before["pause"],
            before["seq"],
        )
        assert (state["journal"]["seq"], state["journal"]["hash"]) in allowed, state["journal"]


# -- 1. Who may connect, and who may do what (password file and the production ACL) -------


def test_the_broker_refuses_strangers_and_binds_each_request_to_its_account(
    secure_mqtt_broker: BrokerProcess,
    tables: Callable[..., Table],
    peers: Callable[..., Peer],
) -> None:
    broker = secure_mqtt_broker
    users = broker.users
    port = broker.port
    table = tables(port, account=users["table"])
    table.daemon.start()

    def account(role: str, *topics: str) -> Peer:
        username, password = users[role]
        return peers(
            port,
            username=username,
            password=password,
            subscribe=(f"{BASE}/state", f"{BASE}/availability", response_topic(username), *topics),
        ).wait_ready()

    viewer = account("viewer")
    platform = account("platform")
    alice = account("supervisor")
    wait_online(table, viewer)
    before = settled(viewer, "viewer", "viewer")
    assert before["pause"] is None

    # Strangers: no account, a wrong password, a right password for another account.
    alice_name, alice_password = users["supervisor"]
    strangers = {
        "anonymous (MQTT 5)": peers(port),
        "anonymous (MQTT 3.1.1)": peers(port, protocol=mqtt.MQTTv311),
        "alice with a wrong password": peers(port, username=alice_name, password="wrong"),
        "bob with alice's password": peers(port, username="bob", password=alice_password),
        "an account that does not exist": peers(port, username="mallory", password="x"),
    }
    for who, stranger in strangers.items():
        wait_until(lambda s=stranger: s.refusal, TIMEOUT_S, f"the broker to refuse {who}")
        assert not stranger.ready.is_set(), who

    # A viewer and the platform asking under their own role: the daemon says forbidden.
    for peer, role, name in ((viewer, "viewer", "viewer"), (platform, "platform", "platform")):
        answer = peer.ask(
            request_topic(role, name, "pause"),
            {"transaction": f"{name}-pause", "reason": "let me pause"},
            answer_on=response_topic(name),
        ).json()
        assert answer["ok"] is False and answer["error"]["code"] == "forbidden", answer
        assert answer["transaction"] == f"{name}-pause"

    # Under a role or an account that is not theirs: the broker drops the publish (MQTT 5
    # says so in the PUBACK) and the table never hears of it.
    forged = [
        (viewer, request_topic("supervisor", "viewer", "pause")),
        (viewer, request_topic("supervisor", "alice", "pause")),
        (platform, request_topic("supervisor", "platform", "pause")),
        (platform, request_topic("supervisor", "alice", "cancel")),
        (alice, request_topic("supervisor", "bob", "pause")),
        (alice, request_topic("platform", "platform", "open_round")),
    ]
    for peer, topic in forged:
        body = json.dumps({"transaction": f"forged-{uuid.uuid4().hex}", "reason": "forged"})
        assert peer.publish(topic, body) == PUBACK_NOT_AUTHORIZED, topic
    # Nor may anyone but the table write its state.
    forged_state = json.dumps({**before, "phase": "PAUSED"})
    assert alice.publish(f"{BASE}/state", forged_state) == PUBACK_NOT_AUTHORIZED

    barrier(platform)
    after = status(alice, "supervisor", alice_name)
    assert_unchanged(table, before, after)
    assert after["pause"] is None and after["phase"] == before["phase"]
    assert all(m.json()["phase"] == before["phase"] for m in viewer.on(f"{BASE}/state"))

    # MQTT 5 correlation data comes back on the account's own response topic.
    properties = Properties(PacketTypes.PUBLISH)
    properties.ResponseTopic = response_topic(alice_name)
    properties.CorrelationData = b"console-7"
    echoed = alice.ask(
        request_topic("supervisor", alice_name, "status"),
        {"transaction": "with-correlation"},
        answer_on=response_topic(alice_name),
        properties=properties,
    )
    assert echoed.json()["transaction"] == "with-correlation"
    assert echoed.correlation == b"console-7"

    # Alice's own pause goes through, and the table says it was hers.
    answer = alice.ask(
        request_topic("supervisor", alice_name, "pause"),
        {"transaction": "alice-pause", "reason": "security check"},
        answer_on=response_topic(alice_name),
    ).json()
    assert answer["ok"], answer
    paused = viewer.wait_for(
        lambda _m: (s := latest_state(viewer)) is not None and s["pause"] is not None and s,
        "the paused state",
    )
    assert paused["phase"] == "PAUSED"
    assert paused["pause"]["by"] == alice_name
    assert "security check" in paused["pause"]["message"]

    assert table.daemon.kill(signal.SIGTERM) == 0
    commands = table.journal_rows("SupervisorCommanded")
    assert [(c["command"], c["by"], c["role"]) for c in commands] == [
        ("pause", alice_name, "supervisor")
    ], commands
    assert commands[0]["command_id"] == f"{alice_name}/alice-pause"
    assert table.journal_rows("RoundRequested") == []


def test_a_dealer_account_may_only_sign_in_and_out_at_its_own_table(
    secure_mqtt_broker: BrokerProcess,
    tables: Callable[..., Table],
    peers: Callable[..., Peer],
) -> None:
    """The shipped ACL's dealer station of t1: a sign-in and a sign-out there, under its own
    name and the dealer role, and nothing else (the broker drops the rest)."""
    broker = secure_mqtt_broker
    users, port = broker.users, broker.port
    table = tables(port, account=users["table"])
    table.daemon.start()
    name, password = users["dealer"]
    viewer_name, viewer_password = users["viewer"]
    viewer = peers(
        port,
        username=viewer_name,
        password=viewer_password,
        subscribe=(f"{BASE}/state", f"{BASE}/availability", response_topic(viewer_name)),
    ).wait_ready()
    dealer = peers(
        port, username=name, password=password, subscribe=(response_topic(name),)
    ).wait_ready()
    wait_online(table, viewer)

    signed_in = dealer.ask(
        request_topic("dealer", name, "dealer_sign_in"),
        {"transaction": "shift-start", "staff_id": "D-1043"},
        answer_on=response_topic(name),
    ).json()
    assert signed_in["ok"], signed_in
    assert status(viewer, "viewer", viewer_name)["dealer"]["staff_id"] == "D-1043"

    # Anything else: another command, another role, another account, another table, the
    # table's own topics.
    forged = [
        request_topic("dealer", name, "pause"),
        request_topic("dealer", name, "open_round"),
        request_topic("dealer", name, "status"),
        request_topic("supervisor", name, "dealer_sign_in"),
        request_topic("dealer", "alice", "dealer_sign_in"),
        f"livetable/t2/request/dealer/{name}/dealer_sign_in",
        f"{BASE}/state",
    ]
    for topic in forged:
        body = json.dumps({"transaction": f"forged-{uuid.uuid4().hex}", "staff_id": "D-9"})
        assert dealer.publish(topic, body) == PUBACK_NOT_AUTHORIZED, topic

    signed_out = dealer.ask(
        request_topic("dealer", name, "dealer_sign_out"),
        {"transaction": "shift-end"},
        answer_on=response_topic(name),
    ).json()
    assert signed_out["ok"], signed_out
    assert table.daemon.kill(signal.SIGTERM) == 0
    assert [row["staff_id"] for row in table.journal_rows("DealerSignedIn")] == ["D-1043"]
    assert [(row["by"], row["role"]) for row in table.journal_rows("DealerSignedOut")] == [
        (name, "dealer")
    ]


# -- 2. Hostile input on an open broker (the daemon still takes who from the topic) ------

ONE_MB = 1024 * 1024


def _json(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def _sized(size: int, transaction: str) -> bytes:
    """A pause request of exactly ``size`` bytes."""
    start, end = f'{{"transaction": "{transaction}", "reason": "'.encode(), b'"}'
    return start + b"x" * (size - len(start) - len(end)) + end


# (what, role, account, command, payload, error code, transaction echoed)
BAD_REQUESTS: list[tuple[str, str, str, str, bytes, str, str | None]] = [
    ("not JSON", "supervisor", "alice", "pause", b"{pause please", "malformed", None),
    (
        "not UTF-8",
        "supervisor",
        "alice",
        "pause",
        b'{"transaction": "\xff\xfe"}',
        "malformed",
        None,
    ),
    ("empty", "supervisor", "alice", "pause", b"", "malformed", None),
    ("a JSON array", "supervisor", "alice", "pause", b'["pause", "now"]', "malformed", None),
    ("a JSON string", "supervisor", "alice", "pause", b'"pause"', "malformed", None),
    ("JSON null", "supervisor", "alice", "pause", b"null", "malformed", None),
    ("no transaction", "supervisor", "alice", "pause", _json(reason="x"), "malformed", None),
    (
        "a numeric transaction",
        "supervisor",
        "alice",
        "pause",
        _json(transaction=5, reason="x"),
        "malformed",
        None,
    ),
    (
        "a blank transaction",
        "supervisor",
        "alice",
        "pause",
        _json(transaction="  "),
        "malformed",
        None,
    ),
    (
        "a transaction too long",
        "supervisor",
        "alice",
        "pause",
        _json(transaction="t" * 129, reason="x"),
        "malformed",
        None,
    ),
    (
        "reason is a number",
        "supervisor",
        "alice",
        "pause",
        _json(transaction="t-reason-5", reason=5),
        "malformed",
        "t-reason-5",
    ),
    (
        "reason is true",
        "supervisor",
        "alice",
        "pause",
        _json(transaction="t-reason-true", reason=True),
        "malformed",
        "t-reason-true",
    ),
    (
        "reason is blank",
        "supervisor",
        "alice",
        "pause",
        _json(transaction="t-reason-blank", reason=" "),
        "malformed",
        "t-reason-blank",
    ),
    (
        "no reason",
        "supervisor",
        "alice",
        "pause",
        _json(transaction="t-no-reason"),
        "malformed",
        "t-no-reason",
    ),
    (
        "a second identity in the payload",
        "supervisor",
        "alice",
        "pause",
        _json(transaction="t-by-bob", reason="x", by="bob", role="supervisor"),
        "malformed",
        "t-by-bob",
    ),
    (
        "boxes is a string",
        "platform",
        "platform",
        "open_round",
        _json(transaction="t-boxes", boxes="7"),
        "malformed",
        "t-boxes",
    ),
    (
        "boxes out of range",
        "platform",
        "platform",
        "open_round",
        _json(transaction="t-boxes-99", boxes=99),
        "malformed",
        "t-boxes-99",
    ),
    (
        "a negative since",
        "viewer",
        "viewer",
        "events",
        _json(transaction="t-since", since=-1),
        "malformed",
        "t-since",
    ),
    (
        "a huge number",
        "viewer",
        "viewer",
        "events",
        _json(transaction="t-huge", since=10**30),
        "malformed",
        "t-huge",
    ),
    (
        "a card that is no card",
        "supervisor",
        "alice",
        "enter_card",
        _json(transaction="t-card", card="ZZ"),
        "malformed",
        "t-card",
    ),
    (
        "a resolution that does not exist",
        "supervisor",
        "alice",
        "resume",
        _json(transaction="t-resolution", resolution="ignore"),
        "malformed",
        "t-resolution",
    ),
    (
        "a decision without its round",
        "platform",
        "platform",
        "decide",
        _json(transaction="t-decide", decision="hit"),
        "malformed",
        "t-decide",
    ),
    (
        "an unknown command",
        "supervisor",
        "alice",
        "self_destruct",
        _json(transaction="t-unknown"),
        "unknown_command",
        "t-unknown",
    ),
    (
        "an unknown role",
        "admin",
        "alice",
        "pause",
        _json(transaction="t-admin", reason="x"),
        "forbidden",
        None,
    ),
    (
        "the viewer pausing",
        "viewer",
        "viewer",
        "pause",
        _json(transaction="t-viewer", reason="x"),
        "forbidden",
        "t-viewer",
    ),
    (
        "the platform declaring a shoe",
        "platform",
        "platform",
        "new_shoe",
        _json(transaction="t-platform"),
        "forbidden",
        "t-platform",
    ),
    (
        "a supervisor deciding for a player",
        "supervisor",
        "alice",
        "decide",
        _json(transaction="t-alice-decide"),
        "forbidden",
        "t-alice-decide",
    ),
    (
        "one byte over the limit",
        "supervisor",
        "alice",
        "pause",
        _sized(MAX_REQUEST_BYTES + 1, "t-limit"),
        "too_large",
        None,
    ),
    (
        "1 MB",
        "supervisor",
        "alice",
        "pause",
        _sized(ONE_MB, "t-1mb"),
        "too_large",
        None,
    ),
]


@pytest.fixture
def open_table(
    mqtt_broker: tuple[str, int],
    tables: Callable[..., Table],
    peers: Callable[..., Peer],
) -> tuple[Table, Peer]:
    """A baccarat table on the open broker, started and settled, and a peer subscribed to
    everything the table publishes."""
    _host, port = mqtt_broker
    table = tables(port)
    watch = peers(port, subscribe=(f"{BASE}/#",)).wait_ready()
    table.daemon.start()
    wait_online(table, watch)
    settled(watch, "viewer", "viewer")
    return table, watch


def test_malformed_requests_get_the_right_error_and_change_nothing(
    open_table: tuple[Table, Peer],
) -> None:
    table, watch = open_table
    before = status(watch, "viewer", "viewer")
    for what, role, account, command, payload, code, transaction in BAD_REQUESTS:
        answer = watch.ask(
            request_topic(role, account, command), payload, answer_on=response_topic(account)
        ).json()
        assert answer["ok"] is False, (what, answer)
        assert answer["error"]["code"] == code, (what, answer)
        assert answer["transaction"] == transaction, (what, answer)
        assert answer["command"] == command[:50], (what, answer)
        # An error never echoes much of what it was sent.
        assert len(json.dumps(answer)) < 1000, (what, len(json.dumps(answer)))
    assert table.daemon.alive(), table.daemon.log()[-3000:]

    barrier(watch)
    after = status(watch, "viewer", "viewer")
    assert_unchanged(table, before, after)
    retained = [m.json() for m in watch.on(f"{BASE}/state")]
    assert retained[-1]["journal"]["seq"] <= after["journal"]["seq"]
    assert {state["phase"] for state in retained} == {before["phase"]}
    assert not any(
        m.topic == f"{BASE}/events" and m.json()["seq"] > before["seq"] for m in watch.received()
    )

    # A valid command still works afterwards, and is the only thing that changed the table.
    answer = watch.ask(
        request_topic("supervisor", "alice", "pause"),
        _json(transaction="t-valid", reason="after the garbage"),
        answer_on=response_topic("alice"),
    ).json()
    assert answer["ok"], answer
    paused = status(watch, "viewer", "viewer")
    assert paused["phase"] == "PAUSED" and paused["pause"]["by"] == "alice"
    assert table.daemon.kill(signal.SIGTERM) == 0
    # Since the first bad request: the pause, the shoe acknowledging the lock it asked, and
    # the stop (SIGTERM journals ControllerStopping as its last row). A fresh daemon's second
    # lock confirmation may land before the pause too (assert_unchanged): device news only.
    rows = [
        (kind, fields) for seq, kind, fields in table.journal() if seq > before["journal"]["seq"]
    ]
    paused_at = next(i for i, (kind, _fields) in enumerate(rows) if kind != "ShoeLockChanged")
    assert all(fields["locked"] for _kind, fields in rows[:paused_at]), rows
    assert rows[paused_at][0] == "SupervisorCommanded", rows
    assert rows[paused_at][1]["command_id"] == "alice/t-valid", rows
    assert rows[-1][0] == "ControllerStopping", rows
    assert {kind for kind, _fields in rows[paused_at + 1 : -1]} <= {"ShoeLockChanged"}, rows


def production_max_packet_size() -> int:
    conf = Path(__file__).resolve().parents[2] / "systemd" / "mosquitto" / "livetable.conf"
    sizes = [
        int(line.split()[1])
        for line in conf.read_text().splitlines()
        if line.startswith("max_packet_size ")
    ]
    assert len(sizes) == 1, sizes
    return sizes[0]


def test_with_the_production_packet_limit_the_broker_stops_1_mb_before_the_daemon(
    tmp_path: Path,
    tables: Callable[..., Table],
    peers: Callable[..., Peer],
) -> None:
    """The open test broker has no packet limit, so the daemon itself refuses 1 MB
    (``too_large``, above). The studio broker's ``max_packet_size`` refuses it first: it
    disconnects the sender and forwards nothing, and the daemon goes on answering."""
    limit = production_max_packet_size()
    assert MAX_REQUEST_BYTES < limit < ONE_MB
    broker = start_broker(
        tmp_path / "limited-broker", extra_config=f"allow_anonymous true\nmax_packet_size {limit}\n"
    )
    try:
        table = tables(broker.port)
        watch = peers(broker.port, subscribe=(f"{BASE}/#",)).wait_ready()
        table.daemon.start()
        wait_online(table, watch)
        before = settled(watch, "viewer", "viewer")
        sender = peers(broker.port, protocol=mqtt.MQTTv311).wait_ready()
        # QoS 0: a QoS 1 publish would be sent again on every reconnect.
        sender.client.publish(
            request_topic("supervisor", "alice", "pause"), _sized(ONE_MB, "t-1mb"), qos=0
        )
        wait_until(lambda: sender.disconnects, TIMEOUT_S, "the broker to drop the sender")
        # Between the two limits: the broker forwards it, the daemon refuses it.
        answer = watch.ask(
            request_topic("supervisor", "alice", "pause"),
            _sized(MAX_REQUEST_BYTES + 1, "t-17kb"),
            answer_on=response_topic("alice"),
        ).json()
        assert answer["error"]["code"] == "too_large"
        assert str(MAX_REQUEST_BYTES + 1) in answer["message"]
        barrier(watch)
        assert [m.json()["message"] for m in watch.on(response_topic("alice"))] == [
            answer["message"]
        ], "the daemon saw the 1 MB request"
        assert_unchanged(table, before, status(watch, "viewer", "viewer"))
        assert table.daemon.alive()
    finally:
        died_with = broker.stop()
    assert died_with is None, broker.log()


# Each kind of bad request of the flood under its own account, so that its answers arrive on
# their own response topic: (role, command, payload, the error code).
FLOOD_BAD: dict[str, tuple[str, str, bytes, str]] = {
    "flood-json": ("supervisor", "pause", b"{nope", "malformed"),
    "flood-array": ("supervisor", "pause", b"[1, 2, 3]", "malformed"),
    "flood-type": ("supervisor", "pause", _json(transaction="x", reason=5), "malformed"),
    "flood-no-transaction": ("supervisor", "pause", _json(reason="x"), "malformed"),
    "flood-unknown": ("supervisor", "explode", _json(transaction="x"), "unknown_command"),
    "flood-role": ("root", "pause", _json(transaction="x", reason="x"), "forbidden"),
    "flood-viewer": ("viewer", "pause", _json(transaction="x", reason="x"), "forbidden"),
    "flood-big": ("supervisor", "pause", _sized(MAX_REQUEST_BYTES + 1000, "x"), "too_large"),
}
FLOOD_REQUESTS = 10_000
# Requests sent before waiting for their answers. mosquitto queues at most 1000 QoS 1
# messages per client by default (the test broker's setting; livetable.conf raises it) and
# drops the rest before the daemon, or the listener, sees them: a batch stays below that.
FLOOD_BATCH = 500


@pytest.mark.slow
def test_a_flood_of_good_and_bad_requests_is_answered_and_changes_nothing(
    open_table: tuple[Table, Peer],
    peers: Callable[..., Peer],
) -> None:
    table, watch = open_table
    port = watch.client.port
    flooder = peers(port).wait_ready()
    before = status(watch, "viewer", "viewer")
    bad_accounts = list(FLOOD_BAD)
    sent: dict[str, int] = dict.fromkeys([*bad_accounts, "flood-status"], 0)
    status_transactions: set[str] = set()

    def answered() -> int:
        prefix = response_topic("flood-")
        return sum(1 for m in watch.received() if m.topic.startswith(prefix))

    for start in range(0, FLOOD_REQUESTS, FLOOD_BATCH):
        infos = []
        for index in range(start, start + FLOOD_BATCH):
            if index % 2 == 0:
                account, transaction = "flood-status", f"s-{index}"
                topic = request_topic("viewer", account, "status")
                payload = _json(transaction=transaction)
                status_transactions.add(transaction)
            else:
                account = bad_accounts[(index // 2) % len(bad_accounts)]
                role, command, payload, _code = FLOOD_BAD[account]
                topic = request_topic(role, account, command)
            sent[account] += 1
            infos.append(flooder.client.publish(topic, payload, qos=1))
        for info in infos:
            info.wait_for_publish(TIMEOUT_S)
        done = start + FLOOD_BATCH
        wait_until(lambda n=done: answered() >= n, 30, f"answers to {done} flood requests")
        assert table.daemon.alive(), table.daemon.log()[-3000:]

    assert answered() == FLOOD_REQUESTS
    for account, (_role, _command, _payload, code) in FLOOD_BAD.items():
        answers = [m.json() for m in watch.on(response_topic(account))]
        assert len(answers) == sent[account], account
        assert {a["error"]["code"] for a in answers} == {code}, (account, answers[0])
    statuses = [m.json() for m in watch.on(response_topic("flood-status"))]
    assert {a["transaction"] for a in statuses} == status_transactions
    assert all(a["ok"] for a in statuses)
    assert_unchanged(table, before, *(a["data"]["state"] for a in statuses))

    barrier(watch)
    after = status(watch, "viewer", "viewer")
    assert_unchanged(table, before, after)
    assert table.daemon.alive()
    assert not any(
        m.topic == f"{BASE}/events" and m.json()["seq"] > before["seq"] for m in watch.received()
    )


# -- 3. A repeated request is answered again and executed once -----------------------------


def wait_restarted(table: Table, watch: Peer, offline_before: int) -> None:
    """After a kill: the broker said ``offline`` (the daemon's will), then the new daemon
    says ``online`` and publishes its state."""
    availability = f"{BASE}/availability"
    watch.wait_for(
        lambda _m: any(m.payload == b"offline" for m in watch.on(availability)[offline_before:]),
        "availability offline after the kill",
    )
    table.daemon.start()
    watch.wait_for(
        lambda _m: (
            (seen := watch.on(availability)[offline_before:])
            and seen[-1].payload == b"online"
            and any(m.payload == b"offline" for m in seen)
        ),
        "availability online after the restart",
    )


def test_a_repeated_pause_is_answered_each_time_and_journaled_once_across_a_sigkill(
    open_table: tuple[Table, Peer],
) -> None:
    table, watch = open_table
    pause = _json(transaction="pause-once", reason="spilled drink")
    topic = request_topic("supervisor", "alice", "pause")
    first = watch.ask(topic, pause, answer_on=response_topic("alice"))
    second = watch.ask(topic, pause, answer_on=response_topic("alice"))
    assert first.json()["ok"] and first.json()["transaction"] == "pause-once", first.json()
    assert second.payload == first.payload
    paused = status(watch, "viewer", "viewer")
    assert paused["phase"] == "PAUSED" and paused["pause"]["by"] == "alice"

    offline_before = len(watch.on(f"{BASE}/availability"))
    assert table.daemon.kill(signal.SIGKILL) == -signal.SIGKILL
    rows = table.journal_rows("SupervisorCommanded")
    assert [row["command_id"] for row in rows] == ["alice/pause-once"]
    pauses_published = [
        m.json() for m in watch.on(f"{BASE}/events") if m.json()["type"] == "table_paused"
    ]
    assert len(pauses_published) == 1

    wait_restarted(table, watch, offline_before)
    third = watch.ask(topic, pause, answer_on=response_topic("alice"))
    assert third.payload == first.payload
    barrier(watch)
    assert status(watch, "viewer", "viewer")["pause"]["by"] == "alice"
    assert table.daemon.kill(signal.SIGTERM) == 0
    rows = table.journal_rows("SupervisorCommanded")
    assert [row["command_id"] for row in rows] == ["alice/pause-once"]
    # A restarted daemon sends again what the broker had not acknowledged: by seq, once.
    events = unique_by_seq([m.json() for m in watch.on(f"{BASE}/events")])
    assert [e["type"] for e in events].count("table_paused") == 1, events


def drive_to_a_decision(table: Table, watch: Peer) -> dict[str, Any]:
    """Declare a shoe, burn, open a round and deal until the platform must decide (as the
    supervisor, the platform and the dealer would); return the decision_requested event."""
    acted_on: tuple[int, int] | None = None
    rounds = 0

    def step() -> dict[str, Any] | None:
        nonlocal acted_on, rounds
        assert table.daemon.alive(), table.daemon.log()[-3000:]
        state = latest_state(watch)
        if state is None:
            return None
        phase = state["phase"]
        if phase == "DECIDING":
            requested = [
                e
                for m in watch.on(f"{BASE}/events")
                if (e := m.json())["type"] == "decision_requested"
            ]
            return requested[-1] if requested else None
        assert phase != "PAUSED", state["pause"]
        key = (state["seq"], state["journal"]["seq"])
        if key == acted_on:
            return None
        if phase == "AWAITING_SHUFFLE":
            answer = watch.ask(
                request_topic("supervisor", "alice", "new_shoe"),
                _json(transaction=uuid.uuid4().hex),
                answer_on=response_topic("alice"),
            ).json()
            assert answer["ok"], answer
        elif phase in ("BURN_REVEAL", "BURNING", "DEALING"):
            table.shoe.draw()
        elif phase == "SHOE_READY":
            assert rounds < 5, "five rounds without a decision"
            answer = watch.ask(
                request_topic("platform", "platform", "open_round"),
                _json(transaction=uuid.uuid4().hex),
                answer_on=response_topic("platform"),
            ).json()
            assert answer["ok"], answer
            rounds += 1
        else:
            return None  # betting: its timer closes it
        acted_on = key
        return None

    return wait_until(step, 60, "a decision to take")


@pytest.mark.slow
def test_a_repeated_decision_is_answered_again_and_taken_once(
    mqtt_broker: tuple[str, int],
    tables: Callable[..., Table],
    peers: Callable[..., Peer],
) -> None:
    _host, port = mqtt_broker
    # A long decision time: the table must not decide by itself while the test asks.
    table = tables(port, game="blackjack-classic", decision_s=60.0)
    watch = peers(port, subscribe=(f"{BASE}/#",)).wait_ready()
    table.daemon.start()
    wait_online(table, watch)
    requested = drive_to_a_decision(table, watch)
    data = requested["data"]
    decision = "stand" if "stand" in data["options"] else data["options"][0]
    fields = {
        "round_id": data["round_id"],
        "request_seq": requested["seq"],
        "kind": data["kind"],
        "box": data["box"],
        "hand": data["hand"],
        "decision": decision,
    }
    topic = request_topic("platform", "platform", "decide")
    answer_on = response_topic("platform")
    first = watch.ask(topic, _json(transaction="decide-1", **fields), answer_on=answer_on).json()
    assert first["ok"], first
    assert first["data"]["decision"] == decision
    again = watch.ask(topic, _json(transaction="decide-2", **fields), answer_on=answer_on).json()
    assert again == {**first, "transaction": "decide-2"}
    # The same transaction again: the same answer, word for word.
    repeat = watch.ask(topic, _json(transaction="decide-1", **fields), answer_on=answer_on)
    assert repeat.json() == first

    barrier(watch)
    taken = [e for m in watch.on(f"{BASE}/events") if (e := m.json())["type"] == "decision_taken"]
    assert len(taken) == 1 and not taken[0]["data"].get("auto"), taken
    assert table.daemon.kill(signal.SIGTERM) == 0
    decided = table.journal_rows("PlatformDecided")
    assert len(decided) == 1, decided
    assert (decided[0]["round_id"], decided[0]["decision"]) == (data["round_id"], decision)


# -- 4. TLS between the daemon and the broker ------------------------------------------------


@dataclass
class TlsBroker:
    broker: BrokerProcess
    tls_port: int
    ca_file: Path


@pytest.fixture
def tls_broker(tmp_path: Path) -> Iterator[TlsBroker]:
    """mosquitto with a TLS listener on a free loopback port, its certificate for 127.0.0.1
    signed by a test CA (trustme), beside the plain listener start_broker always opens."""
    import trustme

    workdir = tmp_path / "tls-broker"
    workdir.mkdir()
    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1")
    ca_file, cert_file, key_file = (workdir / n for n in ("ca.pem", "broker.pem", "broker.key"))
    authority.cert_pem.write_to_path(str(ca_file))
    certificate.private_key_pem.write_to_path(str(key_file))
    cert_file.write_bytes(b"".join(pem.bytes() for pem in certificate.cert_chain_pems))
    tls_port = free_port()
    broker = start_broker(
        workdir,
        extra_config=(
            "allow_anonymous true\n"
            f"listener {tls_port} 127.0.0.1\n"
            f"cafile {ca_file}\ncertfile {cert_file}\nkeyfile {key_file}\n"
            "tls_version tlsv1.2\n"
        ),
    )

    def listening() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", tls_port), timeout=0.5):
                return True
        except OSError:
            return False

    try:
        wait_until(listening, TIMEOUT_S, "the TLS listener")
        yield TlsBroker(broker, tls_port, ca_file)
    finally:
        died_with = broker.stop()
    if died_with is not None:
        pytest.fail(f"mosquitto died during the test (exit {died_with}):\n{broker.log()}")


def test_the_daemon_speaks_tls_to_the_broker_and_a_client_without_the_ca_is_refused(
    tls_broker: TlsBroker,
    tables: Callable[..., Table],
    peers: Callable[..., Peer],
) -> None:
    port = tls_broker.tls_port
    table = tables(port, extra_mqtt=f'[mqtt.tls]\nca_file = "{tls_broker.ca_file}"\n')
    table.daemon.start()

    # A client that trusts only the system's CAs: the handshake fails, nothing is said.
    stranger = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="no-ca", protocol=mqtt.MQTTv5)
    stranger.tls_set()
    with pytest.raises(ssl.SSLCertVerificationError):
        stranger.connect("127.0.0.1", port)
    # Nor does the TLS listener speak plain MQTT.
    plain = peers(port)
    wait_until(
        lambda: plain.disconnects or plain.refusal, TIMEOUT_S, "the TLS listener to drop plain MQTT"
    )
    assert not plain.ready.is_set()

    # With the CA: the daemon went online and its state is there.
    viewer = peers(port, subscribe=(f"{BASE}/#",), tls_ca=tls_broker.ca_file).wait_ready()
    state = wait_online(table, viewer)
    assert state["table"] == "t1" and state["devices"]["shoe_online"] is True
    assert status(viewer, "viewer", "viewer")["journal"]["seq"] >= 1
    assert f"connected to the broker 127.0.0.1:{port}" in table.daemon.log()


# -- 5. MQTT 5 response topics and correlation data -----------------------------------------


def v5_route(topic: str, correlation: bytes) -> Properties:
    properties = Properties(PacketTypes.PUBLISH)
    properties.ResponseTopic = topic
    properties.CorrelationData = correlation
    return properties


def test_a_response_topic_is_honoured_only_under_the_accounts_own(
    open_table: tuple[Table, Peer],
    peers: Callable[..., Peer],
) -> None:
    table, watch = open_table
    spy = peers(watch.client.port, subscribe=("#",)).wait_ready()
    own = response_topic("alice")
    console = f"{own}/console-1"

    # Below the account's own response topic: the answer goes there, correlation echoed,
    # both for a request answered at once and for a command the table's thread runs.
    for command, fields in (("status", {}), ("pause", {"reason": "a console asked"})):
        correlation = f"\x00{command}\xff".encode("latin-1")
        answer = watch.ask(
            request_topic("supervisor", "alice", command),
            _json(transaction=f"v5-{command}", **fields),
            answer_on=console,
            properties=v5_route(console, correlation),
        )
        assert answer.json()["transaction"] == f"v5-{command}" and answer.json()["ok"]
        assert answer.correlation == correlation
    assert not any(m.json()["transaction"].startswith("v5-") for m in watch.on(own))

    # Anywhere else: the answer goes to the account's own response topic, correlation still
    # echoed, and the table publishes nothing where it was told to.
    elsewhere = (
        f"{BASE}/state",
        f"{BASE}/events",
        f"{BASE}/availability",
        f"{BASE}/dealer",
        response_topic("bob"),
        f"{own}-console",  # a sibling that only begins with the account's name
        "livetable/t2/response/alice",
        "elsewhere/entirely",
        own.upper(),
    )
    for index, topic in enumerate(elsewhere):
        correlation = f"elsewhere-{index}".encode()
        answer = watch.ask(
            request_topic("supervisor", "alice", "status"),
            _json(transaction=f"elsewhere-{index}"),
            answer_on=own,
            properties=v5_route(topic, correlation),
        )
        assert answer.json()["transaction"] == f"elsewhere-{index}"
        assert answer.correlation == correlation
    # Every answer reached the spy, subscribed to everything, before the last one above.
    spy.wait_for(
        lambda messages: any(b'"elsewhere-8"' in m.payload and m.topic == own for m in messages),
        "the spy to see the last answer",
    )
    answers = [
        m for m in spy.received() if b'"transaction"' in m.payload and "/request/" not in m.topic
    ]
    assert {m.topic for m in answers} == {own, console}, sorted({m.topic for m in answers})
    # The retained state is still the table's own.
    fresh = Peer(watch.client.port, subscribe=(f"{BASE}/state",))
    try:
        fresh.wait_ready()
        state = fresh.wait_for(lambda messages: messages[:1], "the retained state")[0].json()
    finally:
        fresh.close()
    assert "transaction" not in state and state["phase"] == "PAUSED"
    assert table.daemon.alive()


# A response topic below the account's own that holds a wildcard cannot be published to:
# the daemon answers on the account's own topic instead, and goes on.


def wildcard_request(watch: Peer, command: str, transaction: str, **fields: Any) -> None:
    topic = f"{response_topic('alice')}/#"
    reason = watch.publish(
        request_topic("supervisor", "alice", command),
        _json(transaction=transaction, **fields),
        v5_route(topic, transaction.encode()),
    )
    assert reason == "Success", "mosquitto forwards a response topic with a wildcard"


def answers_to(watch: Peer, transaction: str) -> list[Message]:
    return [m for m in watch.on(response_topic("alice")) if m.json()["transaction"] == transaction]


def test_a_status_with_a_wildcard_response_topic_is_answered_on_the_accounts_own(
    open_table: tuple[Table, Peer],
) -> None:
    table, watch = open_table
    wildcard_request(watch, "status", "wild-status")
    status(watch, "supervisor", "alice")  # answered after it, on the same thread
    answers = answers_to(watch, "wild-status")
    assert answers, "the status request with a wildcard response topic went unanswered"
    assert answers[0].correlation == b"wild-status"
    assert table.daemon.alive()


def test_a_pause_with_a_wildcard_response_topic_does_not_stop_the_daemon(
    open_table: tuple[Table, Peer],
) -> None:
    table, watch = open_table
    wildcard_request(watch, "pause", "wild-pause", reason="wildcards")
    wait_until(
        lambda: answers_to(watch, "wild-pause") or not table.daemon.alive(),
        TIMEOUT_S,
        "an answer to the pause, or the daemon's end",
    )
    assert table.daemon.alive(), f"the daemon died:\n{table.daemon.log()[-2000:]}"
    assert answers_to(watch, "wild-pause")[0].correlation == b"wild-pause"
    barrier(watch)
    assert status(watch, "viewer", "viewer")["pause"]["by"] == "alice"
