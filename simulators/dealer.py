"""A simulated dealer: does what the table's display says, at a human pace, with a real shoe.

The dealer reads the table's ``TellDealer`` lines and draws from a :class:`ShoeSimulator`
(which sends each card over its pty to the shoe driver, like a real scanner): one card for
``reveal`` and ``deal``, ``count`` cards for ``burn``; on ``shuffle`` it shuffles a new shoe
and tells whoever declares new shoes. It works on its own thread so the table's thread never
waits for it. When the cut card comes out instead of a card, the dealer sets it aside and
draws the card that was asked for, as a real dealer does.

With a *felt* (the camera simulator, :class:`simulators.camera.SimulatedCamera`), the dealer
also lays every round card it draws on its spot, as the camera sees it: the hand's next card
slot (:func:`drivers.camera.card_slot`), face down when the display says so. Watching what the
table publishes (:meth:`DealerSimulator.observe`), it splits a box's cards when a split is
decided, turns the hole card over when the rules reveal it (or when the display asks it to,
for the camera) and collects the cards when the round ends.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import re
import threading
from collections.abc import Callable
from typing import Any, Protocol

from controller.kernel.cards import Card, parse_card
from controller.kernel.errors import DeviceError, TableError
from controller.kernel.presentation import shoe_target
from controller.table.effects import PublishEvent, PublishState, TellDealer
from drivers.camera import card_slot
from simulators.shoe.simulator import Emitted, ShoeSimulator

logger = logging.getLogger(__name__)

# How the table's display marks the hole card: "next card to dealer, face down".
FACE_DOWN: str = "face down"


class Felt(Protocol):
    """Where the dealer lays the cards: what the camera simulator offers."""

    def deal(self, position: str, card: Card, face_down: bool = False) -> None: ...

    def move(self, source: str, target: str) -> None: ...

    def reveal(self, position: str, card: Card) -> None: ...

    def clear(self) -> None: ...


def _hand_of(slot: str) -> str:
    return slot.rsplit(".card", 1)[0]


class DealerSimulator:
    """Draws cards when told to; ``pace_s`` is the pause before each card.

    ``misread_rate``: the share of round cards the shoe fails to read (its
    ``unreadable_rate`` while dealing a round; burn cards are always read, since a misread
    revealed burn card needs a supervisor to type it in). ``felt``: lay the round's cards
    on it (see the module's doc).
    """

    def __init__(
        self,
        shoe: ShoeSimulator,
        *,
        pace_s: float = 0.3,
        on_shuffled: Callable[[], None] | None = None,
        felt: Felt | None = None,
        misread_rate: float = 0.0,
    ) -> None:
        self.shoe = shoe
        self.pace_s = pace_s
        self.on_shuffled = on_shuffled
        self.felt = felt
        self._base_faults = shoe.faults
        self._round_faults = (
            dataclasses.replace(shoe.faults, unreadable_rate=misread_rate)
            if misread_rate
            else shoe.faults
        )
        self._instructions: queue.Queue[TellDealer | tuple[Any, ...] | None] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.cards_drawn = 0
        # What lies on the felt, by slot: (card, face down). Only the dealer's thread uses it.
        self.on_felt: dict[str, tuple[Card, bool]] = {}

    def tell(self, instruction: TellDealer) -> None:
        """What the table's display shows; called from the table's thread."""
        self._instructions.put(instruction)

    def observe(self, effect: object) -> None:
        """What the table publishes (called from the table's thread): the dealer splits,
        turns over and collects cards on the felt in the same order as it draws."""
        if isinstance(effect, PublishEvent):
            if effect.name == "decision_taken" and effect.payload.get("decision") == "P":
                self._instructions.put(("split", effect.payload["box"], effect.payload["hand"]))
            elif effect.name in ("round_settled", "round_voided"):
                self._instructions.put(("collect",))
        elif isinstance(effect, PublishState):
            live = effect.state.get("round") or {}
            dealer = live.get("dealer") if isinstance(live, dict) else None
            cards = dealer.get("cards") if isinstance(dealer, dict) else None
            if cards and None not in cards:
                # The rules show every dealer card: once the dealer has drawn that many (the
                # state may be published before a card it asks for), none is face down.
                self._instructions.put(("turn_over", len(cards)))

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

    def _draw_card(self, position: str | None, round_card: bool = False) -> Card | None:
        """Draw one card (setting the cut card aside); the card, or None if stopped."""
        emitted = self._draw(position, round_card)
        return parse_card(emitted.card) if emitted is not None and emitted.card else None

    def _draw(self, position: str | None, round_card: bool = False) -> Emitted | None:
        """Draw one card (setting the cut card aside): what the shoe emitted for it (its
        face even when the shoe misread it), or None if stopped."""
        if self._stop.wait(self.pace_s):
            return None
        self.shoe.faults = self._round_faults if round_card else self._base_faults
        try:
            emitted = self.shoe.draw(shoe_target(position))
            if emitted.event == "cut_card":
                emitted = self.shoe.draw(shoe_target(position))
        finally:
            self.shoe.faults = self._base_faults
        self.cards_drawn += 1
        return emitted

    # The same work, synchronously, for a caller with a thread of its own (the dealer that
    # reads the table's state over MQTT, :class:`simulators.mqtt_bots.TableBots`).

    def deal(self, position: str, face_down: bool = False) -> Emitted | None:
        """Draw a round card for ``position`` and lay it on the felt; what the shoe sent."""
        emitted = self._draw(position, round_card=True)
        if emitted is not None and emitted.card:
            self._lay(position, parse_card(emitted.card), face_down)
        return emitted

    def reveal_first(self) -> None:
        """Draw the shoe's first card and show it (it is burnt)."""
        self._draw(None)

    def burn(self, count: int = 1) -> None:
        for _ in range(count):
            self._draw("burn")

    def draw_out_of_turn(self) -> Emitted | None:
        """A dealer's mistake: a card drawn when none was asked for (it stays off the felt)."""
        return self._draw(None)

    def turn_over(self) -> bool:
        """Turn every face-down card on the felt over; whether there was one."""
        return self._turn_over()

    def dealer_cards_shown(self, count: int) -> None:
        """The rules show ``count`` dealer cards: none of them is face down any more."""
        self._on_felt_work(("turn_over", count))

    def split(self, box: int, hand: int) -> None:
        self._split(box, hand)

    def collect(self) -> None:
        self._on_felt_work(("collect",))

    def shuffle(self) -> None:
        self.shoe.new_shoe()

    def _work(self) -> None:
        while not self._stop.is_set():
            instruction = self._instructions.get()
            if instruction is None:
                return
            try:
                if isinstance(instruction, tuple):
                    self._on_felt_work(instruction)
                elif instruction.action == "deal":
                    card = self._draw_card(instruction.position, round_card=True)
                    if card is not None and instruction.position:
                        face_down = instruction.message.endswith(FACE_DOWN)
                        self._lay(instruction.position, card, face_down)
                elif instruction.action == "reveal":
                    # A face-down card lying here is the hole card the camera must see; with
                    # none, this is the shoe's first card, drawn and shown, then burnt.
                    if not self._turn_over():
                        self._draw_card(None)
                elif instruction.action == "burn":
                    for _ in range(instruction.count or 0):
                        self._draw_card("burn")
                elif instruction.action == "shuffle":
                    self.shoe.new_shoe()
                    if self.on_shuffled is not None:
                        self.on_shuffled()
            except DeviceError as error:
                logger.warning("the dealer could not draw: %s", error)

    # The felt.

    def _lay(self, position: str, card: Card, face_down: bool) -> None:
        hand = _hand_of(card_slot(position, 1))
        held = sum(1 for slot in self.on_felt if _hand_of(slot) == hand)
        slot = card_slot(position, held + 1)
        self.on_felt[slot] = (card, face_down)
        if self.felt is not None:
            try:
                self.felt.deal(slot, card, face_down)
            except TableError as error:  # a hand longer than the felt's layout has spots
                logger.warning("no room on the felt for %s: %s", slot, error)

    def _turn_over(self) -> bool:
        turned = False
        for slot, (card, face_down) in list(self.on_felt.items()):
            if face_down:
                self.on_felt[slot] = (card, False)
                turned = True
                if self.felt is not None:
                    self.felt.reveal(slot, card)
        return turned

    def _on_felt_work(self, work: tuple[Any, ...]) -> None:
        if work[0] == "collect":
            self.on_felt.clear()
            if self.felt is not None:
                self.felt.clear()
        elif work[0] == "turn_over":
            if sum(1 for slot in self.on_felt if slot.startswith("dealer.")) == work[1]:
                self._turn_over()
        elif work[0] == "split":
            self._split(int(work[1]), int(work[2]))

    def _split(self, box: int, hand: int) -> None:
        """Box ``box``'s hand ``hand`` splits: its second card starts a new hand right
        after it, and the hands after it move one place on (as the rules number them)."""
        pattern = re.compile(rf"box{box}\.hand(\d+)\.card(\d+)")
        later = sorted(
            (
                (int(match[1]), int(match[2]), slot)
                for slot in self.on_felt
                if (match := pattern.fullmatch(slot)) and int(match[1]) > hand
            ),
            reverse=True,
        )
        moves = [(slot, f"box{box}.hand{h + 1}.card{c}") for h, c, slot in later]
        moves.append((f"box{box}.hand{hand}.card2", f"box{box}.hand{hand + 1}.card1"))
        for source, target in moves:
            if source not in self.on_felt:
                continue
            self.on_felt[target] = self.on_felt.pop(source)
            if self.felt is not None:
                try:
                    self.felt.move(source, target)
                except TableError as error:
                    logger.warning("cannot move %s to %s on the felt: %s", source, target, error)
