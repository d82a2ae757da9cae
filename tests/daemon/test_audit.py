"""The ``audit`` request against the real thing: ``livetable run`` with its shoe a simulator
on a pty, a real mosquitto (the production ACL and password file, or one that takes packets
of 4 KiB only), and the supervisors, the viewer and the platform as real MQTT clients.

A supervisor's commands, accepted and refused, are listed in journal order with the account,
the transaction and the answer it got; an entered card is hidden; a viewer reads the audit
and the platform may not; paging, by count and by bytes, gives every entry exactly once and
never an answer over the broker's packet limit. Every answer fits docs/asyncapi.yaml.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.client.api_client import Account, ApiClient
from controller.mqtt.connection import publish_packet_bytes
from controller.service.audit import audit_answer, audit_entry
from controller.service.wire import encode, response_message
from simulators.shoe.simulator import FaultPlan
from tests.daemon.test_ctl import (  # noqa: F401 (studio, peers, tables: fixtures)
    TIMEOUT_S,
    Studio,
    draw_until,
    open_round,
    peers,
    state_of,
    studio,
    tables,
)
from tests.daemon.test_security import (
    BASE,
    Peer,
    Table,
    latest_state,
    request_topic,
    response_topic,
    wait_online,
)
from tests.support.api_schema import validate_message
from tests.support.broker import BrokerProcess

AUDITED = ("SupervisorCommanded", "RoundRequested")
CARD_TOKEN = re.compile(r"\b[A2-9TJQK][SHDC]\b", re.IGNORECASE)


def client(on: Studio, role: str) -> ApiClient:
    """An API client of t1 with the secure broker's account for ``role``."""
    user, password = on.broker.users[role]
    api = ApiClient(
        "127.0.0.1", on.broker.port, "t1", Account(role, user, password), client_id=user
    )
    assert api.wait_connected(TIMEOUT_S), api.refused
    return api


def audit_pages(api: ApiClient, **fields: Any) -> list[dict[str, Any]]:
    """Every ``audit`` answer from ``since`` 0 on, paged while ``more``; each fits the
    document's schema."""
    answers = []
    since = 0
    while True:
        answer = api.request("audit", TIMEOUT_S, since=since, **fields)
        validate_message(response_topic(api.account.name), json.dumps(answer).encode())
        assert answer["ok"], answer
        answers.append(answer)
        data = answer["data"]
        assert data["last"] >= since
        if not data["more"]:
            return answers
        assert data["entries"], answer  # more, but nothing to go on from
        since = data["last"]


def test_the_audit_lists_each_command_with_its_outcome_and_hides_the_card(
    studio: Studio,  # noqa: F811
) -> None:
    alice = client(studio, "supervisor")
    viewer = client(studio, "viewer")
    try:
        sent: list[tuple[str, str, dict[str, Any]]] = []  # (command, transaction, answer)

        def command(name: str, **fields: Any) -> dict[str, Any]:
            transaction = uuid.uuid4().hex
            answer = alice.request(name, TIMEOUT_S, transaction, **fields)
            sent.append((name, transaction, answer))
            return answer

        assert command("new_shoe")["ok"]
        draw_until(studio, ("SHOE_READY",))
        assert command("pause", reason="spilled drink")["ok"]
        again = command("resume", resolution="burn")  # nothing was drawn: nothing to burn
        assert not again["ok"] and again["error"]["code"] == "refused", again
        assert command("resume")["ok"]
        state_of(studio, lambda s: s["phase"] == "SHOE_READY", "resumed")
        round_id = open_round(studio)  # by the platform: journaled with no role
        studio.table.shoe.faults = FaultPlan(unreadable_rate=1.0)
        draw_until(studio, ("PAUSED",))
        studio.table.shoe.faults = FaultPlan()
        card = studio.table.shoe.truth[-1].card
        assert card is not None
        assert command("enter_card", card=str(card).lower())["ok"]
        state_of(studio, lambda s: s["phase"] != "PAUSED", "the card entered")

        [answer] = audit_pages(viewer)  # a viewer reads it, all in one page
        raw = json.dumps(answer)
        data = answer["data"]
        entries = data["entries"]
        assert data["epoch"] == latest_state(studio.watch)["epoch"]  # type: ignore[index]
        assert data["more"] is False and data["last"] == entries[-1]["journal_seq"]

        # Every command row of the journal, in its order, and nothing else.
        rows = [entry for entry in studio.table.entries() if entry.kind in AUDITED]
        assert [e["journal_seq"] for e in entries] == [row.seq for row in rows]
        assert [e["command"] for e in entries] == [
            "new_shoe",
            "pause",
            "resume",
            "resume",
            "open_round",
            "enter_card",
        ]
        opened = entries[4]
        assert (opened["account"], opened["role"], opened["ok"]) == ("platform", None, True)
        assert opened["message"] == f"round {round_id} opened"
        # Its code beside the words, for a page in another language.
        assert (opened["message_code"], opened["message_values"]) == (
            "round_opened",
            {"round": str(round_id)},
        )

        # Alice's, each with what she sent and the answer she got.
        hers = [entry for entry in entries if entry["account"] == "alice"]
        assert len(hers) == len(sent)
        for entry, (name, transaction, got) in zip(hers, sent, strict=True):
            assert entry["role"] == "supervisor"
            assert (entry["command"], entry["transaction"]) == (name, transaction)
            assert (entry["ok"], entry["message"]) == (got["ok"], got["message"])
            assert entry["code"] == (None if got["ok"] else got["error"]["code"])
            assert isinstance(entry["at"], float)
        assert hers[1]["args"] == {"reason": "spilled drink"}
        refused = hers[2]
        assert refused["args"] == {"resolution": "burn"}
        assert (refused["ok"], refused["code"]) == (False, "refused")
        assert refused["message"] == "no card was drawn out of turn: nothing to burn"
        assert (refused["message_code"], refused["message_values"]) == ("nothing_to_burn", {})
        assert hers[3]["args"] == {}

        # The card entered by hand is in the journal, and nowhere in the audit.
        assert hers[4]["args"] == {"card": "hidden"}
        [entered] = [row for row in rows if row.fields.get("card")]
        assert entered.fields["card"] == str(card)
        assert not CARD_TOKEN.search(raw.replace(data["epoch"], "")), raw
    finally:
        alice.close()
        viewer.close()


