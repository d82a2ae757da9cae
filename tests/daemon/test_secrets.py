"""No secret card can be read, or computed, from what a table publishes.

The attack: every ``state`` carries the journal's head, ``journal: {seq, hash}``, and a row's
hash is ``sha256(seq, kind, body, prev_hash)``. A card row's body is the event's fields:
its time (the state's ``at``), the shoe's sequence number (a little above the state's
``cards_drawn``), the shoe's position word (a handful) and the card. Without a secret in the
body, trying the 52 faces against the published hash opens every hole card, burn card and
card held during a pause the moment it is dealt. Here a real table (``livetable demo``
against a real mosquitto: the real daemon, a shoe simulator on a real pty, a dealer who
draws out of turn, a shoe that misreads) is watched by a viewer, and the attack is run on
every secret row from the viewer's messages alone. A control runs the same attack on the
same rows hashed as an unsalted journal would hash them, and must open them: the attack is
a real one.

Then the other side, on the blackjack table: each revealed hole card is checked against its
commitment, from the published messages alone, as a platform would.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.kernel.cards import ALL_FACES
from controller.service.journal import Journal, canonical_json
from controller.service.journaled_table import config_of, machine_revision
from controller.table.effects import PublishEvent
from controller.table.events import SALT_FIELD
from controller.table.machine import TableMachine
from controller.table.state import Phase
from tests.demo.test_demo_over_mqtt import FAST, Demo, watch_table
from tests.support.wait import wait_until

# What the shoe's protocol may write as a card's position (Angel Eye's words, and none).
POSITIONS = (None, "player", "banker", "burn", "first", "burn-count", "outside-game")


@dataclass(frozen=True)
class SecretRow:
    """A journal row whose card was not public when it was written (the test knows it from
    the journal; the attacker does not)."""

    seq: int
    why: str
    card: str
    body: dict[str, Any]


def row_hash(seq: int, kind: str, body: str, prev_hash: str) -> str:
    return hashlib.sha256(f"{seq}\n{kind}\n{body}\n{prev_hash}".encode()).hexdigest()


def heads_of(messages: Iterable[tuple[str, bytes]]) -> dict[int, dict[str, Any]]:
    """Every journal head a subscriber saw, by row: its hash, and the state it came with."""
    heads: dict[int, dict[str, Any]] = {}
    for topic, payload in messages:
        if topic.endswith("/state") and payload:
            state = json.loads(payload)
            heads[state["journal"]["seq"]] = state
    return heads


def attack(seq: int, heads: dict[int, dict[str, Any]], published: str) -> str | None:
    """The card of row ``seq`` whose CardDrawn body hashes to ``published`` with the row
    before's published hash, tried from the public fields; None when nothing matches."""
    state, before = heads.get(seq), heads.get(seq - 1)
    if state is None or before is None:
        return None
    prev_hash, drawn = before["journal"]["hash"], state["shoe"]["cards_drawn"]
    # The shoe's sequence numbers run ahead of cards_drawn by the frames that counted no
    # card (misreads, cards held): a window wide enough for a shoe's worth of them.
    for sequence in (None, *range(max(drawn - 8, 0), drawn + 64)):
        for position in POSITIONS:
            for card in ALL_FACES:
                body = {"at": state["at"], "card": str(card), "position": position}
                body["sequence"] = sequence
                if row_hash(seq, "CardDrawn", canonical_json(body), prev_hash) == published:
                    return str(card)
    return None


def secret_rows(journal_path: Path) -> list[SecretRow]:
    """The CardDrawn rows whose card nothing published when they were written: burn cards,
    hole cards, cards held during a pause."""
    found = []
    with Journal(journal_path, read_only=True) as journal:
        config = config_of(journal)
        machine = TableMachine(config, config.operational(), machine_revision(journal))
        for entry in journal.verified_entries():
            phase = machine.state.phase
            effects = machine.handle(entry.event())
            if entry.kind != "CardDrawn":
                continue
            published = [e for e in effects if isinstance(e, PublishEvent)]
            dealt = [e.payload for e in published if e.name == "card_dealt"]
            if any("card" in payload for payload in dealt) or any(
                e.name == "burn_started" for e in published
            ):
                continue
            why = (
                "hole"
                if any(payload.get("face_down") for payload in dealt)
                else "burn"
                if phase is Phase.BURNING
                else "held"
            )
            body = entry.fields
            found.append(SecretRow(entry.seq, why, str(body["card"]), body))
    return found


def play(tmp_path: Path, broker: tuple[str, int], game: str, rounds: int) -> tuple[Path, list]:
    """A demo table of ``game`` with out-of-turn draws and misreads, watched by a viewer:
    its journal and every raw message the viewer saw."""
    host, port = broker
    demo = Demo(
        tmp_path,
        "--broker",
        f"mqtt://{host}:{port}",
        "--plain",
        "--game",
        game,
        "--rounds",
        str(rounds),
        "--mistake-rate",
        "0.4",
        "--misread-rate",
        "0.05",
        "--seed",
        "11",
        *FAST,
        # Long enough for the dealer's out-of-turn draw, which comes only well before
        # betting closes.
        "--betting-s",
        "1.2",
    )
    try:
        client, seen = watch_table(demo.broker())
        try:
            assert demo.wait() == 0, demo.err_path.read_text()[-3000:]
            wait_until(lambda: client.availability == "offline", 10, "availability offline")
        finally:
            client.close()
    finally:
        demo.stop()
    return demo.work / "demo" / "demo.journal", seen


