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
from pathlib import Path
from typing import Any

from controller.errors import ConfigurationError, JournalError
from controller.table.effects import Effect
from controller.table.events import ControllerStarted
from controller.table.journal import Journal, canonical_json
from controller.table.machine import TableMachine
from controller.table_config import TableConfig

logger = logging.getLogger(__name__)


CONFIG_META_KEY = "table_config"


def bind_config(journal: Journal, config: TableConfig) -> None:
    """Record ``config``'s settings in a new journal, or check they are those it was
    written with: replaying events under other settings would rebuild another state."""
    wanted = canonical_json(config.rules_fingerprint())
    stored = journal.meta(CONFIG_META_KEY)
    if stored is None:
        journal.set_meta(CONFIG_META_KEY, wanted)
    elif stored != wanted:
        raise ConfigurationError(
            f"the journal {journal.path} was written with the settings {stored}, not {wanted}: "
            "start a new journal to change them"
        )


def config_of(journal: Journal) -> TableConfig:
    """The settings a journal was written with (for the journal CLI)."""
    stored = journal.meta(CONFIG_META_KEY)
    if stored is None:
        raise JournalError(f"{journal.path} records no table settings")
    return TableConfig(**json.loads(stored), journal_path=journal.path)


def replay(journal: Journal, config: TableConfig) -> TableMachine:
    """A machine fed every verified row of ``journal``; JournalError if the chain breaks."""
    machine = TableMachine(config)
    for entry in journal.verified_entries():
        machine.handle(entry.event())
    return machine


class JournaledTable:
    """The state machine behind its journal. Not thread-safe: one queue feeds it."""

    def __init__(self, config: TableConfig, journal: Journal, machine: TableMachine) -> None:
        self.config = config
        self.journal = journal
        self.machine = machine

    @classmethod
    def open(
        cls, config: TableConfig, at: float, path: Path | None = None
    ) -> tuple[JournaledTable, list[Effect]]:
        """Open (or create) the journal, replay it, and record the start at time ``at``.

        Returns the table and the effects of the start (the state to publish, the shoe lock
        to ask for, a ``recovered`` pause when a round was in progress).
        """
        journal = Journal(path or config.journal_path)
        try:
            bind_config(journal, config)
            machine = replay(journal, config)
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
        return table, table.handle(ControllerStarted(at))

    def handle(self, event: object) -> list[Effect]:
        """Journal ``event``, then apply it. An event that cannot be journaled faithfully is
        refused before it reaches the journal or the machine, and so changes nothing.

        Raises :class:`~controller.errors.JournalError` if the journal cannot be written
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


def export_round(journal: Journal, config: TableConfig, round_id: int) -> list[dict[str, Any]]:
    """Every journaled event that belongs to round ``round_id`` (from the request that
    opened it to the result or the void), each with the effects it had."""
    machine = TableMachine(config)
    lines: list[dict[str, Any]] = []
    for entry in journal.verified_entries():
        before = machine.round_in_progress()
        effects = machine.handle(entry.event())
        if round_id in (before, machine.round_in_progress()):
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
