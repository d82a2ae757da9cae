"""The runtime's timers, on a clock the test moves: a timer the machine still waits for
becomes a journaled ``TimerExpired``; one that a card, a decision or a pause made needless
costs the journal no row."""

from __future__ import annotations

from pathlib import Path

from controller.kernel.cards import parse_card
from controller.service.journal import Journal
from controller.service.journaled_table import JournaledTable
from controller.service.runtime import TableRuntime
from controller.table.config import TableConfig
from controller.table.effects import EffectBatch, Published, StartTimer, TellDealer
from controller.table.events import CardDrawn, RoundRequested, SupervisorCommanded, TimerExpired
from controller.table.state import Phase


class Recorder:
    """An effect handler that keeps what it is asked to do."""

    def __init__(self) -> None:
        self.published: list[Published] = []
        self.dealer: list[TellDealer] = []

    def carry_out(self, batch: EffectBatch) -> None:
        for effect in batch.effects:
            if isinstance(effect, Published):
                self.published.append(effect)
            elif isinstance(effect, TellDealer):
                self.dealer.append(effect)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _timer_rows(path: Path) -> list[int]:
    with Journal(path, read_only=True) as journal:
        return [
            event.timer_id
            for entry in journal.verified_entries()
            if isinstance(event := entry.event(), TimerExpired)
        ]


def test_only_timers_the_machine_awaits_are_journaled(tmp_path: Path) -> None:
    clock = Clock()
    config = TableConfig(
        table_id="t1",
        game="baccarat",
        betting_s=1.0,
        dealer_idle_s=5.0,
        journal_path=tmp_path / "t1.journal",
    )
    table, _ = JournaledTable.open(config, at=clock(), start=False)
    runtime = TableRuntime(table, Recorder(), clock=clock)
    for event in table.start_events(clock()):
        runtime.handle(event)
    started: list[tuple[int, str]] = []

    def handle(event: object) -> None:
        effects = runtime.handle(event)
        started.extend((e.timer_id, e.purpose) for e in effects if isinstance(e, StartTimer))

    handle(SupervisorCommanded("c1", "new_shoe", "sam", "supervisor", clock()))
    for burn in ("2S", "3D", "4D"):  # a 2 revealed: two cards burnt
        handle(CardDrawn(parse_card(burn), None, clock()))
    handle(RoundRequested("r1", "platform", clock()))
    clock.now += 1.5  # betting closes: that timer is awaited
    runtime.step(0)
    assert table.machine.state.phase is Phase.DEALING
    for card in ("9S", "TD", "KC"):  # each card restarts the dealer's deadline
        clock.now += 1.0
        handle(CardDrawn(parse_card(card), None, clock()))
    # Every dealer-idle timer but the last is needless now; the last one is awaited.
    clock.now += 10.0
    runtime.step(0)
    runtime.step(0)
    assert table.machine.state.phase is Phase.PAUSED
    assert table.machine.state.pause.reason.value == "dealer_idle"
    (betting,) = [timer_id for timer_id, purpose in started if purpose == "betting"]
    idle = [timer_id for timer_id, purpose in started if purpose == "dealer_idle"]
    rows = _timer_rows(config.journal_path)
    assert rows == [betting, idle[-1]], (started, rows)
    assert len(idle) >= 4  # the test proved something: needless timers were started
    table.journal.close()
