"""The table's input events: everything that can change the state of a table, and the
journal's encoding of them.

This module is the table's vocabulary: the shoe driver, the camera driver, the timers, the
game platform, the supervisors and the table process itself produce these events, and the
journal stores exactly these. Events are frozen dataclasses named as nouns in the past tense;
``at`` is the wall-clock time (seconds since the epoch) stamped by whoever produced the
event, so the state machine never reads a clock and a journal replays to the identical state.

**The journal's encoding is explicit and versioned.** Each event kind has a wire name and a
list of fields written out in :data:`ENCODINGS` (not derived from Python class names: a class
may be renamed without breaking an old journal). :data:`EVENT_ENCODING` is the version a new
journal is written with; a journal records the version it was written with, and
:func:`decode_event` reads every version up to the current one. Changing a kind's name or
fields means a new version (a test compares :func:`encoding_schema` with the schema recorded
for each version under ``tests/fixtures/event_encoding/``).
"""

from __future__ import annotations

import math
import secrets
import types
import typing
from dataclasses import dataclass
from typing import Any, Final, Union

from controller.kernel.cards import Card, parse_card
from controller.kernel.errors import JournalError, TableError

__all__ = [
    "EVENT_ENCODING",
    "SALTED_KINDS",
    "SALT_FIELD",
    "SUPERVISOR_COMMANDS",
    "CameraEvent",
    "CameraOffline",
    "CameraOnline",
    "CameraRead",
    "CardDrawn",
    "CardMisread",
    "CardPictured",
    "CardsLost",
    "Checkpoint",
    "ControllerStarted",
    "ControllerStopping",
    "CutCardDrawn",
    "DealerSignedIn",
    "DealerSignedOut",
    "PlatformDecided",
    "RoundRequested",
    "SettingsChanged",
    "ShoeEvent",
    "ShoeFault",
    "ShoeFaultCleared",
    "ShoeLockChanged",
    "ShoeOffline",
    "ShoeOnline",
    "SupervisorCommanded",
    "TableEvent",
    "TimerExpired",
    "decode_event",
    "encode_event",
    "encoding_schema",
    "event_name",
    "new_salt",
]


# -- the card shoe (produced by drivers/shoe) --------------------------------------------


@dataclass(frozen=True, slots=True)
class CardDrawn:
    """The scanner read a card leaving the shoe."""

    card: Card
    sequence: int | None
    at: float
    position: str | None = None
    """Where the shoe says the card goes, when its protocol says so (Angel Eye: ``player``,
    ``banker``, ``burn``, ``first``, ``burn-count``, or ``outside-game`` for a card drawn
    while the shoe was locked or in error); ``None`` otherwise."""


@dataclass(frozen=True, slots=True)
class CutCardDrawn:
    """The plastic cut card came out: the current (or next) round is the shoe's last."""

    sequence: int | None
    at: float


@dataclass(frozen=True, slots=True)
class CardMisread:
    """A card left the shoe but the scanner could not read its face."""

    sequence: int | None
    at: float


@dataclass(frozen=True, slots=True)
class CardsLost:
    """Sequence numbers the shoe sent that never arrived and cannot be recovered."""

    sequences: tuple[int, ...]
    at: float


@dataclass(frozen=True, slots=True)
class ShoeFault:
    """The shoe reported an error of its own (jam, sensor fault, ...)."""

    code: str
    message: str
    at: float


@dataclass(frozen=True, slots=True)
class ShoeFaultCleared:
    """The shoe reports that one of its errors (same ``code`` as the :class:`ShoeFault`) ended."""

    code: str
    at: float


@dataclass(frozen=True, slots=True)
class ShoeLockChanged:
    """The shoe confirmed that its gate is now locked (no card can leave) or unlocked."""

    locked: bool
    at: float


@dataclass(frozen=True, slots=True)
class ShoeOnline:
    """The port is open and the shoe is talking (at start and after every reconnect)."""

    port: str
    at: float


@dataclass(frozen=True, slots=True)
class ShoeOffline:
    """The port vanished, stopped answering or went silent past the heartbeat timeout."""

    port: str
    reason: str
    at: float


ShoeEvent = (
    CardDrawn
    | CutCardDrawn
    | CardMisread
    | CardsLost
    | ShoeFault
    | ShoeFaultCleared
    | ShoeLockChanged
    | ShoeOnline
    | ShoeOffline
)


# -- the camera (produced by drivers/camera and the camera reader) -----------------------


