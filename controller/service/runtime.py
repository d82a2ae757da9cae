"""Carry out what the table's state machine asks: one queue in, one thread, effects out.

:class:`TableRuntime` is the part of the daemon that is not MQTT: devices and people hand
events to :meth:`TableRuntime.submit` from any thread (the shoe driver and the camera are
given it as their sink), which puts them on the one queue; :meth:`TableRuntime.run` takes
them one at a time, hands each to the journaled table (journal first, then the machine) and
hands the effects, once, as one :class:`~controller.table.effects.EffectBatch` (with the
journal row and the event's time) to the :class:`EffectHandler`: the devices take theirs
(the shoe's gate, the camera's questions), the publisher the rest. Timers are kept here, in
a heap, and become ``TimerExpired`` events on the same queue: there is no timer thread, and
the machine never reads a clock.

A journal (or outbox) that cannot be written stops the table: the runtime keeps the error
as :attr:`TableRuntime.failure` and takes no further input (an event it cannot record must
not take effect, and none after it may either); the daemon sees it, answers what waits, and
exits with that error's one line.

``livetable run`` and the demo both get it from :func:`controller.service.assembly.assemble`, with
the real or the simulated devices plugged in.
"""

from __future__ import annotations

import heapq
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol, cast

from controller.kernel.errors import JournalError, TableError
from controller.service.journaled_table import JournaledTable
from controller.table.effects import Effect, EffectBatch, EventRejected, StartTimer
from controller.table.events import TableEvent, TimerExpired, event_name

logger = logging.getLogger(__name__)

# How long `run` waits on the queue when no timer is due: bounds how late `stop` is seen.
IDLE_WAIT_S = 0.2


class EffectHandler(Protocol):
    """Where the runtime sends each event's effects, once (the timers it keeps itself).

    :meth:`carry_out` runs on the table's only thread and must not block for long (hand slow
    work, like a camera read, to another thread and put its answer on the queue). It carries
    the effects out in order; one that fails with a :class:`TableError` is logged and the
    rest still run. A :class:`JournalError` it raises (the outbox could not be written)
    stops the table."""

    def carry_out(self, batch: EffectBatch) -> None: ...


class RuntimeTask:
    """Work to run on the table's thread, in queue order with the events (an MQTT request
    that must look at the table's state and act on it without a race)."""

    __slots__ = ("work",)

    def __init__(self, work: Callable[[], None]) -> None:
        self.work = work


class TableRuntime:
    """The table's event loop. Not re-entrant: one thread calls :meth:`run` or :meth:`step`."""

    def __init__(
        self,
        table: JournaledTable,
        handler: EffectHandler,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.table = table
        self.handler = handler
        self.clock = clock
        self.events: queue.Queue[object] = queue.Queue()
        self._timers: list[tuple[float, int]] = []
        self.events_handled = 0
        self.follow: Callable[[EffectBatch], list[object]] | None = None
        """What a carried-out batch makes the table journal at once, right after its row
        (the camera's pictures of the cards it dealt, :mod:`controller.service.pictures`):
        the next event waits for these, so each row stands beside the one it is about."""
        self.failure: JournalError | None = None
        """Why the table stopped taking input: its journal or outbox could not be written.
        Set once; from then on :meth:`handle` takes nothing."""

    def submit(self, event: object) -> None:
        """Put an event on the table's queue; safe from any thread."""
        self.events.put(event)

    def handle(self, event: object) -> list[Effect]:
        """Journal and apply one event, carry out its effects, and return them (see
        :meth:`take`); nothing for a task or after a :attr:`failure`."""
        batch = self.take(event)
        return [] if batch is None else list(batch.effects)

    def take(self, event: object) -> EffectBatch | None:
        """Journal and apply one event and carry out its effects: the batch carried out.
        After a :attr:`failure`, nothing: the event is not taken (tasks still run, so that
        requests are answered); None then, and for a task."""
        if isinstance(event, RuntimeTask):
            try:
                event.work()
            except JournalError as error:
                self.fail(error)
            except Exception:
                # A request's handling failed (a bug, or an answer that could not go out):
                # what it journaled stands; the table goes on.
                logger.exception("a task on the table's thread failed")
            return None
        if self.failure is not None:
            return None
        journal = self.table.journal
        before = journal.last_seq
        try:
            effects = self.table.handle(event)
        except JournalError as error:
            # Not recorded, so not taken: nothing changed, and nothing more may.
            self.fail(error)
            return None
        except TableError as error:
            logger.error("%s event not taken: %s", type(event).__name__, error)
            effects = [EventRejected(event_name(event), str(error))]
        if journal.last_seq != before:
            # Journaled, so a table event: every one carries its time.
            at = cast(TableEvent, event).at
            row = journal.last_entry
            batch = EffectBatch(
                tuple(effects),
                journal.last_seq,
                journal.last_hash,
                at,
                None if row is None else (row.kind, row.body, row.prev_hash),
            )
        else:
            batch = EffectBatch(tuple(effects), None, None, None)
        self.events_handled += 1
        self._carry_out(batch)
        checkpoint = self.table.take_checkpoint()
        if checkpoint is not None and self.failure is None:
            # The event ended a shoe: the table's state follows it into the journal, so
            # that the next start replays from here.
            self.take(checkpoint)
        if self.follow is not None and batch.journal_seq is not None and self.failure is None:
            try:
                following = self.follow(batch)
            except Exception:  # the record of a picture must never cost the table its card
                logger.exception("what follows row %d could not be made", batch.journal_seq)
                following = []
            for each in following:
                self.take(each)
        return batch

    def _carry_out(self, batch: EffectBatch) -> None:
        """Start the batch's timers, then hand it to the handler. The row stands when the
        handler cannot keep what it said (the outbox): the next start rebuilds its messages
        from the row, and the table stops here."""
        for effect in batch.effects:
            if isinstance(effect, StartTimer):
                heapq.heappush(self._timers, (effect.due_at, effect.timer_id))
        try:
            self.handler.carry_out(batch)
        except JournalError as error:
            self.fail(error)

    def fail(self, error: JournalError) -> None:
        """Stop taking input, for ``error`` (the first one is kept)."""
        if self.failure is None:
            self.failure = error

    def _fire_due_timers(self) -> None:
        now = self.clock()
        while self._timers and self._timers[0][0] <= now:
            _due, timer_id = heapq.heappop(self._timers)
            if not self.table.awaits_timer(timer_id):
                # The card, decision or pause it timed came first: its expiry would change
                # nothing, so it costs the journal no row (and the disk no flush).
                logger.debug("timer #%d is no longer awaited", timer_id)
                continue
            self.handle(TimerExpired(timer_id, now))

    def step(self, max_wait_s: float = IDLE_WAIT_S) -> None:
        """Fire due timers, then handle at most one queued event (waiting up to
        ``max_wait_s``, or until the next timer is due)."""
        self._fire_due_timers()
        wait = max_wait_s
        if self._timers:
            wait = max(0.0, min(wait, self._timers[0][0] - self.clock()))
        try:
            event = self.events.get(timeout=wait)
        except queue.Empty:
            return
        self.handle(event)

    def run(self, stop: threading.Event) -> None:
        """Loop until ``stop`` is set or the table fails (:attr:`failure`)."""
        while not stop.is_set() and self.failure is None:
            self.step()
