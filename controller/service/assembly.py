"""One place that assembles a table from its configuration.

:func:`assemble` opens the journaled table (replaying its journal), makes the runtime (the
one queue and the one thread), and, from the configuration, the shoe driver and the camera
(capture thread and reader), each handed the runtime's :meth:`~TableRuntime.submit` as the
sink for its events; :class:`DeviceEffects` carries out the effects that go to devices (the
shoe's gate, the camera's questions). What is left to the caller is where the rest of each
event's :class:`~controller.table.effects.EffectBatch` goes: ``livetable run`` numbers it
into the outbox and sends it over MQTT (:class:`Effects` joins the two sides). Everything
runs the same assembly; nothing builds a table by hand.

Every producer puts its events through :meth:`TableRuntime.submit`, the drivers too (it is
the sink they are given): nothing reaches the table another way.

A restarted table's shoe driver is handed the last shoe sequence number in the journal
(:func:`last_shoe_sequence`), so that the shoe's numbering survives the restart: a card drawn
while the daemon was down shows as a gap at the first frame after it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from controller.kernel.errors import TableError
from controller.service import sd_notify
from controller.service.config import LivetableConfig
from controller.service.journal import Journal
from controller.service.journaled_table import JournaledTable, ReplayObserver
from controller.service.runtime import EffectHandler, RuntimeTask, TableRuntime
from controller.service.shoe_results import ShoeResultCheck
from controller.table.effects import (
    AskCamera,
    Effect,
    EffectBatch,
    LockShoe,
    PublishEvent,
    UnlockShoe,
)
from controller.table.events import (
    ENCODINGS,
    CameraRead,
    CardDrawn,
    CardMisread,
    CardsLost,
    CutCardDrawn,
)

logger = logging.getLogger(__name__)


_NUMBERED_BY_THE_SHOE: Final = (CardDrawn, CutCardDrawn, CardMisread, CardsLost)
_NUMBERED_KINDS: Final = frozenset(
    kind
    for encoding in ENCODINGS.values()
    for kind, (cls, _fields) in encoding.items()
    if cls in _NUMBERED_BY_THE_SHOE
)


def last_shoe_sequence(journal: Journal) -> int | None:
    """The last shoe sequence number the journal holds (a card's, a cut card's, a misread's,
    or the last of a gap's), in journal order; None if it holds none (a new table, a shoe
    protocol without numbers). What a restarted table's shoe driver numbers on from."""
    for entry in journal.newest_first(_NUMBERED_KINDS):
        event = entry.event()
        if isinstance(event, CardsLost):
            if event.sequences:
                return event.sequences[-1]
        elif isinstance(event, _NUMBERED_BY_THE_SHOE) and event.sequence is not None:
            return event.sequence
    return None


class DeviceEffects:
    """The device side of the table's effects.

    :meth:`carry_out` takes a batch's device effects in order. ``lock_shoe`` closes or opens
    the shoe's gate where its protocol can (a generic ASCII reader has no gate: nothing to
    do). ``ask_camera`` hands the question to the camera reader; with no camera, the answer
    is an abstention, so the round pauses for the supervisor exactly as it does when a
    camera cannot read the card. ``shoe_result`` takes the shoe's own hand result (Angel Eye
    ``G``) from the driver's thread to the table's, where :class:`ShoeResultCheck` compares
    it with the table's settlement (which :meth:`carry_out` hands it).
    """

    def __init__(
        self,
        submit: Callable[[object], None],
        clock: Callable[[], float],
        game: str | None = None,
    ) -> None:
        self.submit = submit
        self.clock = clock
        self.shoe_driver: Any = None
        self.camera_reader: Any = None
        self.result_check = ShoeResultCheck(submit, game)

    def shoe_result(self, reported: Any) -> None:
        """From the shoe driver's thread (``drivers.shoe.sessions.ShoeResult``): queued
        behind the cards that came before it, checked on the table's thread."""
        result = reported.result
        self.submit(
            RuntimeTask(
                lambda: self.result_check.shoe_reported(
                    result.outcome or "unknown",
                    result.player_pair,
                    result.banker_pair,
                    result.text,
                    reported.at,
                )
            )
        )

    def carry_out(self, batch: EffectBatch) -> None:
        """The shoe's gate and the camera's questions, in order, and the settlements for
        the shoe-result check. One that fails is logged; the rest still run."""
        for effect in batch.effects:
            try:
                if isinstance(effect, LockShoe | UnlockShoe):
                    self.lock_shoe(isinstance(effect, LockShoe))
                elif isinstance(effect, AskCamera):
                    self.ask_camera(effect)
                elif isinstance(effect, PublishEvent) and effect.name == "round_settled":
                    self.result_check.settled(effect.payload)
            except TableError as error:
                logger.error("could not carry out %s: %s", type(effect).__name__, error)

    def lock_shoe(self, locked: bool) -> None:
        from drivers.shoe.sessions import HostCommand

        command = HostCommand.LOCK if locked else HostCommand.UNLOCK
        driver = self.shoe_driver
        if driver is None or not driver.online:
            return
        if command not in driver.session.capabilities.commands:
            return
        try:
            driver.send(command)
        except Exception as error:  # the shoe went offline between the check and the send
            logger.warning("could not %s the shoe: %s", command.name.lower(), error)

    def ask_camera(self, effect: AskCamera) -> None:
        if self.camera_reader is not None:
            self.camera_reader.ask(effect)
            return
        self.submit(CameraRead(effect.position, None, self.clock(), effect.card_number))