@pytest.mark.parametrize(("game", "rounds"), [("baccarat", 8), ("blackjack-classic", 12)])
def test_no_secret_card_can_be_computed_from_what_a_viewer_receives(
    game: str, rounds: int, tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    journal_path, seen = play(tmp_path, mqtt_broker, game, rounds)
    heads = heads_of(seen)
    secrets = secret_rows(journal_path)
    kinds = Counter(row.why for row in secrets)
    assert kinds["burn"] >= 1 and kinds["held"] >= 1, kinds
    if game.startswith("blackjack"):
        assert kinds["hole"] >= 1, kinds
    attackable = [row for row in secrets if row.seq in heads and row.seq - 1 in heads]
    assert len(attackable) >= len(secrets) // 2, (len(attackable), len(secrets))

    opened = {
        row.seq: card
        for row in attackable
        if (card := attack(row.seq, heads, heads[row.seq]["journal"]["hash"])) is not None
    }
    assert opened == {}, f"secret cards computed from the published heads: {opened}"

    # The control: the same rows as a journal without salts would have hashed them (the
    # previous row's published hash as their prev_hash). The attack opens every one whose
    # time a state published (a row that changed nothing public, a card held in a pause,
    # republishes the state with its head but the time of the last change).
    timed = [row for row in attackable if heads[row.seq]["at"] == row.body["at"]]
    assert timed, "no secret row whose time was published: the control tries nothing"
    unsalted_opened = 0
    for row in timed:
        body = {key: value for key, value in row.body.items() if key != SALT_FIELD}
        prev_hash = heads[row.seq - 1]["journal"]["hash"]
        unsalted = row_hash(row.seq, "CardDrawn", canonical_json(body), prev_hash)
        unsalted_opened += attack(row.seq, heads, unsalted) == row.card
    assert unsalted_opened == len(timed)

    # Nor is a secret row's salt ever published, before or after: a burn card's and a held
    # card's never, a hole card's only with the round's result (checked below).
    text = b"\n".join(payload for _topic, payload in seen)
    for row in secrets:
        if row.why != "hole":
            assert row.body[SALT_FIELD].encode() not in text, row
    if game.startswith("blackjack"):
        check_revealed_hole_cards(journal_path, seen)


def check_revealed_hole_cards(journal_path: Path, seen: list[tuple[str, bytes]]) -> None:
    """Every revealed hole card is the one committed to when it was dealt, and its salt
    was published with its reveal and not before."""
    heads = heads_of(seen)
    events = {}
    for topic, payload in seen:
        if topic.endswith("/events"):
            event = json.loads(payload)
            events[event["seq"]] = event
    ordered = [events[seq] for seq in sorted(events)]
    # As a platform: keep each face-down card's commitment, check it at the settlement.
    committed: dict[int, tuple[int, str]] = {}
    dealer_cards: Counter[int] = Counter()
    checked = 0
    for event in ordered:
        data = event["data"]
        if event["type"] == "card_dealt" and data["position"] == "dealer":
            if data["face_down"] and "commitment" in data:
                assert "card" not in data
                committed[data["round_id"]] = (dealer_cards[data["round_id"]], data["commitment"])
            dealer_cards[data["round_id"]] += 1
        if event["type"] != "round_settled" or data["round_id"] not in committed:
            continue
        (reveal,) = data["reveals"]
        row = reveal["journal"]
        assert row_hash(row["seq"], row["kind"], row["body"], row["prev_hash"]) == row["hash"]
        hole, commitment = committed.pop(data["round_id"])
        assert row["hash"] == commitment
        if row["seq"] in heads:
            assert heads[row["seq"]]["journal"]["hash"] == row["hash"]
        body = json.loads(row["body"])
        assert body["card"] == reveal["card"] == data["result"]["dealer"]["cards"][hole]
        assert len(body[SALT_FIELD]) == 32
        checked += 1
    assert checked >= 3, f"only {checked} hole cards revealed and checked"
    # Published before its reveal, the row would have given the card away: no message
    # before the settlement holds its salt.
    with Journal(journal_path, read_only=True) as journal:
        holes = {row.seq: row for row in secret_rows(journal_path) if row.why == "hole"}
        assert holes and journal.verify() > 0
    for row in holes.values():
        salt = row.body[SALT_FIELD].encode()
        first = next(i for i, (_topic, payload) in enumerate(seen) if salt in payload)
        event = json.loads(seen[first][1])
        assert event.get("type") == "round_settled", event
