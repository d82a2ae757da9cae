"""Tiles from feeds, pure: each status and when, the urgency order, a round's events and
the faces still possible in a shoe."""

from __future__ import annotations

from typing import Any

from controller.client.api_client import TableFeed
from controller.console.fleet import (
    FACES,
    RECENT_EVENTS,
    build_tile,
    pause_needs,
    possible_faces,
    round_events,
    tile_status,
    urgency_order,
)

NOW = 1_767_225_600.0


def state(phase: str = "SHOE_READY", *, in_round: bool = False, pause: Any = None) -> dict:
    return {
        "phase": phase,
        "round": {"id": 4} if in_round else None,
        "pause": pause,
        "seq": 10,
        "epoch": "e",
    }


def feed(table: str = "t1", availability: str | None = "online", **fields: Any) -> TableFeed:
    fields.setdefault("state", state())
    fields.setdefault("last_message_at", NOW - 1)
    return TableFeed(table, availability=availability, **fields)


def status(f: TableFeed, link_up: bool = True, now: float = NOW) -> str:
    return tile_status(f, link_up=link_up, now=now, stale_after_s=120)


def test_each_status() -> None:
    assert status(feed()) == "running"
    assert status(feed(state=state("PAUSED", pause={"by": "alice"}))) == "paused"
    assert status(feed(availability="offline")) == "offline"
    assert status(feed(availability=None)) == "offline", "never said it is online"
    # Offline wins over a paused state: the daemon is not there to resume.
    assert status(feed(availability="offline", state=state("PAUSED"))) == "offline"
    # Silent for stale_after_s in a round: stale; between rounds silence is normal.
    silent = NOW - 120
    assert status(feed(state=state("DEALING", in_round=True), last_message_at=silent)) == "stale"
    assert status(feed(state=state("DEALING", in_round=True), last_message_at=silent + 1)) == (
        "running"
    )
    assert status(feed(last_message_at=silent - 1000)) == "running"
    # The console's own link down: unknown, never offline.
    for shown in (feed(), feed(availability="offline"), feed(state=state("PAUSED"))):
        assert status(shown, link_up=False) == "unknown"


def test_a_tile_carries_the_state_as_it_came_and_the_last_events() -> None:
    events = [{"seq": n, "type": "card_dealt", "data": {}} for n in range(1, 31)]
    paused = state("PAUSED", pause={"by": "alice", "reason": "supervisor"})
    tile = build_tile(
        feed(state=paused, events=events, dealer={"line": "wait"}, last_message_at=NOW - 2.5),
        link_up=True,
        now=NOW,
        stale_after_s=120,
    )
    assert tile == {
        "table": "t1",
        "status": "paused",
        "availability": "online",
        "age_s": 2.5,
        "last_message_at": NOW - 2.5,
        "state": paused,
        "dealer": {"line": "wait"},
        "recent": events[-RECENT_EVENTS:],
        "paused_by": "alice",
        "needs": [],
    }
    empty = build_tile(
        feed(state=None, last_message_at=None), link_up=True, now=NOW, stale_after_s=120
    )
    assert empty["age_s"] is None and empty["paused_by"] is None and empty["recent"] == []


def test_most_urgent_first_then_by_id() -> None:
    tiles = [
        {"table": table, "status": shown}
        for table, shown in [
            ("t5", "running"),
            ("t4", "unknown"),
            ("t3", "stale"),
            ("t2", "offline"),
            ("t9", "paused"),
            ("t1", "paused"),
            ("t0", "running"),
        ]
    ]
    assert [t["table"] for t in urgency_order(tiles)] == [
        "t1",
        "t9",
        "t2",
        "t3",
        "t0",
        "t5",
        "t4",
    ]


def event(seq: int, kind: str, **data: Any) -> dict[str, Any]:
    return {"seq": seq, "type": kind, "data": data}


def test_a_round_is_its_events_from_opening_to_end() -> None:
    events = [
        event(1, "round_opened", round_id=1),
        event(2, "round_settled", round_id=1),
        event(3, "round_opened", round_id=2),
        event(4, "card_dealt", round_id=2, card="9S"),
        event(5, "table_paused", round_id=2),
        event(6, "shoe_offline"),
        event(7, "table_resumed", round_id=2),
        event(8, "round_voided", round_id=2),
        event(9, "round_opened", round_id=3),
    ]
    assert [e["seq"] for e in round_events(events, 2)] == [3, 4, 5, 6, 7, 8]
    assert [e["seq"] for e in round_events(events, 3)] == [9], "still in play"
    assert round_events(events, 7) == []


def test_faces_impossible_once_eight_were_seen_in_this_shoe() -> None:
    events = [event(1, "shoe_started", shoe_id=1)]
    seq = 1
    # Eight aces of spades face up: one impossible face. Seven kings: still possible.
    for card in ["AS"] * 8 + ["KH"] * 7:
        seq += 1
        events.append(event(seq, "card_dealt", round_id=1, card=card, face_down=False))
    answer = possible_faces(events, complete_since=0)
    assert answer["complete"] is True
    assert "AS" not in answer["possible"] and "KH" in answer["possible"]
    assert len(answer["possible"]) == 51 and len(FACES) == 52


