"""``livetable report``: the figures a studio runs on, from any set of table journals.

Each journal is opened strictly read-only, as ``journal verify`` does, and replayed
through the table's state machine under the settings it recorded; the figures come from
what the replay published, so they are what the platform saw:

- a round is its ``round_opened`` and its end, ``round_settled`` or ``round_voided``
  (cancelled); its *play time* runs from betting open to that end, pauses included;
- *rounds per hour* is the rounds settled over the play time of the group's rounds;
- cards are the ``card_dealt`` of the rounds, counted by ``source`` (shoe, camera,
  supervisor, unread);
- a pause is a ``table_paused``, by its reason; it ends at the ``table_resumed`` of that
  reason, or when the table is no longer paused (a round voided, a shoe ended), and the
  time between is its time lost. Cards out of turn are the pauses of reason
  ``card_out_of_turn``.

Rounds are grouped by table, game, the hour (UTC) they opened in, or the dealer signed in
when they opened (``round_opened.dealer``, a staff id; a round without one, or from a
journal written before dealers signed in, is "(nobody signed in)"). A pause goes with its
round, or, between rounds, with the table's latest round. ``--from``/``--to`` keep the
rounds that opened, and the pauses that began, in that window.

A journal whose old rows were archived (:mod:`controller.service.segments`) is read from
its segments first, as ``journal verify`` reads it. With a segment missing, the rows after
it cannot be replayed from row 1: the report then begins at the journal's last checkpoint
when the window begins after it, and otherwise stops with one line naming the rows missing
and the rounds it cannot read.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from controller.kernel.errors import JournalError

if TYPE_CHECKING:
    from controller.service.journal import Journal
    from controller.service.journaled_table import Replay

NOBODY: Final = "(nobody signed in)"
GROUPINGS: Final = ("table", "game", "hour", "dealer")
FORMATS: Final = ("text", "csv", "html")
# The card sources every report shows, in this order (docs/mqtt-api.md, card_dealt.source);
# a source not listed here (a newer table's) gets a column after them.
CARD_SOURCES: Final = ("shoe", "camera", "supervisor", "unread")
OUT_OF_TURN: Final = "card_out_of_turn"


@dataclass(slots=True)
class Round:
    """One round of one table, as its journal published it."""

    table: str
    game: str
    round_id: int
    dealer: str | None
    opened_at: float
    ended_at: float | None = None
    outcome: str = "open"  # settled, cancelled, or open (the journal ends during it)
    cards: Counter[str] = field(default_factory=Counter)


@dataclass(slots=True)
class Pause:
    """One ``table_paused``: its reason, when it began and ended (None: still paused)."""

    table: str
    game: str
    reason: str
    began_at: float
    round: Round | None
    ended_at: float | None = None

    @property
    def seconds(self) -> float:
        return 0.0 if self.ended_at is None else max(0.0, self.ended_at - self.began_at)


@dataclass(slots=True)
class Group:
    """The figures of one group of rounds and pauses."""

    name: str
    settled: int = 0
    cancelled: int = 0
    play_seconds: float = 0.0
    cards: Counter[str] = field(default_factory=Counter)
    pauses: Counter[str] = field(default_factory=Counter)
    pause_seconds: Counter[str] = field(default_factory=Counter)

    @property
    def rounds_per_hour(self) -> float | None:
        return self.settled * 3600.0 / self.play_seconds if self.play_seconds > 0 else None

    @property
    def out_of_turn(self) -> int:
        return self.pauses[OUT_OF_TURN]

    @property
    def pause_minutes(self) -> float:
        return sum(self.pause_seconds.values()) / 60.0


@dataclass(slots=True)
class Record:
    """Everything read from the journals: rounds and pauses, in the order they came."""

    rounds: list[Round] = field(default_factory=list)
    pauses: list[Pause] = field(default_factory=list)

    def window(self, start: float | None, end: float | None) -> Record:
        """The rounds opened, and the pauses begun, in ``[start, end)``."""

        def inside(at: float) -> bool:
            return (start is None or at >= start) and (end is None or at < end)

        return Record(
            [item for item in self.rounds if inside(item.opened_at)],
            [item for item in self.pauses if inside(item.began_at)],
        )


# -- reading ---------------------------------------------------------------------------------


def read_journal(journal: Journal, record: Record, since: float | None = None) -> None:
    """Replay ``journal`` (every row verified, its archived segments' first) and add its
    rounds and pauses to ``record``. ``since``: the report's window begins then, so that
    with a segment missing the rows after the last checkpoint may do (see
    :func:`_start_without_segments`)."""
    # Imported here so that building the CLI's parser stays light.
    from controller.service.journaled_table import (
        Replay,
        checkpoint_effects,
        config_of,
        machine_revision,
    )
    from controller.table.effects import PublishEvent
    from controller.table.machine import TableMachine

    config = config_of(journal)
    table, game = config.table_id, config.game
    start = _start_without_segments(journal, since)
    if start is None:
        # Checkpoint rows are checked against the state, never fed to the machine.
        replaying = Replay(TableMachine(config, config.operational(), machine_revision(journal)))
        first = 1
    else:
        replaying, first = start
    rounds: dict[int, Round] = {}
    latest: Round | None = None
    open_pauses: list[Pause] = []
    for entry in journal.verified_entries(first):
        if start is not None and entry.seq == first:
            effects = checkpoint_effects(replaying.machine, replaying.published)
        else:
            effects = replaying.feed(entry)
        at = entry.fields.get("at")
        if not isinstance(at, int | float):
            continue
        for effect in effects:
            if not isinstance(effect, PublishEvent):
                continue
            payload = effect.payload
            round_id = payload.get("round_id")
            current = rounds.get(round_id) if isinstance(round_id, int) else None
            if effect.name == "round_opened" and isinstance(round_id, int):
                current = Round(table, game, round_id, _dealer(payload), float(at))
                rounds[round_id] = latest = current
                record.rounds.append(current)
            elif effect.name == "card_dealt" and current is not None:
                current.cards[str(payload.get("source"))] += 1
            elif effect.name in ("round_settled", "round_voided") and current is not None:
                current.ended_at = float(at)
                current.outcome = "settled" if effect.name == "round_settled" else "cancelled"
                if current.dealer is None:
                    current.dealer = _dealer(payload)
            elif effect.name == "table_paused":
                pause = Pause(table, game, str(payload.get("reason")), float(at), current or latest)
                open_pauses.append(pause)
                record.pauses.append(pause)
            elif effect.name == "table_resumed":
                reason = str(payload.get("reason"))
                for pause in open_pauses:
                    if pause.reason == reason:
                        pause.ended_at = float(at)
                open_pauses = [pause for pause in open_pauses if pause.ended_at is None]
        if replaying.machine.state.pause is None:
            # No longer paused, by a resume or by what ended the paused round or shoe.
            for pause in open_pauses:
                pause.ended_at = float(at)
            open_pauses = []


def _start_without_segments(journal: Journal, since: float | None) -> tuple[Replay, int] | None:
    """None when the journal's archived segments are all beside it (the report reads every
    row). Else the state at the journal's last checkpoint (always in the live file) and its
    row, when the window begins after it; JournalError naming the rounds that cannot be read
    when it does not: never a report that leaves them out in silence."""
    from controller.service.journaled_table import Replay, config_of, resume_from
    from controller.tools.event_text import time_text

    try:
        journal.check_segments()
    except JournalError as error:
        missing = str(error)
    else:
        return None
    checkpoint = journal.last_checkpoint()
    if checkpoint is None:
        raise JournalError(f"{journal.path}: {missing}; no checkpoint after them to read from")
    replaying = Replay(*resume_from(journal, config_of(journal), checkpoint))
    at = checkpoint.fields.get("at")
    if since is not None and isinstance(at, int | float) and since > at:
        return replaying, checkpoint.seq
    opened = replaying.machine.state.rounds_started
    # Rows with no round in them (shoes, pauses, dealers) are lost all the same.
    lost = (
        f"its rounds 1..{opened} (opened up to {time_text(at)} UTC)"
        if opened
        else f"what happened up to {time_text(at)} UTC (no round yet)"
    )
    raise JournalError(
        f"{journal.path}: {missing}; so {lost} cannot be read: put the segments back, or "
        "report a window that begins after that time (--from)"
    )


def _dealer(payload: dict[str, Any]) -> str | None:
    dealer = payload.get("dealer")
    return dealer if isinstance(dealer, str) and dealer else None


def read_journals(
    paths: Iterable[Path], immutable: bool = False, since: float | None = None
) -> Record:
    """The rounds and pauses of every journal in ``paths`` (for a window that begins at
    ``since``, None: at the start); JournalError naming the file for one that is missing,
    unreadable, whose chain breaks, or whose segments missing hold rounds of the window."""
    from controller.service.journal import Journal

    record = Record()
    for path in paths:
        with Journal(path, read_only=True, immutable=True if immutable else None) as journal:
            try:
                read_journal(journal, record, since)
            except JournalError as error:
                # The chain's words name a row, not the file: among several, say which.
                if str(path) in str(error):
                    raise
                raise JournalError(f"{path}: {error}") from error
    return record


# -- grouping --------------------------------------------------------------------------------


def group_key(by: str, table: str, game: str, at: float, dealer: str | None) -> str:
    if by == "table":
        return table
    if by == "game":
        return game
    if by == "hour":
        return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:00")
    return dealer or NOBODY


def groups(record: Record, by: str) -> list[Group]:
    """The figures of ``record`` by table, game, hour or dealer, sorted by name."""
    found: dict[str, Group] = {}

    def group(name: str) -> Group:
        return found.setdefault(name, Group(name))

    for item in record.rounds:
        target = group(group_key(by, item.table, item.game, item.opened_at, item.dealer))
        target.cards.update(item.cards)
        if item.outcome == "settled":
            target.settled += 1
        elif item.outcome == "cancelled":
            target.cancelled += 1
        if item.ended_at is not None:
            target.play_seconds += item.ended_at - item.opened_at
    for pause in record.pauses:
        dealer = pause.round.dealer if pause.round is not None else None
        target = group(group_key(by, pause.table, pause.game, pause.began_at, dealer))
        target.pauses[pause.reason] += 1
        target.pause_seconds[pause.reason] += pause.seconds
    return [found[name] for name in sorted(found)]


def card_sources(found: Sequence[Group]) -> list[str]:
    extra = sorted({source for item in found for source in item.cards} - set(CARD_SOURCES))
    return [*CARD_SOURCES, *extra]


def pause_reasons(found: Sequence[Group]) -> list[str]:
    return sorted({reason for item in found for reason in item.pauses})


# -- text and CSV ----------------------------------------------------------------------------


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def table_rows(found: Sequence[Group], by: str) -> tuple[list[str], list[list[str]]]:
    """The report as a header and one row per group (the CSV's, and the text's)."""
    sources, reasons = card_sources(found), pause_reasons(found)
    header = [
        by,
        "rounds settled",
        "rounds cancelled",
        "play minutes",
        "rounds per hour",
        *(f"cards {source}" for source in sources),
        "pauses",
        "pause minutes",
        "cards out of turn",
        *(f"pauses {reason}" for reason in reasons),
        *(f"pause minutes {reason}" for reason in reasons),
    ]
    rows = [
        [
            item.name,
            str(item.settled),
            str(item.cancelled),
            _number(item.play_seconds / 60.0),
            _number(item.rounds_per_hour),
            *(str(item.cards[source]) for source in sources),
            str(sum(item.pauses.values())),
            _number(item.pause_minutes),
            str(item.out_of_turn),
            *(str(item.pauses[reason]) for reason in reasons),
            *(_number(item.pause_seconds[reason] / 60.0) for reason in reasons),
        ]
        for item in found
    ]
    return header, rows


def csv_text(found: Sequence[Group], by: str) -> str:
    from controller.kernel.cli_support import defuse_formula

    header, rows = table_rows(found, by)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    # A staff id or a table id comes from outside: never a formula in a spreadsheet.
    writer.writerows([[defuse_formula(row[0]), *row[1:]] for row in rows])
    return out.getvalue()


def plain_text(found: Sequence[Group], by: str, window: str) -> str:
    from controller.tools.journal_cli import printable

    if not found:
        return f"no rounds and no pauses {window}\n"
    header, rows = table_rows(found, by)
    reasons = pause_reasons(found)
    # The main table without the per-reason columns, which follow as a table of their own.
    width = len(header) - 2 * len(reasons)
    lines = [f"by {by}, {window}", ""]
    lines += _columns(header[:width], [[printable(row[0]), *row[1:width]] for row in rows])
    if reasons:
        lines += ["", "pauses by reason"]
        lines += _columns(
            [by, "reason", "pauses", "minutes lost"],
            [
                [
                    printable(item.name),
                    reason,
                    str(item.pauses[reason]),
                    _number(item.pause_seconds[reason] / 60.0),
                ]
                for item in found
                for reason in reasons
                if item.pauses[reason]
            ],
        )
    return "\n".join(lines) + "\n"


def _columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Text columns: the first left-aligned, the figures right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        first, *rest = cells
        parts = [first.ljust(widths[0])]
        parts += [cell.rjust(width) for cell, width in zip(rest, widths[1:], strict=True)]
        return "  ".join(parts).rstrip()

    return [line(header), *map(line, rows)]


def window_text(start: float | None, end: float | None) -> str:
    from controller.tools.event_text import time_text

    if start is None and end is None:
        return "every round in the journals"
    since = "the start" if start is None else time_text(start)[:16]
    until = "the end" if end is None else time_text(end)[:16]
    return f"rounds opened from {since} to {until} (UTC)"
