"""A table with its journal: every event is committed to disk before it takes effect.

:class:`JournaledTable` is what the daemon drives: ``handle(event)`` appends the event to
the journal (``synchronous=FULL``: it is on disk when ``append`` returns), then lets the
state machine take it and returns the effects. :meth:`JournaledTable.open` replays the
journal through a fresh machine to rebuild the exact state, then journals a
``ControllerStarted`` so that a round that was in progress is paused with reason
``recovered``, and the restart itself is part of the record.
"""

from __future__ import annotations

import logging
from pathlib import Path

from controller.errors import JournalError
from controller.table.effects import Effect, EventRejected
from controller.table.events import ControllerStarted, check_event
from controller.table.journal import Journal
from controller.table.machine import TableMachine
from controller.table_config import TableConfig

logger = logging.getLogger(__name__)


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
        refused before it reaches the journal or the machine, and so changes nothing."""
        try:
            check_event(event)
        except JournalError as error:
            return [EventRejected(type(event).__name__, str(error))]
        self.journal.append(event)
        return self.machine.handle(event)

    def close(self) -> None:
        self.journal.close()
