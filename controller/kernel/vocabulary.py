"""Words of the table's API that the table, its service and every client all use.

The table checks them, the MQTT API validates requests against them, and ``ctl`` offers
them on its command line: one list each, here at the bottom of the tree, because a client
may not import the table (the layers in ``docs/architecture.md``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

# How a supervisor may resolve a pause (``resume``'s ``resolution``); "" when it needs
# nothing. A pause's ``needs`` names the one it waits for.
RESOLUTIONS: Final = ("", "accept", "burn", "enter_card", "no_cards_drawn")

# What a pause's ``unread`` says when the misread card is the dealer's hole card.
HOLE_UNREAD: Final = "the dealer's hole card"

# What a pause may need before the table resumes: its code -> the words the state publishes
# in ``pause.needs`` (``{position}`` and ``{count}`` filled in). The console reads the codes
# back from the words (:func:`need_code`), and shows each in the studio's language.
_ENTER_UNREAD: Final = "enter_card for the unread card at {position}"
_CONFIRM_GAP: Final = (
    "confirm no card left the shoe while {while_} (no_cards_drawn), or enter_card each card "
    "that did"
)
NEEDS: Final[Mapping[str, str]] = {
    "shoe_empty": "cancel the round: the shoe has no card left for it",
    "offline_gap": _CONFIRM_GAP.replace("{while_}", "it was offline"),
    "recovered_gap": _CONFIRM_GAP.replace("{while_}", "the table was down"),
    "unread": _ENTER_UNREAD,
    "unread_hole": _ENTER_UNREAD.replace("{position}", HOLE_UNREAD),
    "unread_dismissible": _ENTER_UNREAD
    + ", or no_cards_drawn if no card left the shoe (none on the felt)",
    "held": "accept or burn the {count} card(s) drawn out of turn",
}
_NEED_PATTERNS: Final = tuple(
    (
        code,
        re.compile(
            re.escape(words)
            .replace(re.escape("{position}"), r"(?P<position>[A-Za-z0-9_.]+)")
            .replace(re.escape("{count}"), r"(?P<count>[0-9]+)")
        ),
    )
    for code, words in NEEDS.items()
)


def need_code(words: str) -> tuple[str, dict[str, str]] | None:
    """The code of :data:`NEEDS` that ``words`` (one of a published pause's ``needs``) says,
    and its values; None for words no code says (a table of another livetable)."""
    for code, pattern in _NEED_PATTERNS:
        found = pattern.fullmatch(words)
        if found is not None:
            return code, found.groupdict()
    return None


# Every ``action`` of the dealer's line (``<prefix>/<table>/dealer``), as docs/mqtt-api.md
# says them: the dealer's screen has words for each.
DEALER_ACTIONS: Final = ("reveal", "burn", "deal", "wait", "shuffle", "stop", "hold")
