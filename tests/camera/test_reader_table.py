"""End to end: a table round in which the shoe misreads a card and the camera supplies it,
through the runtime (one queue, the reader on its own thread), with a real journal, the
camera simulator's pixels, a real enrolled deck and the real recogniser."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.kernel.cards import Card, parse_card
from controller.service.journal import Journal
from controller.service.journaled_table import JournaledTable, export_round
from controller.service.runtime import TableRuntime
from controller.table.config import TableConfig
from controller.table.effects import AskCamera, EffectBatch, Published, PublishEvent, TellDealer
from controller.table.events import (
    CardDrawn,
    CardMisread,
    RoundRequested,
    SupervisorCommanded,
)
from drivers.camera_reader import CameraReader, ReaderConfig
from simulators.camera import SimulatedCamera
from tests.camera.test_reader import DESIGN, enrolled_deck_file
from tests.support.wait import wait_until


@pytest.fixture(scope="module")
def deck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_deck_file(tmp_path_factory)


class Recorder:
    """The runtime's effect handler: keeps what is published, sends questions to the
    camera reader."""

    def __init__(self) -> None:
        self.published: list[Published] = []
        self.dealer: list[TellDealer] = []
        self.reader: CameraReader | None = None

    def carry_out(self, batch: EffectBatch) -> None:
        for effect in batch.effects:
            if isinstance(effect, Published):
                self.published.append(effect)
            elif isinstance(effect, TellDealer):
                self.dealer.append(effect)
            elif isinstance(effect, AskCamera):
                assert self.reader is not None
                self.reader.ask(effect)
            # no shoe to lock: the test deals the cards itself

    def events(self, name: str) -> list[dict]:
        return [e.payload for e in self.published if isinstance(e, PublishEvent) and e.name == name]


def run_until(
    runtime: TableRuntime, done: Callable[[], object], what: str, timeout_s: float = 30.0
) -> None:
    """Run the runtime's loop on this thread, a step at a time, until ``done()``."""

    def stepped() -> object:
        if done():
            return True
        runtime.step(0.05)
        return done()

    wait_until(stepped, timeout_s, what)


def test_a_misread_card_is_read_by_the_camera_and_journaled(tmp_path: Path, deck: Path) -> None:
    config = TableConfig(
        table_id="t1",
        game="baccarat",
        betting_s=0.05,
        dealer_idle_s=30.0,  # also the camera's deadline in the table: speed is not tested
        journal_path=tmp_path / "table.journal",
    )
    table, _ = JournaledTable.open(config, at=time.time(), start=False)
    recorder = Recorder()
    runtime = TableRuntime(table, recorder)
    felt = SimulatedCamera("baccarat", DESIGN, seed=3, clock=time.time)
    reader = CameraReader(
        felt, runtime.submit, config=ReaderConfig(deck=deck, frames=3, deadline_s=3.0)
    )
    recorder.reader = reader
    now = time.time

    def draw(card: str, slot: str | None) -> Card:
        face = parse_card(card)
        if slot is not None:
            felt.deal(slot, face)
        runtime.submit(CardDrawn(face, None, now()))
        return face

    try:
        with reader:
            for event in table.start_events(now()):
                runtime.handle(event)
            runtime.submit(SupervisorCommanded("c1", "new_shoe", "sam", "supervisor", now()))
            for burn in ("2S", "3D", "4D"):  # a 2 revealed: two cards burnt
                draw(burn, None)
            runtime.submit(RoundRequested("r1", "platform", now()))
            run_until(
                runtime,
                lambda: recorder.dealer and recorder.dealer[-1].action == "deal",
                "the dealer told to deal the round's first card",
            )
            draw("9S", "player.card1")
            # The banker's first card leaves the shoe unread; the dealer lays it on its spot.
            misread = parse_card("7C")
            felt.deal("banker.card1", misread)
            runtime.submit(CardMisread(None, now()))
            run_until(
                runtime,
                lambda: len(recorder.events("card_dealt")) == 2,
                "the camera's reading of the misread card dealt",
            )
            draw("KC", "player.card2")  # player 9: a natural, no third card
            draw("5H", "banker.card2")
            run_until(runtime, lambda: recorder.events("round_settled"), "the round settled")
    finally:
        table.close()
    camera_card = recorder.events("card_dealt")[1]
    assert camera_card == {
        "round_id": 1,
        "position": "banker",
        "face_down": False,
        "source": "camera",
        "card": str(misread),
    }
    result = recorder.events("round_settled")[0]["result"]
    assert result["banker"] == ["7C", "5H"] and result["player"] == ["9S", "KC"]
    # The journal holds the camera's answer as an event, and the question (with the card's
    # slot) among the effects it replays to; the journal verifies and replays.
    with Journal(config.journal_path, read_only=True) as journal:
        assert journal.verify() > 0
        lines = export_round(journal, config, 1)
    camera_events = [line for line in lines if line["kind"] == "CameraRead"]
    assert [line["event"]["card"] for line in camera_events] == ["7C"]
    asked = [e for line in lines for e in line["effects"] if e["effect"] == "AskCamera"]
    assert asked == [
        {"effect": "AskCamera", "position": "banker", "reason": "misread", "card_number": 1}
    ]
    reopened, _ = JournaledTable.open(config, at=time.time())
    try:
        assert reopened.machine.snapshot()["round_number"] == 1
        assert reopened.machine.snapshot()["seen"]["7C"] == 1
    finally:
        reopened.close()
