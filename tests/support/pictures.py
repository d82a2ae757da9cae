"""A table's journal written with the camera simulator's pictures beside it, as the daemon
writes them (``controller/service/pictures.py``), for the tests that read them back through
the API and the console: the table is driven by :func:`controller.tools.crash_runner.next_event`
on its own thread-less runtime, the camera is the simulator with flat card faces."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from controller.kernel.cards import Card
from controller.service.config import LivetableConfig
from controller.service.journal import Journal, JournalEntry
from controller.service.journaled_table import JournaledTable
from controller.service.pictures import photographer, picture_rows
from controller.service.runtime import TableRuntime
from controller.table.config import TableConfig
from controller.table.effects import EffectBatch, PublishEvent
from controller.table.events import CardDrawn, CardMisread, CutCardDrawn
from controller.tools.crash_runner import START_TIME, next_event
from simulators.camera import SimulatedCamera
from simulators.camera.renderer import Perturbations

SEED = 5


def plain_faces(card: Card, height: int) -> np.ndarray:
    # A flat face per card: the tests need pixels, not artwork.
    shade = 40 + 3 * (sum(map(ord, str(card))) % 60)
    return np.full((height, round(height * 0.7), 3), (shade, 90, 200), np.uint8)


class Recorder:
    """The effect handler: the batches carried out, in order."""

    def __init__(self) -> None:
        self.batches: list[EffectBatch] = []

    def carry_out(self, batch: EffectBatch) -> None:
        self.batches.append(batch)


def pictured_table(
    config: TableConfig, *, width: int = 640, height: int = 360
) -> tuple[TableRuntime, Recorder]:
    """``config``'s table (its journal opened, nothing journaled yet) with the camera
    simulator's pictures following every batch."""
    camera = SimulatedCamera(
        config.game,
        faces=plain_faces,
        seed=1,
        perturbations=Perturbations.none(),
        width=width,
        height=height,
    )
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    recorder = Recorder()
    ticks = iter(range(10**9))
    runtime = TableRuntime(table, recorder, clock=lambda: START_TIME + next(ticks))
    runtime.follow = photographer(LivetableConfig(table=config), table, camera, runtime.clock).after
    return runtime, recorder


def play(
    runtime: TableRuntime,
    until: Callable[[list[Any], JournalEntry | None], bool],
    numbered: bool = True,
) -> None:
    """Start the table and feed it what the people around it do until ``until(effects,
    last row)`` says so. ``numbered=False``: the shoe numbers no card (a daemon carrying on
    the journal then takes its own shoe's numbers from 1, as a new shoe's)."""
    table = runtime.table
    for event in table.start_events(START_TIME):
        runtime.handle(event)
    seq = 1
    while True:
        seq += 1
        assert seq < 5000, "the table never got there"
        event = next_event(table.machine, SEED, seq)
        if not numbered and isinstance(event, CardDrawn | CutCardDrawn | CardMisread):
            event = dataclasses.replace(event, sequence=None)
        effects = runtime.handle(event)
        if until(effects, table.journal.last_entry):
            return


def settled(count: int) -> Callable[[list[Any], JournalEntry | None], bool]:
    """``play``'s stop once ``count`` rounds are settled."""
    seen = [0]

    def enough(effects: list[Any], _last: JournalEntry | None) -> bool:
        seen[0] += sum(
            isinstance(effect, PublishEvent) and effect.name == "round_settled"
            for effect in effects
        )
        return seen[0] >= count

    return enough


def write_pictured_journal(
    path: Path, game: str, rounds: int, table_id: str = "t1", numbered: bool = True
) -> None:
    """Table ``table_id``'s journal at ``path`` with ``rounds`` rounds settled, pictured."""
    runtime, _ = pictured_table(TableConfig(table_id=table_id, game=game, journal_path=path))
    try:
        play(runtime, settled(rounds), numbered)
        # The runtime journals the pictures after the settling batch: it is done by now.
    finally:
        runtime.table.close()


def picture_fields(path: Path, round_id: int | None = None) -> list[dict[str, Any]]:
    """The journal's picture rows (of one round), each row's fields with its ``row``."""
    with Journal(path, read_only=True) as journal:
        return [dict(row.fields, row=row.seq) for row in picture_rows(journal, round_id)]
