"""A table with its journal: every event is committed to disk before it takes effect.

:class:`JournaledTable` is what the daemon drives: ``handle(event)`` appends the event to
the journal (``synchronous=FULL``: it is on disk when ``append`` returns), then lets the
state machine take it and returns the effects. :meth:`JournaledTable.open` replays the
journal through a fresh machine to rebuild the exact state, then journals a
``ControllerStarted`` so that a round that was in progress is paused with reason
``recovered``, and the restart itself is part of the record.

**Checkpoints.** When a shoe ends, the table journals a
:class:`~controller.table.events.Checkpoint` row right after the row that ended it: the
table's whole state (:mod:`controller.table.checkpoint`) and how many event messages the
rows before it published. A start (:meth:`JournaledTable.open`) rebuilds the state from the
last checkpoint and replays only the rows after it, verifying the chain from the checkpoint
on; a full replay (:func:`replay`, ``livetable journal verify --replay``) meets every
checkpoint and checks that it holds exactly the state the rows before it give. A journal
written before checkpoints existed has none and replays whole until its next shoe ends.
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
from controller.table.checkpoint import checkpointable, decode_state, encode_state
from controller.table.config import OperationalSettings, TableConfig
from controller.table.effects import (
    CheckpointTaken,
    Effect,
    EventRejected,
    PublishEvent,
    PublishState,
)
from controller.table.events import Checkpoint, ControllerStarted, SettingsChanged
from controller.table.machine import MACHINE_REVISION, TableMachine
from controller.table.state import Phase

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
ReplayProgress = Callable[[int], None]
"""Called now and then during a replay with the number of rows replayed so far (the daemon
tells the service manager that its start goes on)."""
# How many rows a replay takes between two calls of its progress callback: a few hundredths
# of a second of replay, so a callback that acts by the clock is called often enough.
PROGRESS_ROWS = 1_000


def published_count(effects: list[Effect]) -> int:
    """How many event messages (the API's numbered ``.../events``) ``effects`` publish."""
    return sum(1 for effect in effects if isinstance(effect, PublishEvent | EventRejected))


def checkpoint_effects(machine: TableMachine, published: int) -> list[Effect]:
    """What a checkpoint row does, live and replayed alike: it says how many event messages
    came before it, and publishes the state (so that the state a start publishes is the same
    whether it replayed the rows before the checkpoint or began at it)."""
    return [CheckpointTaken(published), PublishState(machine.public_state())]


class Replay:
    """A machine fed journal rows one at a time, counting the event messages they publish;
    a checkpoint row met on the way is checked against the state (JournalError if it does
    not hold exactly that state and count)."""

    def __init__(self, machine: TableMachine, published: int = 0) -> None:
        self.machine = machine
        self.published = published

    def feed(self, entry: JournalEntry) -> list[Effect]:
        event = entry.event()
        if isinstance(event, Checkpoint):
            try:
                found = encode_state(self.machine.state)
            except ValueError:
                found = None
            if found != event.state or event.published != self.published:
                raise JournalError(
                    f"row {entry.seq} is a checkpoint that does not hold the state the rows "
                    "before it give"
                )
            return checkpoint_effects(self.machine, self.published)
        effects = self.machine.handle(event)
        self.published += published_count(effects)
        return effects


def resume_from(
    journal: Journal, config: TableConfig, checkpoint: JournalEntry
) -> tuple[TableMachine, int]:
    """A machine in the state ``checkpoint`` holds, and the event messages published
    before it; JournalError if the row is no checkpoint this livetable reads."""
    event = checkpoint.event()
    if not isinstance(event, Checkpoint):
        raise JournalError(f"row {checkpoint.seq} is no checkpoint")
    try:
        state = decode_state(event.state)
    except JournalError as error:
        raise JournalError(f"{journal.path} row {checkpoint.seq}: {error}") from error
    machine = TableMachine(config, state.settings, machine_revision(journal))
    machine.state = state
    return machine, event.published


def replay(
    journal: Journal,
    config: TableConfig,
    settings: OperationalSettings | None = None,
    observe: ReplayObserver | None = None,
    *,
    from_checkpoint: bool = False,
    progress: ReplayProgress | None = None,
) -> TableMachine:
    """A machine fed every verified row of ``journal``; JournalError if the chain breaks.
    ``settings``: the operational settings the journal began with (default: the config's).
    ``observe`` sees each row with the effects it had (to rebuild what was published).
    ``from_checkpoint``: begin at the journal's last checkpoint (its state, then the rows
    after it, the chain verified from it on) instead of its first row."""
    return replay_counting(journal, config, settings, observe, from_checkpoint, progress)[0]


def replay_counting(
    journal: Journal,
    config: TableConfig,
    settings: OperationalSettings | None = None,
    observe: ReplayObserver | None = None,
    from_checkpoint: bool = False,
    progress: ReplayProgress | None = None,
) -> tuple[TableMachine, int]:
    """:func:`replay`, and how many event messages the journal's rows published."""
    checkpoint = journal.last_checkpoint() if from_checkpoint else None
    if checkpoint is None:
        replaying = Replay(TableMachine(config, settings, machine_revision(journal)))
        start = 1
    else:
        replaying = Replay(*resume_from(journal, config, checkpoint))
        start = checkpoint.seq
    for rows, entry in enumerate(journal.verified_entries(start), start=1):
        if entry.seq == start and checkpoint is not None:
            effects = checkpoint_effects(replaying.machine, replaying.published)
        else:
            effects = replaying.feed(entry)
        if observe is not None:
            observe(entry, effects)
        if progress is not None and rows % PROGRESS_ROWS == 0:
            progress(rows)
    return replaying.machine, replaying.published


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

    def __init__(
        self, config: TableConfig, journal: Journal, machine: TableMachine, published: int = 0
    ) -> None:
        self.config = config
        self.journal = journal
        self.machine = machine
        self.published = published
        """How many event messages the journal's rows published so far (the API's ``seq``
        of the last): what the next checkpoint records."""
        self._checkpoint_at: float | None = None
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
        progress: ReplayProgress | None = None,
        durable: bool = True,
    ) -> tuple[JournaledTable, list[Effect]]:
        """Open (or create) the journal, replay it, and record the start at time ``at``.

        Returns the table and the effects of the start (the state to publish, the shoe lock
        to ask for, a ``recovered`` pause when a round was in progress). ``observe`` sees
        every replayed row with its effects. With ``start=False`` nothing is journaled: the
        caller puts :meth:`start_events` through its own loop. ``gaps_visible``: see the
        attribute. The replay begins at the journal's last checkpoint; ``progress`` is
        called every :data:`PROGRESS_ROWS` rows replayed. ``durable``: see
        :class:`~controller.service.journal.Journal` (a benchmark's, never a table's).
        """
        journal = Journal(path or config.journal_path, durable=durable)
        try:
            initial = bind_config(journal, config)
            checkpoint = journal.last_checkpoint()
            machine, published = replay_counting(
                journal, config, initial, observe, from_checkpoint=True, progress=progress
            )
        except BaseException:
            journal.close()
            raise
        logger.info(
            "replayed %d journal rows from %s%s: %s",
            journal.last_seq - (0 if checkpoint is None else checkpoint.seq - 1),
            journal.path,
            "" if checkpoint is None else f" from its checkpoint at row {checkpoint.seq}",
            machine.state.phase.name,
        )
        table = cls(config, journal, machine, published)
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
        if isinstance(event, Checkpoint):
            return self._checkpoint(event)
        before = self.machine.state.phase
        self.journal.append(event)
        effects = self.machine.apply(event)
        self.published += published_count(effects)
        state = self.machine.state
        if state.phase is Phase.AWAITING_SHUFFLE and before is not Phase.AWAITING_SHUFFLE:
            # A shoe ended: the next row is the checkpoint (see take_checkpoint).
            self._checkpoint_at = event.at  # type: ignore[attr-defined]
        return effects

    def take_checkpoint(self) -> Checkpoint | None:
        """The checkpoint to journal next, once a shoe ended (then None until the next
        end): whoever feeds the table hands it to :meth:`handle` right after the event
        that ended the shoe, at that event's time."""
        at, self._checkpoint_at = self._checkpoint_at, None
        if at is None or not checkpointable(self.machine.state):
            return None
        return Checkpoint(encode_state(self.machine.state), self.published, at)

    def _checkpoint(self, event: Checkpoint) -> list[Effect]:
        state = self.machine.state
        if not checkpointable(state) or (event.state, event.published) != (
            encode_state(state),
            self.published,
        ):
            return [EventRejected("Checkpoint", "it does not hold the table's state")]
        self.journal.append(event)
        return checkpoint_effects(self.machine, self.published)

    def close(self) -> None:
        self.journal.close()


def _replayed_rows(
    journal: Journal, config: TableConfig
) -> Iterator[tuple[JournalEntry, list[Effect], int | None, int | None]]:
    """Each verified row with its effects and the round in progress before and after it,
    replayed under the settings the journal began with."""
    stored = journal.meta(CONFIG_META_KEY)
    initial = _stored_config(journal, stored).operational() if stored else None
    replaying = Replay(TableMachine(config, initial, machine_revision(journal)))
    machine = replaying.machine
    for entry in journal.verified_entries():
        before = machine.round_in_progress()
        effects = replaying.feed(entry)
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
