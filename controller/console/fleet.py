"""The wall of tables: a ``StudioClient``'s feeds turned into the console's tiles.

Pure functions of a feed (``TableFeed``: availability, state, dealer line, the last events
in ``seq`` order), the console's own broker link and the time:

- :func:`tile_status`: ``unknown`` while the console's link is down (never "offline" then:
  the console cannot tell), ``offline`` when the table's daemon says so (or never said
  anything), ``paused``, ``stale`` (online, a round in play, and no message for
  ``stale_after_s``), else ``running``;
- :func:`build_tile` (a pause's needs as codes: :func:`pause_needs`) and
  :func:`urgency_order` (paused, offline, stale, running, unknown;
  then by id);
- :func:`round_events`: every event of one round (as ``livetable ctl history`` gives it);
- :func:`possible_faces`: the faces still possible in the shoe in play (8 decks: a face is
  impossible once its 8 copies were seen), and whether the feed saw the shoe's start.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Final, Protocol

from controller.kernel.presentation import CARD_KEYS
from controller.kernel.vocabulary import need_code
from controller.tools.ctl_text import round_events

__all__ = [
    "RECENT_EVENTS",
    "STATUS_ORDER",
    "build_tile",
    "possible_faces",
    "round_events",
    "tile_status",
    "urgency_order",
]

RECENT_EVENTS: Final = 12
DECKS: Final = 8
RANKS: Final = "A23456789TJQK"
SUITS: Final = "SHDC"
FACES: Final = tuple(rank + suit for suit in SUITS for rank in RANKS)
# The wall's order, most urgent first: the one list of it (the page takes it from
# ``/api/tables``). Unknown last: the console cannot hear the broker, so it knows nothing.
STATUS_ORDER: Final = ("paused", "offline", "stale", "running", "unknown")
_STATUS_RANK: Final = {status: rank for rank, status in enumerate(STATUS_ORDER)}
# Keys of a round's view or result that hold cards, in every game's (as each game declares).
_CARD_KEYS: Final = CARD_KEYS


class Feed(Protocol):
    """What the console reads of a ``StudioClient`` ``TableFeed``."""

    table_id: str
    availability: str | None
    state: dict[str, Any] | None
    dealer: dict[str, Any] | None
    events: list[dict[str, Any]]
    last_message_at: float | None
    complete_since: int


def tile_status(feed: Feed, *, link_up: bool, now: float, stale_after_s: float) -> str:
    if not link_up:
        return "unknown"
    if feed.availability != "online":
        return "offline"
    state = feed.state or {}
    if state.get("phase") == "PAUSED":
        return "paused"
    in_round = state.get("round") is not None
    silent = feed.last_message_at is None or now - feed.last_message_at >= stale_after_s
    if in_round and silent:
        return "stale"
    return "running"


def build_tile(feed: Feed, *, link_up: bool, now: float, stale_after_s: float) -> dict[str, Any]:
    """The page's tile of one table (the console contract's ``Tile``)."""
    state = feed.state
    pause = (state or {}).get("pause") or {}
    age = None if feed.last_message_at is None else max(0.0, now - feed.last_message_at)
    return {
        "table": feed.table_id,
        "status": tile_status(feed, link_up=link_up, now=now, stale_after_s=stale_after_s),
        "availability": feed.availability,
        "age_s": None if age is None else round(age, 3),
        "last_message_at": feed.last_message_at,
        "state": state,
        "dealer": feed.dealer,
        "recent": list(feed.events[-RECENT_EVENTS:]),
        "paused_by": pause.get("by"),
        "needs": pause_needs(pause.get("needs")),
    }


def pause_needs(needs: Any) -> list[dict[str, Any]]:
    """A pause's ``needs`` as codes the pages have words for in every language:
    ``{"code", "position"?, "count"?}`` each, or ``{"code": None, "words"}`` for words no
    code says (a table of another livetable: the page shows its English)."""
    found = []
    for words in needs if isinstance(needs, list) else []:
        if not isinstance(words, str):
            continue
        said = need_code(words)
        found.append(
            {"code": None, "words": words} if said is None else {"code": said[0], **said[1]}
        )
    return found


def urgency_order(tiles: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Most urgent first: paused, offline, stale, running, unknown; then by table id."""
    last = len(STATUS_ORDER)
    return sorted(tiles, key=lambda tile: (_STATUS_RANK.get(tile["status"], last), tile["table"]))


def _cards_in(value: Any, key: str | None = None) -> list[str]:
    """Every card face in a round result (hands nested in boxes included)."""
    if isinstance(value, dict):
        return [card for k, v in value.items() for card in _cards_in(v, k)]
    if isinstance(value, list):
        if key in _CARD_KEYS and all(isinstance(v, str) for v in value):
            return [v for v in value if v in _FACE_SET]
        return [card for v in value for card in _cards_in(v, key)]
    return []


_FACE_SET: Final = frozenset(FACES)


def possible_faces(
    events: list[dict[str, Any]], complete_since: int, state: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``{"possible": [faces], "complete": bool}`` for the shoe in play, from a feed's
    events: the cards seen face up since the last ``shoe_started`` (dealt, hole cards read,
    and the hole cards a settled round's result reveals). ``complete`` is false when the
    feed does not reach back to that ``shoe_started``: then some cards dealt may be
    missing from the count, and the list may offer a face that is no longer possible (never
    the other way round). ``state``, the table's latest: the cards its round in play shows
    face up that no event named yet (a hole card the rules turned over) count too."""
    start = None
    for index in range(len(events) - 1, -1, -1):
        if events[index]["type"] == "shoe_started":
            start = index
            break
    shoe = events if start is None else events[start + 1 :]
    complete = start is not None and int(events[start]["seq"]) > complete_since
    seen: Counter[str] = Counter()
    by_round: dict[Any, Counter[str]] = {}
    for event in shoe:
        data = event.get("data") or {}
        kind = event["type"]
        if kind in ("card_dealt", "hole_card_read") and data.get("card") in _FACE_SET:
            seen[data["card"]] += 1
            by_round.setdefault(data.get("round_id"), Counter())[data["card"]] += 1
        elif kind == "round_settled":
            # The result shows every card of the round: the hole card a peek revealed
            # without turning it over is counted from here.
            shown = Counter(_cards_in(data.get("result")))
            counted = by_round.pop(data.get("round_id"), Counter())
            seen.update(shown - counted)
    round_in_play = (state or {}).get("round") or {}
    shoe_id = ((state or {}).get("shoe") or {}).get("id")
    this_shoe = start is None or (events[start].get("data") or {}).get("shoe_id") == shoe_id
    if round_in_play.get("view") and this_shoe:
        shown = Counter(_cards_in(round_in_play["view"]))
        seen.update(shown - by_round.get(round_in_play.get("id"), Counter()))
    return {
        "possible": [face for face in FACES if seen[face] < DECKS],
        "complete": complete,
    }