def test_hole_cards_count_once_revealed_and_a_new_shoe_starts_afresh() -> None:
    events = [event(1, "shoe_started", shoe_id=1)]
    seq = 1
    for _ in range(7):
        events += [
            event(seq + 1, "round_opened", round_id=seq),
            event(seq + 2, "card_dealt", round_id=seq, position="dealer", face_down=True),
            event(seq + 3, "card_dealt", round_id=seq, position="box1", card="QD"),
            event(
                seq + 4,
                "round_settled",
                round_id=seq,
                result={
                    "dealer": {"cards": ["2C"]},
                    "boxes": [{"hands": [{"cards": ["QD"]}]}],
                },
            ),
        ]
        seq += 4
    # Seven 2C revealed by results, one more read at its turn: eight.
    events.append(event(seq + 1, "hole_card_read", round_id=99, card="2C"))
    answer = possible_faces(events, complete_since=0)
    assert "2C" not in answer["possible"], "the results' hole cards count"
    assert "QD" in answer["possible"], "a card in the result and dealt counts once"
    # A face-down card never named counts as nothing.
    assert "AS" in answer["possible"]
    fresh = [*events, event(seq + 2, "shoe_started", shoe_id=2)]
    assert possible_faces(fresh, complete_since=0) == {"possible": list(FACES), "complete": True}


def test_incomplete_when_the_feed_does_not_reach_the_shoes_start() -> None:
    events = [event(n, "card_dealt", round_id=1, card="AS") for n in range(501, 509)]
    answer = possible_faces(events, complete_since=500)
    assert answer["complete"] is False and "AS" not in answer["possible"]
    started = [event(500, "shoe_started", shoe_id=1), *events]
    assert possible_faces(started, complete_since=499)["complete"] is True


def test_a_hole_card_turned_over_in_the_round_in_play_counts_before_the_result() -> None:
    events = [event(1, "shoe_started", shoe_id=1)]
    seq = 1
    for card in ["7S"] * 7:
        seq += 1
        events.append(event(seq, "card_dealt", round_id=1, card=card, face_down=False))
    events += [
        event(seq + 1, "round_opened", round_id=2),
        event(seq + 2, "card_dealt", round_id=2, position="box1", card="KD"),
        event(seq + 3, "card_dealt", round_id=2, position="dealer", card="5C"),
        event(seq + 4, "card_dealt", round_id=2, position="dealer", face_down=True),
    ]
    playing = {
        "shoe": {"id": 1},
        "round": {
            "id": 2,
            "view": {
                "game": "blackjack-classic",
                "dealer": {"cards": ["5C", None]},
                "boxes": [{"box": 1, "hands": [{"cards": ["KD"]}]}],
            },
        },
    }
    # Face down: nothing known of it.
    assert "7S" in possible_faces(events, 0, playing)["possible"]
    # The rules turn it over (the state shows it; no event names it until the result).
    playing["round"]["view"]["dealer"]["cards"] = ["5C", "7S"]
    answer = possible_faces(events, 0, playing)
    assert "7S" not in answer["possible"], "the eighth 7S is on the felt"
    assert "KD" in answer["possible"] and "5C" in answer["possible"], "counted once"
    # A round of another shoe's state adds nothing to this one.
    other = {**playing, "shoe": {"id": 2}}
    assert "7S" in possible_faces(events, 0, other)["possible"]


def test_a_pause_needs_reach_the_page_as_codes_with_their_values() -> None:
    """Every need the table can publish comes back as its code (the pages' catalogues have
    words for each): the words made by the table's own Pause, read back by the console."""
    from controller.kernel.cards import parse_card
    from controller.kernel.vocabulary import NEEDS
    from controller.table.state import HOLE_UNREAD, Pause, PauseReason, Phase

    card = parse_card("KH")
    pauses = [
        (Pause(PauseReason.SHOE_EMPTY, "", Phase.DEALING, shoe_empty=True), False),
        (Pause(PauseReason.SHOE_OFFLINE, "", Phase.DEALING, offline_gap=True), False),
        (Pause(PauseReason.RECOVERED, "", Phase.DEALING, offline_gap=True), False),
        (Pause(PauseReason.MISREAD, "", Phase.DEALING, unread="box2.hand1"), False),
        (Pause(PauseReason.MISREAD, "", Phase.DEALING, unread="banker"), True),
        (Pause(PauseReason.HOLE_CARD_MISREAD, "", Phase.DEALING, unread=HOLE_UNREAD), True),
        (Pause(PauseReason.CARD_OUT_OF_TURN, "", Phase.SHOE_READY, held=(card, None)), False),
    ]
    seen = set()
    for pause, dismissible in pauses:
        read = pause_needs(pause.needs(dismissible))
        assert [need["code"] for need in read] == [
            code for code, _values in pause.need_codes(dismissible)
        ]
        seen.update(need["code"] for need in read)
    assert seen == set(NEEDS)
    assert pause_needs(["accept or burn the 2 card(s) drawn out of turn"]) == [
        {"code": "held", "count": "2"}
    ]
    assert pause_needs(["enter_card for the unread card at box2.hand1"]) == [
        {"code": "unread", "position": "box2.hand1"}
    ]
    # Words of another livetable: kept as they came, for the page to show in English.
    assert pause_needs(["ask the pit boss", 7]) == [{"code": None, "words": "ask the pit boss"}]
    assert pause_needs(None) == []