def test_a_viewer_reads_the_audit_and_the_platform_may_not(studio: Studio) -> None:  # noqa: F811
    alice = client(studio, "supervisor")
    viewer = client(studio, "viewer")
    try:
        assert alice.request("pause", TIMEOUT_S, reason="check")["ok"]
        assert alice.request("resume", TIMEOUT_S)["ok"]
        [page] = audit_pages(viewer)
        assert [e["command"] for e in page["data"]["entries"]] == ["pause", "resume"]
        [page] = audit_pages(alice)  # and a supervisor, the same
        assert [e["command"] for e in page["data"]["entries"]] == ["pause", "resume"]
        # The platform's account (the ACL lets it send under its own role): forbidden.
        refused = studio.watch.ask(
            request_topic("platform", "platform", "audit"),
            {"transaction": "p-audit"},
            answer_on=response_topic("platform"),
        )
        validate_message(refused.topic, refused.payload)
        answer = refused.json()
        assert answer["ok"] is False and answer["error"]["code"] == "forbidden", answer
        assert "entries" not in refused.payload.decode()
        # Bad paging is malformed, in plain words.
        bad = viewer.request("audit", TIMEOUT_S, since=0, limit=501)
        assert bad["error"]["code"] == "malformed" and "limit must be 1 to 500" in bad["message"]
        bad = viewer.request("audit", TIMEOUT_S, since=-1)
        assert bad["error"]["code"] == "malformed", bad
    finally:
        alice.close()
        viewer.close()


def test_paging_one_at_a_time_gives_every_entry_once(studio: Studio) -> None:  # noqa: F811
    alice = client(studio, "supervisor")
    viewer = client(studio, "viewer")
    try:
        for number in range(4):
            assert alice.request("pause", TIMEOUT_S, reason=f"check {number}")["ok"]
            assert alice.request("resume", TIMEOUT_S)["ok"]
        assert not alice.request("resume", TIMEOUT_S)["ok"]  # refused: not paused
        [whole] = audit_pages(viewer)
        everything = whole["data"]["entries"]
        assert len(everything) == 9
        pages = audit_pages(viewer, limit=1)
        assert [len(page["data"]["entries"]) for page in pages] == [1] * 9
        assert [entry for page in pages for entry in page["data"]["entries"]] == everything
        assert [page["data"]["last"] for page in pages] == [e["journal_seq"] for e in everything]
        # From the middle on; and past the end, nothing more.
        middle = everything[4]["journal_seq"]
        after = viewer.request("audit", TIMEOUT_S, since=middle)["data"]
        assert after["entries"] == everything[5:] and after["more"] is False
        end = viewer.request("audit", TIMEOUT_S, since=everything[-1]["journal_seq"])["data"]
        assert end["entries"] == [] and end["last"] == everything[-1]["journal_seq"]
        assert end["more"] is False
    finally:
        alice.close()
        viewer.close()