@dataclass(frozen=True, slots=True)
class CameraOnline:
    """The source is open and delivered its first frame (at start and after every reconnect).

    ``width`` and ``height`` are the size of the frames the source actually delivers, which a
    camera may choose differently from the configured resolution hint.
    """

    source: str
    width: int
    height: int
    at: float


@dataclass(frozen=True, slots=True)
class CameraOffline:
    """The source could not be opened, stopped delivering frames or reached its end.

    Sent once when the camera goes away (or cannot be opened at start), not for every failed
    retry; ``retry_in_s`` is the delay before the next attempt to open it. While the camera is
    offline the driver holds no frame, so no stale picture can be read as the current table.
    """

    source: str
    reason: str
    retry_in_s: float
    at: float


CameraEvent = CameraOnline | CameraOffline


# -- timers, the platform, the supervisors, the process ---------------------------------


@dataclass(frozen=True, slots=True)
class CameraRead:
    """The camera's answer to an ``AskCamera`` effect.

    ``card`` is ``None`` when the recogniser abstained (it would rather not guess).
    ``position`` is the table position that was read, as the machine named it, and
    ``card_number`` the card's slot in it (``AskCamera.card_number``): the table matches an
    answer to its question by both, so a late answer about another card of the same hand is
    never taken for the card asked about. ``None`` (journals written before it existed)
    matches by position alone.
    """

    position: str
    card: Card | None
    at: float
    card_number: int | None = None


@dataclass(frozen=True, slots=True)
class TimerExpired:
    """A timer started by a ``StartTimer`` effect ran out.

    ``timer_id`` is the id the effect carried; an expiry for a timer the machine no longer
    waits for (the dealer was quicker) is ignored.
    """

    timer_id: int
    at: float


@dataclass(frozen=True, slots=True)
class PlatformDecided:
    """The game platform answered a decision request of round ``round_id``.

    ``kind`` repeats the request's kind (``play``, ``insurance``, ``even_money``,
    ``more_cards``); ``decision`` is one of the tokens the request offered.
    """

    round_id: int
    kind: str
    box: int
    hand: int
    decision: str
    at: float


SUPERVISOR_COMMANDS: Final = (
    "pause",
    "resume",
    "cancel",
    "end_shoe",
    "new_shoe",
    # Holds between rounds (machine revision 6): the round in play finishes, no new one opens.
    "dealer_change",
    "drain",
    "resume_rounds",
)


@dataclass(frozen=True, slots=True)
class SupervisorCommanded:
    """A command given by a person at the table's console.

    ``command_id`` is echoed in the answer; ``by`` and ``role`` say who gave it (only the
    ``supervisor`` role may give these commands). ``reason`` is required by ``pause``.
    ``resume`` carries ``resolution`` when the pause needs one: ``accept`` (the out-of-turn
    card goes to the position the round expects), ``burn`` (the held cards are discarded) or
    ``enter_card`` (``card`` is entered by hand after a misread).
    """

    command_id: str
    command: str
    by: str
    role: str
    at: float
    reason: str = ""
    resolution: str = ""
    card: Card | None = None


@dataclass(frozen=True, slots=True)
class RoundRequested:
    """Someone (the platform, the dealer's console or the daemon's auto-start) asks for the
    next round: betting opens if the table is ready for it.

    ``boxes`` is the number of boxes (classic) or seats (21) with a bet; 0 means the
    table's default (all of them). Boundless ignores it: its players share one hand.
    """

    command_id: str
    by: str
    at: float
    boxes: int = 0


@dataclass(frozen=True, slots=True)
class ControllerStarted:
    """The table process (re)started and replayed its journal; a round that was in progress
    is paused with reason ``recovered``.

    ``gaps_visible``: whether the shoe's protocol accounts for every card across the restart
    (it resends what was drawn while nobody read it, or names each card it lost). When it
    cannot (ASCII lines; Angel Eye, whose one-character SEQ wraps every ten cards), a card
    drawn while the table was down may have vanished, and the ``recovered`` pause needs a
    supervisor's confirmation (machine revision 4)."""

    at: float
    gaps_visible: bool = False


@dataclass(frozen=True, slots=True)
class ControllerStopping:
    """The table process was asked to stop (SIGTERM, what ``systemctl stop`` sends): the
    table holds between rounds (``closing``) and the round in play finishes before the
    process exits. The next ``ControllerStarted`` lifts that hold (machine revision 6)."""

    at: float


@dataclass(frozen=True, slots=True)
class DealerSignedIn:
    """A dealer signed in at the table with their staff id (``D-1043``), from the dealer's
    own account (role ``dealer``) or a supervisor's. ``by`` is the account."""

    command_id: str
    staff_id: str
    by: str
    role: str
    at: float


