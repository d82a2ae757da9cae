"""The ``pictures`` request against ``livetable run`` on the secure broker (the production
ACL and password file), as the platform, a supervisor and the viewer would send it.

The table's journal was written with the camera simulator's pictures up to a blackjack
round whose dealer's hole card lies face down: no role reads that picture's bytes or digest
(it is listed as ``secret``), every other picture of the round comes back whole, page after
page, each answer under the broker's packet limit and fitting docs/asyncapi.yaml.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from controller.client.api_client import Account, ApiClient
from controller.service.journal import JournalEntry
from controller.table.config import TableConfig
from tests.daemon.test_ctl import TIMEOUT_S
from tests.daemon.test_security import (  # noqa: F401 (peers, tables: fixtures)
    BASE,
    peers,
    request_topic,
    response_topic,
    tables,
    wait_online,
)
from tests.support.api_schema import validate_message
from tests.support.broker import BrokerProcess
from tests.support.pictures import picture_fields, pictured_table, play


def journal_up_to_a_hole_card(path: Path) -> list[dict[str, Any]]:
    """Table t1's journal at ``path``, with pictures, stopped right after the picture of
    round 1's face-down card: that round's picture rows."""
    config = TableConfig(table_id="t1", game="blackjack-classic", journal_path=path)
    runtime, _ = pictured_table(config)

    def hole_pictured(_effects: list[Any], last: JournalEntry | None) -> bool:
        return last is not None and last.kind == "CardPictured" and last.fields["face_down"]

    try:
        play(runtime, hole_pictured)
    finally:
        runtime.table.close()
    return picture_fields(path, 1)


def read_all(api: ApiClient, round_id: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every page of the round's pictures: the answers, and the entries."""
    answers, entries = [], []
    start: dict[str, int] | None = {"row": 0, "offset": 0}
    while start is not None:
        answer = api.request("pictures", TIMEOUT_S, round_id=round_id, **start)
        validate_message(response_topic(api.account.name), json.dumps(answer).encode())
        assert answer["ok"], answer
        answers.append(answer)
        entries += answer["data"]["pictures"]
        start = answer["data"]["next"]
        assert len(answers) < 200
    return answers, entries


def test_no_role_reads_a_hole_card_picture_before_its_reveal(
    secure_mqtt_broker: BrokerProcess,
    tables: Any,  # noqa: F811
    peers: Any,  # noqa: F811
) -> None:
    broker = secure_mqtt_broker
    table = tables(broker.port, account=broker.users["table"], game="blackjack-classic")
    rows = journal_up_to_a_hole_card(table.journal_path)
    (hole,) = [row for row in rows if row["face_down"]]
    username, password = broker.users["platform"]
    watch = peers(
        broker.port, username=username, password=password, subscribe=(f"{BASE}/#",)
    ).wait_ready()
    table.daemon.start()
    wait_online(table, watch)
    store = table.journal_path.with_name(table.journal_path.name + ".pictures")
    for role in ("platform", "supervisor", "viewer"):
        user, secret = broker.users[role]
        api = ApiClient("127.0.0.1", broker.port, "t1", Account(role, user, secret), client_id=user)
        try:
            assert api.wait_connected(TIMEOUT_S), api.refused
            answers, entries = read_all(api, 1)
        finally:
            api.close()
        text = json.dumps(answers)
        assert hole["sha256"] not in text, role
        hidden = [entry for entry in entries if entry["row"] == hole["row"]]
        assert hidden and all(e["status"] == "secret" and "data" not in e for e in hidden)
        assert (store / f"{hole['sha256']}.jpg").is_file()  # it exists: it is only not served
        pictures: dict[int, bytes] = {}
        for entry in entries:
            if entry["status"] == "kept":
                assert entry["offset"] == len(pictures.get(entry["row"], b""))
                pictures[entry["row"]] = pictures.get(entry["row"], b"") + base64.b64decode(
                    entry["data"]
                )
        shown = {row["row"]: row["sha256"] for row in rows if not row["face_down"]}
        assert {seq: hashlib.sha256(data).hexdigest() for seq, data in pictures.items()} == shown


def test_a_table_without_a_camera_says_it_has_no_pictures(
    secure_mqtt_broker: BrokerProcess,
    tables: Any,  # noqa: F811
    peers: Any,  # noqa: F811
) -> None:
    broker = secure_mqtt_broker
    table = tables(broker.port, account=broker.users["table"])
    username, password = broker.users["platform"]
    watch = peers(
        broker.port, username=username, password=password, subscribe=(f"{BASE}/#",)
    ).wait_ready()
    table.daemon.start()
    wait_online(table, watch)
    user, secret = broker.users["viewer"]
    api = ApiClient("127.0.0.1", broker.port, "t1", Account("viewer", user, secret), client_id=user)
    try:
        assert api.wait_connected(TIMEOUT_S), api.refused
        answer = api.request("pictures", TIMEOUT_S, round_id=1)
        validate_message(response_topic(user), json.dumps(answer).encode())
        assert (
            answer["ok"] and answer["message"] == "this table has no camera: it keeps no pictures"
        )
        assert answer["data"] == {"round_id": 1, "camera": False, "pictures": [], "next": None}
        bad = api.request("pictures", TIMEOUT_S, round_id=0)
        assert not bad["ok"] and bad["error"]["code"] == "malformed"
    finally:
        api.close()