LIMIT = 4096


def test_audit_pages_stay_under_the_brokers_packet_limit(
    tmp_path: Path,
    start_mosquitto: Callable[..., BrokerProcess],
    tables: Callable[..., Table],  # noqa: F811
    peers: Callable[..., Peer],  # noqa: F811
) -> None:
    """A broker that takes packets of 4 KiB at most (it drops the connection of a client
    that sends a larger one), and commands with long reasons: the audit comes in several
    pages, each under the limit, with every entry once; the daemon never lost the broker."""
    broker = start_mosquitto(
        tmp_path / "small-broker",
        extra_config=f"allow_anonymous true\nmax_packet_size {LIMIT}\n",
    )
    table = tables(broker.port)
    watch = peers(broker.port, subscribe=(f"{BASE}/#",)).wait_ready()
    table.daemon.start()
    wait_online(table, watch)
    alice = ApiClient("127.0.0.1", broker.port, "t1", Account("supervisor", "alice"))
    viewer = peers(broker.port, username="viewer", subscribe=(response_topic("viewer"),))
    viewer.wait_ready()
    try:
        assert alice.wait_connected(TIMEOUT_S), alice.refused
        for number in range(6):
            reason = f"{number} " + "a long reason, typed out in full " * 14
            assert alice.request("pause", TIMEOUT_S, reason=reason[:500])["ok"]
            assert alice.request("resume", TIMEOUT_S)["ok"]
        entries: list[dict[str, Any]] = []
        pages = 0
        since = 0
        while True:
            message = viewer.ask(
                request_topic("viewer", "viewer", "audit"),
                {"transaction": f"v-{pages}", "since": since},
                answer_on=response_topic("viewer"),
            )
            validate_message(message.topic, message.payload)
            size = publish_packet_bytes(message.topic, message.payload, None, True)
            assert size <= LIMIT, size
            data = message.json()["data"]
            entries += data["entries"]
            pages += 1
            if not data["more"]:
                break
            since = data["last"]
        assert pages > 1, "the 12 entries do not fit in one 4 KiB answer"
        assert [e["command"] for e in entries] == ["pause", "resume"] * 6
        seqs = [e["journal_seq"] for e in entries]
        assert seqs == sorted(set(seqs))
        assert table.daemon.log().count("connected to the broker") == 1
    finally:
        alice.close()


def test_a_page_takes_as_many_entries_as_fit_and_an_entry_too_large_alone_is_named() -> None:
    """controller.service.audit.audit_answer, the byte paging itself, at every room from too small
    for one entry to enough for all: never over the room, entries in order, ``more`` and
    ``last`` saying where to go on; an entry that fits in no answer is ``too_large``."""
    answered = encode(response_message("t", "pause", True, "paused"))
    entries = [
        audit_entry(
            seq,
            "SupervisorCommanded",
            {
                "command_id": f"alice/t{seq}",
                "command": "pause",
                "by": "alice",
                "role": "supervisor",
                "at": 1.5,
                "reason": "r" * (seq * 40),
                "resolution": "",
                "card": None,
            },
            answered,
        )
        for seq in range(1, 6)
    ]
    whole = len(encode(audit_answer("tx", 0, entries, False, "a" * 32, 10**6)))
    for room in range(200, whole + 1, 7):
        reply = audit_answer("tx", 0, entries, False, "a" * 32, room)
        if not reply["ok"]:
            assert reply["error"]["code"] == "too_large" and "journal row 1" in reply["message"]
            alone = audit_answer("tx", 0, entries[:1], True, "a" * 32, 10**6)
            assert len(encode(alone)) > room  # it would not have fitted, truly
            continue
        assert len(encode(reply)) <= room
        data = reply["data"]
        count = len(data["entries"])
        assert data["entries"] == entries[:count] and count >= 1
        assert data["last"] == count and data["more"] is (count < len(entries))
        if count < len(entries):  # the next entry would not have fitted
            rest = count + 1 < len(entries)
            bigger = audit_answer("tx", 0, entries[: count + 1], rest, "a" * 32, 10**6)
            assert len(encode(bigger)) > room