@dataclass(frozen=True, slots=True)
class DealerSignedOut:
    """The dealer on duty signed out (or a supervisor signed them out); ``by`` the account."""

    command_id: str
    by: str
    role: str
    at: float


@dataclass(frozen=True, slots=True)
class SettingsChanged:
    """The table's operational settings changed (the daemon started with another
    configuration than the journal's last settings). They apply from the next round on:
    a round in progress keeps the betting window and deadlines it opened with.

    Only settings that do not change what past rows mean may change this way; the game and
    its rule variant bind a journal for its whole life.
    """

    betting_s: float
    decision_s: float
    dealer_idle_s: float
    rounds_after_cut_card: int
    camera_cross_check: bool
    at: float


@dataclass(frozen=True, slots=True)
class CardPictured:
    """The camera's picture of a card as the table took it, or of the whole table as a
    round ended (event encoding 6), stored beside the journal under its SHA-256.

    Journaled right after the row it pictures (``card_row``: the card's row, or the row
    that settled or voided the round), so the chain covers the picture's digest; the
    picture itself is a file (:mod:`controller.service.pictures`) that retention may prune
    while its digest stays here. ``view`` is ``card`` (the region of the card's slot,
    ``slot``, in hand ``position``), ``settled`` or ``voided`` (the whole frame).
    ``face_down``: the card was dealt face down, so its picture is served only once its
    round is settled. News for the record: the table's state does not change."""

    round_id: int | None
    card_row: int
    view: str
    position: str | None
    slot: str | None
    face_down: bool
    sha256: str
    size: int
    media_type: str
    at: float


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The table's whole state, journaled at a shoe's end (event encoding 7), so that a
    start replays only the rows after the last one (see
    :mod:`controller.service.journaled_table`). Not an input of the state machine: the
    journaled table writes it and reads it back; a full replay checks that it matches.

    ``state``: :func:`controller.table.checkpoint.encode_state` of the state after the row
    before it. ``published``: how many event messages the rows before it published (the
    API's ``seq`` of the last), so that the numbering carries on from a checkpoint."""

    state: dict  # type: ignore[type-arg]  # JSON data, its own versioned format
    published: int
    at: float


TableEvent = (
    ShoeEvent
    | CameraEvent
    | CameraRead
    | TimerExpired
    | PlatformDecided
    | SupervisorCommanded
    | RoundRequested
    | ControllerStarted
    | ControllerStopping
    | DealerSignedIn
    | DealerSignedOut
    | SettingsChanged
    | CardPictured
    | Checkpoint
)

# -- the journal's encoding ------------------------------------------------------------------

# Each version: wire name of the kind -> (class, the fields written, in order). Written out
# by hand on purpose: a renamed class or field must not silently change what a journal holds.
_V1: Final[dict[str, tuple[type, tuple[str, ...]]]] = {
    "CardDrawn": (CardDrawn, ("card", "sequence", "at", "position")),
    "CutCardDrawn": (CutCardDrawn, ("sequence", "at")),
    "CardMisread": (CardMisread, ("sequence", "at")),
    "CardsLost": (CardsLost, ("sequences", "at")),
    "ShoeFault": (ShoeFault, ("code", "message", "at")),
    "ShoeFaultCleared": (ShoeFaultCleared, ("code", "at")),
    "ShoeLockChanged": (ShoeLockChanged, ("locked", "at")),
    "ShoeOnline": (ShoeOnline, ("port", "at")),
    "ShoeOffline": (ShoeOffline, ("port", "reason", "at")),
    "CameraRead": (CameraRead, ("position", "card", "at", "card_number")),
    "TimerExpired": (TimerExpired, ("timer_id", "at")),
    "PlatformDecided": (PlatformDecided, ("round_id", "kind", "box", "hand", "decision", "at")),
    "SupervisorCommanded": (
        SupervisorCommanded,
        ("command_id", "command", "by", "role", "at", "reason", "resolution", "card"),
    ),
    "RoundRequested": (RoundRequested, ("command_id", "by", "at", "boxes")),
    "ControllerStarted": (ControllerStarted, ("at",)),
}
# Version 2 adds the camera's online/offline and the operational settings' changes.
_V2: Final[dict[str, tuple[type, tuple[str, ...]]]] = {
    **_V1,
    "CameraOnline": (CameraOnline, ("source", "width", "height", "at")),
    "CameraOffline": (CameraOffline, ("source", "reason", "retry_in_s", "at")),
    "SettingsChanged": (
        SettingsChanged,
        (
            "betting_s",
            "decision_s",
            "dealer_idle_s",
            "rounds_after_cut_card",
            "camera_cross_check",
            "at",
        ),
    ),
}
# Version 3: a start says whether the shoe accounts for every card drawn while it was down.
_V3: Final[dict[str, tuple[type, tuple[str, ...]]]] = {
    **_V2,
    "ControllerStarted": (ControllerStarted, ("at", "gaps_visible")),
}
# Version 4: the kinds that can hold a card carry a salt (``SALTED_KINDS``): the same
# events as version 3, each such row with 128 random bits of its own beside its fields.
_V4: Final[dict[str, tuple[type, tuple[str, ...]]]] = dict(_V3)
# Version 5: the dealers on duty and the table process's stop (machine revision 6).
_V5: Final[dict[str, tuple[type, tuple[str, ...]]]] = {
    **_V4,
    "DealerSignedIn": (DealerSignedIn, ("command_id", "staff_id", "by", "role", "at")),
    "DealerSignedOut": (DealerSignedOut, ("command_id", "by", "role", "at")),
    "ControllerStopping": (ControllerStopping, ("at",)),
}
# Version 6: the camera's pictures of the cards dealt and of the table as a round ends.
_V6: Final[dict[str, tuple[type, tuple[str, ...]]]] = {
    **_V5,
    "CardPictured": (
        CardPictured,
        (
            "round_id",
            "card_row",
            "view",
            "position",
            "slot",
            "face_down",
            "sha256",
            "size",
            "media_type",
            "at",
        ),
    ),
}
# Version 7: the table's state at a shoe's end, so that a start replays only what follows.
_V7: Final[dict[str, tuple[type, tuple[str, ...]]]] = {
    **_V6,
    "Checkpoint": (Checkpoint, ("state", "published", "at")),
}
ENCODINGS: Final[dict[int, dict[str, tuple[type, tuple[str, ...]]]]] = {
    1: _V1,
    2: _V2,
    3: _V3,
    4: _V4,
    5: _V5,
    6: _V6,
    7: _V7,
}
EVENT_ENCODING: Final = max(ENCODINGS)
"""The encoding version new journal rows are written with."""

SALT_FIELD: Final = "salt"
SALTED_KINDS: Final[dict[int, frozenset[str]]] = {
    1: frozenset(),
    2: frozenset(),
    3: frozenset(),
    4: frozenset({"CardDrawn", "CameraRead", "SupervisorCommanded"}),
    5: frozenset({"CardDrawn", "CameraRead", "SupervisorCommanded"}),
    # A picture's digest opens to nobody, but its row says where a face-down card lies.
    6: frozenset({"CardDrawn", "CameraRead", "SupervisorCommanded", "CardPictured"}),
    # A checkpoint's state may hold cards entered by hand that the shoe never announced.
    7: frozenset(
        {"CardDrawn", "CameraRead", "SupervisorCommanded", "CardPictured", "Checkpoint"}
    ),
}
"""Per encoding, the kinds whose rows carry a :data:`SALT_FIELD` beside the event's fields.

A row's hash covers its body, and the daemon publishes every row's hash (the journal's head,
in its state): without a secret of its own in the body, a card row's hash would be a
commitment anyone could open by trying the 52 faces, since every other field of it (the
time, the shoe's sequence number and position) is public or guessable. The salt is 128 bits
from the operating system's generator (:func:`secrets.token_hex`), written by the journal
(:class:`controller.service.journal.Journal`), not by whoever made the event: the table only
learns after the row is written whether its card is a hole card, a burn card or a card held
during a pause, so every row that can hold a card gets one. The salt is never published
while its card is secret; the round's settlement publishes the rows of the hole cards it
reveals, salt included, so that anyone can check them against the heads published when they
were dealt. The salt is not an event field: replay never sees it."""
SALT_BYTES: Final = 16

_KIND_OF: Final[dict[type, str]] = {cls: kind for kind, (cls, _) in _V7.items()}
EVENT_KINDS: Final[dict[str, type]] = {kind: cls for kind, (cls, _) in _V7.items()}
"""Every kind of input the table takes and journals (``CardDrawn``...), with its class.
Not the API's event types (:data:`controller.service.wire.EVENT_TYPES`, ``card_dealt``...):
those are what the table publishes, these what it is fed."""


def event_name(event: object) -> str:
    """The event's kind as the journal and the API name it (a class name only for what is
    not a table event)."""
    return _KIND_OF.get(type(event), type(event).__name__)


def encoding_schema(version: int = EVENT_ENCODING) -> dict[str, dict[str, str]]:
    """What encoding ``version`` writes: each kind's fields with their types, as text (the
    salt of a salted kind as ``salt``, hexadecimal text)."""
    schema: dict[str, dict[str, str]] = {}
    for kind, (cls, names) in sorted(ENCODINGS[version].items()):
        hints = typing.get_type_hints(cls)
        schema[kind] = {name: _type_text(hints[name]) for name in names}
        if kind in SALTED_KINDS[version]:
            schema[kind][SALT_FIELD] = "salt"
    return schema


def new_salt() -> str:
    """A row's salt: :data:`SALT_BYTES` random bytes from the OS's generator, in hex."""
    return secrets.token_hex(SALT_BYTES)


def _is_salt(value: object) -> bool:
    if not isinstance(value, str) or len(value) != 2 * SALT_BYTES:
        return False
    return all(char in "0123456789abcdef" for char in value)


def _type_text(hint: object) -> str:
    text = str(hint) if not isinstance(hint, type) else hint.__name__
    return text.replace("controller.kernel.cards.", "").replace("typing.", "")


def is_table_event(event: object) -> bool:
    return type(event) in _KIND_OF


def _encode_value(value: object) -> object:
    if isinstance(value, Card):
        return str(value)
    if isinstance(value, tuple):
        return [_encode_value(item) for item in value]
    return value


def encode_event(event: object) -> tuple[str, dict[str, Any]]:
    """``(kind, fields)`` with every field JSON-ready (cards in their notation)."""
    kind = _KIND_OF.get(type(event))
    if kind is None:
        raise JournalError(f"not a table event: {type(event).__name__}")
    _cls, names = ENCODINGS[EVENT_ENCODING][kind]
    return kind, {name: _encode_value(getattr(event, name)) for name in names}


def _decode_value(hint: object, value: object) -> object:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is not type(None):
                return _decode_value(option, value)
    if hint is Card:
        return parse_card(value)  # type: ignore[arg-type]
    if origin is tuple:
        (item_hint, *_rest) = typing.get_args(hint)
        if not isinstance(value, list):
            raise JournalError(f"expected a list, got {value!r}")
        return tuple(_decode_value(item_hint, item) for item in value)
    if hint is float:
        # A NaN or infinite time would start timers that never fire.
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise JournalError(f"expected a finite number, got {value!r}")
        return float(value)
    expected = hint if isinstance(hint, type) else object
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise JournalError(f"expected {hint}, got {value!r}")
    return value


_HINTS: Final = {kind: typing.get_type_hints(cls) for kind, cls in EVENT_KINDS.items()}


def check_event(event: object) -> None:
    """JournalError unless ``event`` is a table event that survives the journal unchanged
    (a field of the wrong type would otherwise replay differently from how it was taken)."""
    kind, fields = encode_event(event)
    if decode_event(kind, fields) != event:
        # Names only: the event's repr would carry its card, and refusals are published.
        raise JournalError(f"{kind} has a field of the wrong type")


def decode_event(kind: str, fields: dict[str, Any], version: int = EVENT_ENCODING) -> object:
    """Rebuild the event ``encode_event`` described in encoding ``version``; JournalError if
    it does not fit."""
    encoding = ENCODINGS.get(version)
    if encoding is None:
        raise JournalError(
            f"event encoding {version} is unknown to this livetable (it reads 1 to "
            f"{EVENT_ENCODING})"
        )
    if kind not in encoding:
        raise JournalError(f"unknown event kind {kind!r} in event encoding {version}")
    cls, names = encoding[kind]
    if kind in SALTED_KINDS[version]:
        fields = dict(fields)
        salt = fields.pop(SALT_FIELD, None)
        # An older journal's rows carried none before it was extended with this encoding.
        if salt is not None and not _is_salt(salt):
            raise JournalError(f"a {kind} has a malformed salt")
    unknown = sorted(set(fields) - set(names))
    if unknown:
        raise JournalError(f"a {kind} has unknown fields {unknown}")
    hints = _HINTS[kind]
    try:
        values = {name: _decode_value(hints[name], value) for name, value in fields.items()}
        return cls(**values)
    except (KeyError, TypeError) as error:
        raise JournalError(f"fields {sorted(fields)} do not make a {kind}: {error}") from error
    except TableError as error:
        raise JournalError(f"a {kind} with a bad field: {error}") from error