class Effects(EffectHandler):
    """The effect handler from parts: each batch to the devices (:class:`DeviceEffects`),
    then to ``publish``, which takes what is published (the daemon's outbox and MQTT link,
    a test's list) and may raise :class:`~controller.kernel.errors.JournalError`."""

    def __init__(self, devices: DeviceEffects, publish: Callable[[EffectBatch], None]) -> None:
        self.devices = devices
        self._publish = publish

    def carry_out(self, batch: EffectBatch) -> None:
        self.devices.carry_out(batch)
        self._publish(batch)


@dataclass
class AssembledTable:
    """A table, its runtime and its devices; a context manager that starts and stops the
    devices and closes the journal."""

    config: LivetableConfig
    table: JournaledTable
    runtime: TableRuntime
    devices: DeviceEffects
    parts: list[Any] = field(default_factory=list)
    photographer: Any = None
    """The camera's picture taker (:mod:`controller.service.pictures`), None without one."""
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def start(self, at: float | None = None) -> list[Effect]:
        """Start the devices, then journal the start (settings, ``ControllerStarted``)
        through the runtime, whose effects are carried out; returns them."""
        for part in self.parts:
            self._stack.enter_context(part)
        effects: list[Effect] = []
        for event in self.table.start_events(self.runtime.clock() if at is None else at):
            effects += self.runtime.handle(event)
        return effects

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            self.table.close()

    def __enter__(self) -> AssembledTable:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def assemble(
    config: LivetableConfig,
    handler: Callable[[DeviceEffects], EffectHandler],
    *,
    clock: Callable[[], float] = time.time,
    observe: ReplayObserver | None = None,
    shoe: bool = True,
    camera_source: Any = None,
) -> AssembledTable:
    """Open the table of ``config`` and wire its devices; nothing runs until
    :meth:`AssembledTable.start`.

    ``handler`` makes the effect handler from the device effects. ``observe`` sees every
    replayed journal row with its effects. ``shoe=False`` leaves the shoe out (a test that
    feeds events itself). ``camera_source`` replaces the configured camera's capture (the
    demo's simulated camera); the reader is made when a camera or a source is given.
    """
    table, _ = JournaledTable.open(
        config.table,
        at=clock(),
        observe=observe,
        start=False,
        # Under systemd: a long replay asks for more time to start, so it is never killed.
        progress=sd_notify.replay_progress(),
    )
    try:
        runtime = TableRuntime(table, handler=None, clock=clock)  # type: ignore[arg-type]
        devices = DeviceEffects(runtime.submit, clock, config.table.game)
        runtime.handler = handler(devices)
        assembled = AssembledTable(config, table, runtime, devices)
        if config.shoe is not None:
            table.gaps_visible = config.shoe.parts.session.capabilities.gaps_always_visible
        if shoe and config.shoe is not None:
            from drivers.shoe.driver import ShoeDriver

            resume_after = last_shoe_sequence(table.journal)
            if resume_after is not None:
                logger.info(
                    "the shoe's numbering resumes after %d (the journal's last)", resume_after
                )
            devices.shoe_driver = ShoeDriver(
                config.shoe,
                runtime.submit,
                clock,
                on_result=devices.shoe_result,
                resume_after=resume_after,
            )
            assembled.parts.append(devices.shoe_driver)
        source = camera_source
        if source is None and config.camera is not None:
            from drivers.camera import CameraCapture

            source = CameraCapture(config.camera, runtime.submit, clock=clock)
            assembled.parts.append(source)
        if source is not None:
            from drivers.camera_reader import CameraReader

            devices.camera_reader = CameraReader(
                source, runtime.submit, config=config.vision, clock=clock
            )
            assembled.parts.append(devices.camera_reader)
            if config.evidence.pictures:
                from controller.service.pictures import photographer

                assembled.photographer = photographer(config, table, source, clock)
                runtime.follow = assembled.photographer.after
    except BaseException:
        table.close()
        raise
    return assembled
