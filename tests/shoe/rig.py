"""A shoe simulator on a real pty with the real driver reading it, for contract tests."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from drivers.shoe.driver import ShoeConfig, ShoeDriver
from drivers.shoe.events import ShoeEvent, ShoeOnline
from simulators.shoe import FaultPlan, ShoeSimulator

# Generous: the machine is shared; nothing here measures speed.
EVENT_TIMEOUT_S = 10.0


@dataclass
class Rig:
    simulator: ShoeSimulator
    driver: ShoeDriver
    queue: queue.Queue[ShoeEvent]
    seen: list[ShoeEvent] = field(default_factory=list)

    def next_event(self, timeout: float = EVENT_TIMEOUT_S) -> ShoeEvent:
        event = self.queue.get(timeout=timeout)
        self.seen.append(event)
        return event

    def wait_for(
        self, predicate: Callable[[ShoeEvent], bool], timeout: float = EVENT_TIMEOUT_S
    ) -> ShoeEvent:
        """Collect events until one matches; fail the test if none does in time."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"no matching event in {timeout} s; saw {self.seen[-10:]}; the shoe sent "
                    f"{self.simulator.truth[-5:]}, plugged={self.simulator.plugged}"
                )
            try:
                event = self.next_event(left)
            except queue.Empty:
                continue
            if predicate(event):
                return event

    def wait_online(self) -> ShoeEvent:
        return self.wait_for(lambda event: isinstance(event, ShoeOnline))

    def drain(self, quiet_s: float = 0.3) -> list[ShoeEvent]:
        """Everything that arrives until the queue has been quiet for ``quiet_s``."""
        events = []
        while True:
            try:
                events.append(self.next_event(quiet_s))
            except queue.Empty:
                return events


@contextmanager
def shoe_rig(
    tmp_path: Path,
    protocol: str,
    faults: FaultPlan | None = None,
    seed: int = 7,
    decks: int = 8,
    cut_card_depth: int = 14,
    wait_online: bool = True,
    bcc_includes_stx: bool | None = None,
    **config: object,
) -> Iterator[Rig]:
    link = tmp_path / f"shoe-{protocol}"
    events: queue.Queue[ShoeEvent] = queue.Queue()
    simulator = ShoeSimulator(
        protocol,
        link,
        seed=seed,
        decks=decks,
        cut_card_depth=cut_card_depth,
        faults=faults,
        truth_path=tmp_path / f"truth-{protocol}.jsonl",
        bcc_includes_stx=bcc_includes_stx,
    )
    settings: dict[str, object] = {"reconnect_initial_s": 0.05, "reconnect_max_s": 0.4}
    settings.update(config)
    driver = ShoeDriver(ShoeConfig(str(link), protocol, **settings), events)  # type: ignore[arg-type]
    with simulator, driver:
        rig = Rig(simulator, driver, events)
        if wait_online:
            rig.wait_online()
        yield rig
