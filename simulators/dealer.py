"""A simulated dealer: does what the table's display says, at a human pace, with a real shoe.

The dealer reads the table's ``TellDealer`` lines and draws from a :class:`ShoeSimulator`
(which sends each card over its pty to the shoe driver, like a real scanner): one card for
``reveal`` and ``deal``, ``count`` cards for ``burn``; on ``shuffle`` it shuffles a new shoe
and tells whoever declares new shoes. It works on its own thread so the table's thread never
waits for it. When the cut card comes out instead of a card, the dealer sets it aside and
draws the card that was asked for, as a real dealer does.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from controller.errors import DeviceError
from controller.table.effects import TellDealer
from simulators.shoe.simulator import ShoeSimulator

logger = logging.getLogger(__name__)


def shoe_target(position: str | None) -> str:
    """The Angel Eye target code for a table position (the others go as 'player')."""
    return "banker" if position and position.startswith("banker") else "player"


class DealerSimulator:
    """Draws cards when told to; ``pace_s`` is the pause before each card."""

    def __init__(
        self,
        shoe: ShoeSimulator,
        *,
        pace_s: float = 0.3,
        on_shuffled: Callable[[], None] | None = None,
    ) -> None:
        self.shoe = shoe
        self.pace_s = pace_s
        self.on_shuffled = on_shuffled
        self._instructions: queue.Queue[TellDealer | None] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.cards_drawn = 0

    def tell(self, instruction: TellDealer) -> None:
        """What the table's display shows; called from the table's thread."""
        self._instructions.put(instruction)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._work, name="dealer-simulator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._instructions.put(None)
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None

    def __enter__(self) -> DealerSimulator:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _draw_card(self, position: str | None) -> None:
        if self._stop.wait(self.pace_s):
            return
        emitted = self.shoe.draw(shoe_target(position))
        if emitted.event == "cut_card":
            emitted = self.shoe.draw(shoe_target(position))
        self.cards_drawn += 1

    def _work(self) -> None:
        while not self._stop.is_set():
            instruction = self._instructions.get()
            if instruction is None:
                return
            try:
                if instruction.action in ("reveal", "deal"):
                    self._draw_card(instruction.position)
                elif instruction.action == "burn":
                    for _ in range(instruction.count or 0):
                        self._draw_card("burn")
                elif instruction.action == "shuffle":
                    self.shoe.new_shoe()
                    if self.on_shuffled is not None:
                        self.on_shuffled()
            except DeviceError as error:
                logger.warning("the dealer could not draw: %s", error)
