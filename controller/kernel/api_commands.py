"""The MQTT API's commands: one list, from which every part that names a command derives.

Each command says who may give it (the roles), the fields its request carries besides
``transaction``, whether it only reads (answered at once, changing nothing) or acts on the
table (in turn, on the table's thread), and one line of help. The service validates requests
against it (``controller/service/mqtt_api.py``), ``livetable ctl`` builds its actions and their
help from it, the console serves it to its page (``GET /api/commands``), the studio's ACLs
grant a dealer station exactly the dealer's commands, and tests check the API's documents
(``docs/mqtt-api.md``, ``docs/asyncapi.yaml``) and the shipped broker ACL against it.

Here at the bottom of the tree because clients (ctl, the console) may not import the table
or its service (the layers in ``docs/architecture.md``). The table's handlers of the acting
commands are ``controller/table/commands.py``; the values a field may take beyond its type
(a card, a staff id, a page's limit) are checked by the service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

# The roles a request's topic may name (``.../request/<role>/<account>/<command>``), in the
# order the table serves their reads (the platform's first).
ROLES: Final = ("platform", "supervisor", "viewer", "dealer")

# A field's JSON type, as the API's documents and error messages name it.
_TYPE_NAMES: Final[dict[type, str]] = {int: "integer", str: "string"}


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a command's request: its name, its JSON type (``int`` or ``str``; never
    a boolean, never a float) and whether the request must carry it."""

    name: str
    kind: type
    required: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _TYPE_NAMES:
            raise ValueError(f"field {self.name}: a field is an int or a str, not {self.kind}")

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": _TYPE_NAMES[self.kind], "required": self.required}


@dataclass(frozen=True, slots=True)
class Command:
    """One command of the API: who may give it, what its request carries, whether it only
    reads, and what it does in one line (``ctl``'s help, the console's tooltip)."""

    name: str
    roles: frozenset[str]
    help: str
    fields: tuple[Field, ...] = ()
    reads: bool = False

    def __post_init__(self) -> None:
        if not self.roles or not self.roles <= set(ROLES):
            raise ValueError(f"command {self.name}: roles {sorted(self.roles)} not of {ROLES}")
        names = [field.name for field in self.fields]
        if len(set(names)) != len(names) or "transaction" in names:
            raise ValueError(
                f"command {self.name}: fields {names} repeat a name or take the transaction"
            )

    @property
    def field_names(self) -> frozenset[str]:
        return frozenset(field.name for field in self.fields)

    @property
    def ctl_action(self) -> str:
        """The command as ``livetable ctl`` spells its action (``end-shoe``)."""
        return self.name.replace("_", "-")

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "roles": sorted(self.roles),
            "fields": [field.as_json() for field in self.fields],
            "reads": self.reads,
            "help": self.help,
        }


_READERS: Final = frozenset({"platform", "supervisor", "viewer"})
_SUPERVISOR: Final = frozenset({"supervisor"})


_LIST: Final = (
    # A dealer's account signs in and out, and reads nothing through the API.
    Command("status", _READERS, "the table's latest state, at once", reads=True),
    Command(
        "events",
        _READERS,
        "the event messages after a seq, paged",
        (Field("since", int, required=True), Field("limit", int)),
        reads=True,
    ),
    # The supervisors' commands with their outcomes: for supervisors and those who watch
    # them (a viewer may audit the table); the platform has no business with it.
    Command(
        "audit",
        frozenset({"supervisor", "viewer"}),
        "every supervisor command the table journaled, with its outcome (refusals too)",
        (Field("since", int), Field("limit", int)),
        reads=True,
    ),
    # The camera's pictures of a round's cards, in pages (``row``, ``offset``: where one
    # starts). ``view`` "live": a supervisor's look at the slot of the card to be entered.
    Command(
        "pictures",
        _READERS,
        "the camera's pictures of a round's cards, in pages",
        (
            Field("round_id", int, required=True),
            Field("row", int),
            Field("offset", int),
            Field("view", str),
        ),
        reads=True,
    ),
    Command(
        "open_round",
        frozenset({"platform", "supervisor"}),
        "open betting on the next round",
        (Field("boxes", int),),
    ),
    Command(
        "decide",
        frozenset({"platform"}),
        "a player's decision, answering a decision_requested event",
        (
            Field("round_id", int, required=True),
            Field("request_seq", int, required=True),
            Field("kind", str, required=True),
            Field("box", int, required=True),
            Field("hand", int, required=True),
            Field("decision", str, required=True),
        ),
    ),
    Command(
        "pause",
        _SUPERVISOR,
        "pause the table now, with a reason",
        (Field("reason", str, required=True),),
    ),
    Command(
        "resume",
        _SUPERVISOR,
        "resume a paused table, resolving what its pause needs",
        (Field("resolution", str), Field("card", str)),
    ),
    Command(
        "enter_card",
        _SUPERVISOR,
        "enter a card the shoe and camera could not read",
        (Field("card", str, required=True),),
    ),
    Command(
        "cancel",
        _SUPERVISOR,
        "void the round in play (every bet refunded, its cards discarded)",
        (Field("reason", str), Field("round_id", int)),
    ),
    Command(
        "end_shoe",
        _SUPERVISOR,
        "end the shoe in play (not during a round)",
        (Field("reason", str),),
    ),
    Command("new_shoe", _SUPERVISOR, "declare a freshly shuffled shoe"),
    # The dealer on duty: the dealer's own account (role dealer) or a supervisor's.
    Command(
        "dealer_sign_in",
        frozenset({"dealer", "supervisor"}),
        "sign a dealer in at the table with their staff id",
        (Field("staff_id", str, required=True),),
    ),
    Command("dealer_sign_out", frozenset({"dealer", "supervisor"}), "sign the dealer on duty out"),
    # Holds between rounds: the round in play finishes, no new one opens until lifted.
    Command(
        "dealer_change",
        _SUPERVISOR,
        "a new dealer after this round: no round opens until the next dealer signs in",
    ),
    Command(
        "drain",
        _SUPERVISOR,
        "finish the round in play and open no new one (closing), the daemon left running",
    ),
    Command(
        "resume_rounds",
        _SUPERVISOR,
        "lift the holds between rounds (a drain, a dealer change): rounds open again",
    ),
)

COMMANDS: Final[dict[str, Command]] = {command.name: command for command in _LIST}
if len(COMMANDS) != len(_LIST):
    raise ValueError("a command is listed twice")
# The requests that read and change nothing; the others act on the table, on its thread.
READ_COMMANDS: Final = frozenset(name for name, command in COMMANDS.items() if command.reads)
ACTING_COMMANDS: Final = frozenset(COMMANDS) - READ_COMMANDS


def commands_of(role: str) -> tuple[str, ...]:
    """The commands ``role`` may give, in the list's order."""
    return tuple(name for name, command in COMMANDS.items() if role in command.roles)
