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
# What each placeholder of these templates may hold, when a published text is read back
# into its code: a position, a count, a phase ... or any text (a person's words).
_VALUE_PATTERNS: Final[Mapping[str, str]] = {
    "position": r"[A-Za-z0-9_.]+",
    "count": r"[0-9]+",
    "shoe": r"[0-9]+",
    "round": r"[0-9]+",
    "phase": r"[A-Z_]+",
    "command": r"[a-z_]+",
    "resolution": r"[a-z_]+",
    "taken": r"[0-9]+",
    "revision": r"[0-9]+",
    "hold": r"[a-z_]+",
    "holds": r"[a-z_]+(?:, [a-z_]+)*",
}


def _patterns(templates: Mapping[str, str]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    def placeholder(found: re.Match[str]) -> str:
        name = found.group(1)
        return f"(?P<{name}>{_VALUE_PATTERNS.get(name, '.+')})"

    return tuple(
        (code, re.compile(re.sub(r"\\\{(\w+)\\\}", placeholder, re.escape(words))))
        for code, words in templates.items()
    )


def _read_back(
    patterns: tuple[tuple[str, re.Pattern[str]], ...], words: str
) -> tuple[str, dict[str, str]] | None:
    for code, pattern in patterns:
        found = pattern.fullmatch(words)
        if found is not None:
            return code, found.groupdict()
    return None


_NEED_PATTERNS: Final = _patterns(NEEDS)


def need_code(words: str) -> tuple[str, dict[str, str]] | None:
    """The code of :data:`NEEDS` that ``words`` (one of a published pause's ``needs``) says,
    and its values; None for words no code says (a table of another livetable)."""
    return _read_back(_NEED_PATTERNS, words)


# Why a shoe ended: its code -> the words of ``shoe_ended``'s ``why`` (``{by}``: the
# supervisor). The event carries the code too (``why_code``), for a page in another language.
SHOE_ENDS: Final[Mapping[str, str]] = {
    "final_round": "the final round after the cut card was played",
    "shoe_out": "every card of the shoe is out",
    "new_shoe": "a new shoe was declared by {by}",
    "ended": "ended by {by}",
}

# The pieces of the table's answers that it joins to others (a ninth copy's words are an
# impossible card's pause message too; published without the card's face, which may be a
# burn card's).
NINTH_COPY: Final = "all 8 copies of that face were already drawn"
STILL_HELD: Final = "the table stays paused by {by} (resume to lift it)"
RESOLVED: Final = "{resolution} done"
ACCEPTED: Final = "accepted {count} card(s)"
CARD_ENTERED: Final = "card entered; the round goes on"

# The table's answers to commands (a response's ``message``): code -> words. The audit gives
# each entry's code beside its words (``message_code``, ``message_values``) for a page in
# another language; an answer not listed here (a rarer refusal) has only its words. Read
# back in this order: a more particular template before one that would also match it.
ANSWERS: Final[Mapping[str, str]] = {
    # Done.
    "paused": "paused",
    "shoe_declared": "shoe {shoe} declared",
    "shoe_ended": "shoe {shoe} ended",
    "round_opened": "round {round} opened",
    "round_voided": "round {round} voided: every bet refunded",
    "dealer_signed_in": "dealer {staff_id} signed in",
    "dealer_signed_out": "dealer {staff_id} signed out",
    "held_after_round": "{hold}: no new round after this round",
    "held_now": "{hold}: no new round now",
    "rounds_resume": "rounds resume ({holds} lifted)",
    "resumed_plain": "resumed (nothing to resolve)",
    "resumed": "resumed ({resolution})",
    "accepted_still_held": ACCEPTED + "; " + STILL_HELD,
    "accepted": ACCEPTED,
    "resolved_still_held": RESOLVED + "; " + STILL_HELD,
    "card_entered_paused": "card entered; the table stays paused",
    "card_entered_still_held": CARD_ENTERED + "; " + STILL_HELD,
    "card_entered": CARD_ENTERED,
    # Refused.
    "not_paused": "the table is not paused (it is {phase})",
    "no_round_to_cancel": "no round to cancel ({phase})",
    "no_new_shoe_now": "a new shoe cannot be declared now ({phase}): end this one first",
    "no_round_now": "a round cannot start now ({phase})",
    "not_now": "{command} is not possible now ({phase})",
    "round_in_progress": "a round is in progress: cancel it before ending the shoe",
    "no_shoe": "no shoe is in play",
    "already_paused": "the table is already paused",
    "shoe_offline_no_round": "the shoe is offline: no round can start",
    "no_round_in_progress": "no round in progress to cancel",
    "no_dealer": "no dealer is signed in",
    "no_hold": "no hold between rounds is in effect",
    "shoe_offline_resume": "the shoe is offline: bring it back before resuming",
    "nothing_to_burn": "no card was drawn out of turn: nothing to burn",
    "nothing_to_accept": "no card was drawn out of turn: nothing to accept",
    "not_offline": "the shoe was not offline while cards were due",
    "no_card_to_enter": "no card is waiting to be entered by hand",
    "shoe_empty": "no card is left in the shoe for this round: cancel it",
    "held_first": "accept or burn the cards drawn out of turn first",
    "unread_first": "enter the unread card first",
    "no_card_expected": "the round expects no card now: burn it instead",
    "card_needed": "enter_card needs the card",
    "hole_on_felt": "the hole card is on the felt, face down: enter_card it",
    "no_round_card_due": "no round card was due: confirm with no_cards_drawn, or end the shoe",
    "one_read_card": "accept takes exactly one card that was read",
    "held_unread": "a card held was not read: burn the cards held instead",
    "gap_before_held": "cards may have left the shoe unseen before those held: enter_card each "
    "of them first, or confirm none did (no_cards_drawn)",
    "took_fewer": "the round took {taken} of the {count} cards held: burn them instead",
    "late_frame": f"cannot accept it: {NINTH_COPY}, so it is the late frame of the card "
    "entered by hand: burn it",
    "ninth_copy": f"cannot enter that card: {NINTH_COPY}",
    "needs_revision": "{command} needs machine revision {revision}: start a new journal",
}

_SHOE_END_PATTERNS: Final = _patterns(SHOE_ENDS)
_ANSWER_PATTERNS: Final = _patterns(ANSWERS)


def shoe_end_code(words: str) -> tuple[str, dict[str, str]] | None:
    """The code of :data:`SHOE_ENDS` that ``words`` (a ``shoe_ended``'s ``why``) says, and
    its values; None for words no code says."""
    return _read_back(_SHOE_END_PATTERNS, words)


def answer_code(words: str) -> tuple[str, dict[str, str]] | None:
    """The code of :data:`ANSWERS` that ``words`` (a command's answer) says, and its values;
    None for words no code says (a rarer refusal, a table of another livetable)."""
    return _read_back(_ANSWER_PATTERNS, words)


# A blackjack decision's tokens (``decision_requested``'s ``options`` and ``default``,
# ``decision_taken``'s ``decision``, the platform's ``decide``) and what each means; the
# rules (controller.games.blackjack_hand) decide with them, the pages show their words.
HIT: Final = "H"
STAND: Final = "S"
DOUBLE: Final = "D"
SPLIT: Final = "P"
SURRENDER: Final = "R"
YES: Final = "Y"
NO: Final = "N"
DECISION_TOKENS: Final[Mapping[str, str]] = {
    HIT: "hit",
    STAND: "stand",
    DOUBLE: "double",
    SPLIT: "split",
    SURRENDER: "surrender",
    YES: "yes",
    NO: "no",
}
# What a blackjack decision is about (its ``kind``): how to play a hand, insurance, even
# money, and Blackjack 21's "more cards?".
PLAY: Final = "play"
INSURANCE: Final = "insurance"
EVEN_MONEY: Final = "even_money"
MORE_CARDS: Final = "more_cards"
DECISION_KINDS: Final = (PLAY, INSURANCE, EVEN_MONEY, MORE_CARDS)

# Every ``action`` of the dealer's line (``<prefix>/<table>/dealer``), as docs/mqtt-api.md
# says them: the dealer's screen has words for each.
DEALER_ACTIONS: Final = ("reveal", "burn", "deal", "wait", "shuffle", "stop", "hold")
