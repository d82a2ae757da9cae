"""A table with its journal: every event is committed to disk before it takes effect.

:class:`JournaledTable` is what the daemon drives: ``handle(event)`` appends the event to
the journal (``synchronous=FULL``: it is on disk when ``append`` returns), then lets the
state machine take it and returns the effects. :meth:`JournaledTable.open` replays the
journal through a fresh machine to rebuild the exact state, then journals a
``ControllerStarted`` so that a round that was in progress is paused with reason
``recovered``, and the restart itself is part of the record.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.kernel.errors import ConfigurationError, JournalError
from controller.service.journal import Journal, JournalEntry, canonical_json
from controller.table.config import OperationalSettings, TableConfig
from controller.table.effects import Effect, PublishEvent
from controller.table.events import ControllerStarted, SettingsChanged
from controller.table.machine import MACHINE_REVISION, TableMachine

logger = logging.getLogger(__name__)


CONFIG_META_KEY = "table_config"
REVISION_META_KEY = "machine_revision"


def machine_revision(journal: Journal) -> int:
    """The machine revision a journal was written under: 1 for a journal bound to its table
    before revisions were recorded, the current one for a journal never bound."""
    stored = journal.meta(REVISION_META_KEY)
    if stored is None:
        return 1 if journal.meta(CONFIG_META_KEY) is not None else MACHINE_REVISION
    try:
        return int(stored)
    except ValueError as error:
        raise JournalError(f"{journal.path} records machine revision {stored!r}") from error


def bind_config(journal: Journal, config: TableConfig) -> OperationalSettings:
    """Record ``config``'s settings in a new journal, or check that the table, game and rule
    variant are those it was written with (replaying its rows under another game would
    rebuild another state). Returns the operational settings the journal began with; later
    changes are journaled events (``SettingsChanged``)."""
    stored = journal.meta(CONFIG_META_KEY)
    if stored is None:
        journal.set_meta(CONFIG_META_KEY, canonical_json(config.rules_fingerprint()))
        journal.set_meta(REVISION_META_KEY, str(MACHINE_REVISION))
        return config.operational()
    written = _stored_config(journal, stored)
    wanted, found = config.binding_fingerprint(), written.binding_fingerprint()
    if found != wanted:
        changed = ", ".join(
            f"{key} {found[key]!r} (now {wanted[key]!r})"
            for key in wanted
            if found[key] != wanted[key]
        )
        raise ConfigurationError(
            f"the journal {journal.path} belongs to another table or game: it was written "
            f"with {changed}; start a new journal for it"
        )
    return written.operational()


def _stored_config(journal: Journal, stored: str) -> TableConfig:
    try:
        return TableConfig.from_fingerprint(json.loads(stored), journal.path)
    except (ValueError, TypeError, ConfigurationError) as error:
        raise JournalError(f"{journal.path} records unreadable table settings: {error}") from error


def config_of(journal: Journal) -> TableConfig:
    """The settings a journal was written with (for the journal CLI)."""
    stored = journal.meta(CONFIG_META_KEY)
    if stored is None:
        raise JournalError(f"{journal.path} records no table settings")
    return _stored_config(journal, stored)


ReplayObserver = Callable[[JournalEntry, list[Effect]], None]


def replay(
    journal: Journal,
    config: TableConfig,
    settings: OperationalSettings | None = None,
    observe: ReplayObserver | None = None,
) -> TableMachine:
    """A machine fed every verified row of ``journal``; JournalError if the chain breaks.
    ``settings``: the operational settings the journal began with (default: the config's).
    ``observe`` sees each row with the effects it had (to rebuild what was published)."""
    machine = TableMachine(config, settings, machine_revision(journal))
    for entry in journal.verified_entries():
        effects = machine.handle(entry.event())
        if observe is not None:
            observe(entry, effects)
    return machine


def settings_change(
    machine: TableMachine, config: TableConfig, at: float
) -> SettingsChanged | None:
    """The event that brings the replayed table to ``config``'s operational settings, or
    None when they are those it already has (or will have from the next round)."""
    wanted = config.operational()
    latest = machine.state.pending_settings or machine.settings
    if latest == wanted:
        return None
    return SettingsChanged(**wanted.to_dict(), at=at)


class JournaledTable:
    """The state machine behind its journal. Not thread-safe: one queue feeds it."""

    def __init__(self, config: TableConfig, journal: Journal, machine: TableMachine) -> None:
        self.config = config
        self.journal = journal
        self.machine = machine
        self.gaps_visible = False
        """Whether the table's shoe accounts for every card drawn while the table was down
        (journaled with each start: see ``ControllerStarted``). The assembly sets it from
        the shoe's protocol; a table with no shoe assumes it does not."""
        self.replayed_rows = journal.last_seq
        """The rows the journal held when the table was built on it (0: a new journal)."""

    @classmethod
    def open(
        cls,
        config: TableConfig,
        at: float,
        path: Path | None = None,
        observe: ReplayObserver | None = None,
        start: bool = True,
        gaps_visible: bool = False,
    ) -> tuple[JournaledTable, list[Effect]]:
        """Open (or create) the journal, replay it, and record the start at time ``at``.

        Returns the table and the effects of the start (the state to publish, the shoe lock
        to ask for, a ``recovered`` pause when a round was in progress). ``observe`` sees
        every replayed row with its effects. With ``start=False`` nothing is journaled: the
        caller puts :meth:`start_events` through its own loop. ``gaps_visible``: see the
        attribute.
        """
        journal = Journal(path or config.journal_path)
        try:
            initial = bind_config(journal, config)
            machine = replay(journal, config, initial, observe)
        except BaseException:
            journal.close()
            raise
        logger.info(
            "replayed %d journal rows from %s: %s",
            journal.last_seq,
            journal.path,
            machine.state.phase.name,
        )
        table = cls(config, journal, machine)
        table.gaps_visible = gaps_visible
        if not start:
            return table, []
        effects: list[Effect] = []
        for event in table.start_events(at):
            effects += table.handle(event)
        return table, effects

    def start_events(self, at: float) -> list[object]:
        """What a start journals: the operational settings' change when the configuration
        brings other ones, then ``ControllerStarted``."""
        events: list[object] = []
        change = settings_change(self.machine, self.config, at)
        if change is not None:
            logger.info("operational settings changed: %s", self.config.operational().to_dict())
            events.append(change)
        events.append(ControllerStarted(at, gaps_visible=self.gaps_visible))
        return events

    def awaits_timer(self, timer_id: int) -> bool:
        """Whether the machine still waits for timer ``timer_id``. The expiry of one it no
        longer waits for is a no-op (``timer.stale``): the runtime need not journal it."""
        return timer_id in self.machine.state.timers

    def handle(self, event: object) -> list[Effect]:
        """Journal ``event``, then apply it. An event that cannot be journaled faithfully is
        refused before it reaches the journal or the machine, and so changes nothing.

        Raises :class:`~controller.kernel.errors.JournalError` if the journal cannot be written
        (disk full, a second process appending): the event is then not applied either, and
        the daemon must stop rather than run on without a record.
        """
        refusal = TableMachine.refusal(event)
        if refusal is not None:
            return [refusal]
        self.journal.append(event)
        return self.machine.apply(event)

    def close(self) -> None:
        self.journal.close()


def _replayed_rows(
    journal: Journal, config: TableConfig
) -> Iterator[tuple[JournalEntry, list[Effect], int | None, int | None]]:
    """Each verified row with its effects and the round in progress before and after it,
    replayed under the settings the journal began with."""
    stored = journal.meta(CONFIG_META_KEY)
    initial = _stored_config(journal, stored).operational() if stored else None
    machine = TableMachine(config, initial, machine_revision(journal))
    for entry in journal.verified_entries():
        before = machine.round_in_progress()
        effects = machine.handle(entry.event())
        yield entry, effects, before, machine.round_in_progress()


def export_round(journal: Journal, config: TableConfig, round_id: int) -> list[dict[str, Any]]:
    """Every journaled event that belongs to round ``round_id`` (from the request that
    opened it to the result or the void), each with the effects it had."""
    lines: list[dict[str, Any]] = []
    for entry, effects, before, after in _replayed_rows(journal, config):
        if round_id in (before, after):
            lines.append(
                {
                    "seq": entry.seq,
                    "hash": entry.hash,
                    "kind": entry.kind,
                    "event": entry.fields,
                    "effects": [effect.to_dict() for effect in effects],
                }
            )
    return lines


@dataclass(slots=True)
class RoundSummary:
    """One round as the journal tells it: for ``journal rounds``."""

    round_id: int
    shoe_id: int | None
    game: str
    opened_at: float | None
    first_row: int
    last_row: int = 0
    settled_at: float | None = None
    cancelled_at: float | None = None
    cancelled_by: str | None = None
    pauses: list[str] = field(default_factory=list)
    """The reason of each pause while the round was in progress, in order."""

    @property
    def outcome(self) -> str:
        """``settled``, ``cancelled`` or ``open`` (the journal ends inside the round)."""
        if self.settled_at is not None:
            return "settled"
        if self.cancelled_at is not None:
            return "cancelled"
        return "open"

    def to_dict(self) -> dict[str, Any]:
        return {
            "round_id": self.round_id,
            "shoe_id": self.shoe_id,
            "game": self.game,
            "opened_at": self.opened_at,
            "outcome": self.outcome,
            "settled_at": self.settled_at,
            "cancelled_at": self.cancelled_at,
            "cancelled_by": self.cancelled_by,
            "pauses": list(self.pauses),
            "rows": [self.first_row, self.last_row],
        }


def round_summaries(journal: Journal, config: TableConfig) -> list[RoundSummary]:
    """Every round of the journal, in the order they opened, from what the replay
    published: ``round_opened``, ``table_paused``, ``round_settled``, ``round_voided``."""
    rounds: dict[int, RoundSummary] = {}
    for entry, effects, before, after in _replayed_rows(journal, config):
        at = entry.fields.get("at")
        for effect in effects:
            if not isinstance(effect, PublishEvent):
                continue
            payload = effect.payload
            round_id = payload.get("round_id")
            if effect.name == "round_opened" and isinstance(round_id, int):
                rounds[round_id] = RoundSummary(
                    round_id, payload.get("shoe_id"), config.game, at, entry.seq
                )
            summary = rounds.get(round_id) if isinstance(round_id, int) else None
            if summary is None:
                continue
            if effect.name == "round_settled":
                summary.settled_at = at
            elif effect.name == "round_voided":
                summary.cancelled_at, summary.cancelled_by = at, payload.get("by")
            elif effect.name == "table_paused":
                summary.pauses.append(str(payload.get("reason")))
        for round_id in {before, after} - {None}:
            if round_id in rounds:
                rounds[round_id].last_row = entry.seq
    return list(rounds.values())


def describe_reused_journal(table: JournaledTable) -> str | None:
    """One line saying that ``table`` carries on a journal that already held rows (table,
    game, rows, shoe, last round), or None when the journal was new.

    For the daemon and the demo at start, so that nobody mistakes a table that resumed an
    old journal (its round and shoe numbers carry on) for a fresh one.
    """
    if table.replayed_rows == 0:
        return None
    state = table.machine.state
    shoe = f"shoe {state.shoe_id}" if state.shoe_id is not None else "no shoe in play"
    last_round = f"last round {state.rounds_started}" if state.rounds_started else "no round yet"
    return (
        f"table {table.config.table_id} ({table.config.game}) carries on the journal "
        f"{table.journal.path}: {table.replayed_rows} rows, {shoe}, {last_round}"
    )


def log_reused_journal(table: JournaledTable, level: int = logging.INFO) -> None:
    """Log :func:`describe_reused_journal`'s line at ``level``, if the journal held rows."""
    line = describe_reused_journal(table)
    if line is not None:
        logger.log(level, "%s", line)
