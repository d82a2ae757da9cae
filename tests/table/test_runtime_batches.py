"""The runtime hands each event's effects to its handler once, as one batch with the journal
row they came from and the event's time; the devices take theirs from it, a failing one is
logged and the rest still run; an outbox that cannot be written stops the table."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from controller.kernel.errors import DeviceError, JournalError
from controller.service.assembly import DeviceEffects, Effects
from controller.service.journaled_table import JournaledTable
from controller.service.runtime import TableRuntime
from controller.table.config import TableConfig
from controller.table.effects import AskCamera, EffectBatch, EventRejected, PublishEvent
from controller.table.events import ControllerStarted, SupervisorCommanded


class Batches:
    """An effect handler that keeps every batch; ``fail_on`` makes it raise for one."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.batches: list[EffectBatch] = []
        self.fail_on = fail_on

    def carry_out(self, batch: EffectBatch) -> None:
        self.batches.append(batch)
        if batch.journal_seq is not None and batch.journal_seq == self.fail_on:
            raise JournalError("the outbox is full")


def open_table(tmp_path: Path) -> JournaledTable:
    config = TableConfig(table_id="t1", game="baccarat", journal_path=tmp_path / "t1.journal")
    table, _ = JournaledTable.open(config, at=100.0, start=False)
    return table


def test_each_event_is_one_batch_with_its_journal_row_and_time(tmp_path: Path) -> None:
    table = open_table(tmp_path)
    handler = Batches()
    runtime = TableRuntime(table, handler, clock=lambda: 100.0)
    try:
        runtime.handle(ControllerStarted(100.0))
        effects = runtime.handle(SupervisorCommanded("c1", "new_shoe", "sam", "supervisor", 101.5))
        assert len(handler.batches) == 2
        batch = handler.batches[-1]
        assert batch.effects == tuple(effects) and effects
        journal = table.journal
        assert (batch.journal_seq, batch.at) == (2, 101.5)
        assert batch.journal_hash == journal.hash_at(2) == journal.last_hash

        runtime.handle("not an event")  # refused before the journal
        refused = handler.batches[-1]
        assert journal.last_seq == 2
        assert (refused.journal_seq, refused.journal_hash, refused.at) == (None, None, None)
        assert [type(effect) for effect in refused.effects] == [EventRejected]
        assert len(handler.batches) == 3
    finally:
        table.close()


def test_an_outbox_that_fails_in_the_handler_stops_the_table_and_its_row_stands(
    tmp_path: Path,
) -> None:
    table = open_table(tmp_path)
    runtime = TableRuntime(table, Batches(fail_on=2), clock=lambda: 100.0)
    try:
        runtime.handle(ControllerStarted(100.0))
        assert runtime.failure is None
        runtime.handle(SupervisorCommanded("c1", "new_shoe", "sam", "supervisor", 101.0))
        assert isinstance(runtime.failure, JournalError)
        assert table.journal.last_seq == 2  # the row stands: the next start rebuilds from it
        assert runtime.handle(SupervisorCommanded("c2", "pause", "sam", "supervisor", 102.0)) == []
        assert table.journal.last_seq == 2
    finally:
        table.close()


class BrokenCamera:
    def ask(self, effect: AskCamera) -> None:
        raise DeviceError("the camera reader stopped")


def test_a_failing_device_effect_is_logged_and_the_rest_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    submitted: list[object] = []
    devices = DeviceEffects(submitted.append, clock=lambda: 5.0)
    devices.camera_reader = BrokenCamera()
    published: list[EffectBatch] = []
    handler = Effects(devices, published.append)
    result = {"winner": "banker", "player": ["4S", "9D"], "banker": ["2H", "KD"]}
    batch = EffectBatch(
        (
            AskCamera("banker", "misread", 1),
            PublishEvent("round_settled", {"round_id": 3, "result": result}),
        ),
        7,
        "ab" * 32,
        5.0,
    )
    with caplog.at_level(logging.ERROR):
        handler.carry_out(batch)
    assert "could not carry out AskCamera: the camera reader stopped" in caplog.text
    assert published == [batch]  # the publisher had the whole batch, once
    # The settlement after the failed question reached the shoe-result check.
    devices.result_check.shoe_reported("banker", False, False, "banker wins", 6.0)
    assert (devices.result_check.checked, devices.result_check.mismatches) == (1, 0)
    assert submitted == []
