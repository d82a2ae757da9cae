"""A test driver for the table's state machine: events in, effects recorded, no threads.

It plays the daemon's part the simple way: time is a counter it advances by hand, and a
timer "expires" when a test says so, by the id of the last ``StartTimer`` of that purpose.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.kernel.cards import Card, parse_card
from controller.service.journaled_table import JournaledTable
from controller.table.config import TableConfig
from controller.table.effects import (
    CommandAnswered,
    Effect,
    EventRejected,
    PublishEvent,
    PublishState,
    StartTimer,
    TellDealer,
)
from controller.table.events import (
    CameraRead,
    CardDrawn,
    CardMisread,
    CutCardDrawn,
    DealerSignedIn,
    PlatformDecided,
    RoundRequested,
    SupervisorCommanded,
    TimerExpired,
)
from controller.table.machine import TableMachine
from controller.table.state import Phase

SUPERVISOR = ("sam", "supervisor")


def config_for(game: str, tmp: Path | None = None, **overrides: Any) -> TableConfig:
    values: dict[str, Any] = {"table_id": "t1", "game": game}
    if tmp is not None:
        values["journal_path"] = tmp / "table.journal"
    values.update(overrides)
    return TableConfig(**values)


def published(effects: list[Effect]) -> list[Effect]:
    """The effects that leave the table for the platform or the public."""
    return [effect for effect in effects if isinstance(effect, PublishState | PublishEvent)]


def card_faces_in(effect: Effect) -> str:
    """The effect as JSON text, to scan for card notations."""
    return json.dumps(effect.to_dict())


@dataclass
class Driver:
    """Feeds a machine (or anything with ``handle``) and keeps every event and effect."""

    target: Any
    now: float = 1_000.0
    events: list[object] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    last: list[Effect] = field(default_factory=list)
    commands: int = 0

    @classmethod
    def for_game(cls, game: str, **overrides: Any) -> Driver:
        return cls(TableMachine(config_for(game, **overrides)))

    @property
    def machine(self) -> TableMachine:
        return getattr(self.target, "machine", self.target)

    @property
    def phase(self) -> Phase:
        return self.machine.state.phase

    def tick(self, seconds: float = 0.5) -> float:
        self.now += seconds
        return self.now

    def send(self, event: object) -> list[Effect]:
        self.events.append(event)
        self.last = self.target.handle(event)
        self.effects.extend(self.last)
        return self.last

    # events

    def draw(self, *cards: Card | str) -> list[Effect]:
        out: list[Effect] = []
        for card in cards:
            face = card if isinstance(card, Card) else parse_card(card)
            out += self.send(CardDrawn(face, None, self.tick()))
        return out

    def misread(self) -> list[Effect]:
        return self.send(CardMisread(None, self.tick()))

    def cut_card(self) -> list[Effect]:
        return self.send(CutCardDrawn(None, self.tick()))

    def camera(
        self, position: str, card: str | None, card_number: int | None = None
    ) -> list[Effect]:
        face = None if card is None else parse_card(card)
        return self.send(CameraRead(position, face, self.tick(), card_number))

    def command(
        self,
        command: str,
        who: tuple[str, str] = SUPERVISOR,
        reason: str = "",
        resolution: str = "",
        card: str | None = None,
    ) -> CommandAnswered:
        self.commands += 1
        face = None if card is None else parse_card(card)
        effects = self.send(
            SupervisorCommanded(
                f"c{self.commands}", command, who[0], who[1], self.tick(), reason, resolution, face
            )
        )
        return self.answer(effects)

    @staticmethod
    def answer(effects: list[Effect]) -> CommandAnswered:
        answers = [effect for effect in effects if isinstance(effect, CommandAnswered)]
        assert len(answers) == 1, effects
        return answers[0]

    def request_round(self, boxes: int = 0) -> CommandAnswered:
        self.commands += 1
        return self.answer(
            self.send(RoundRequested(f"r{self.commands}", "platform", self.tick(), boxes))
        )

    def timer_id(self, purpose: str) -> int:
        for effect in reversed(self.effects):
            if isinstance(effect, StartTimer) and effect.purpose == purpose:
                return effect.timer_id
        raise AssertionError(f"no {purpose} timer was started")

    def expire(self, purpose: str) -> list[Effect]:
        return self.send(TimerExpired(self.timer_id(purpose), self.tick(30)))

    def decide(self, kind: str, box: int, hand: int, decision: str) -> list[Effect]:
        round_id = self.machine.state.round_id
        assert round_id is not None
        return self.send(PlatformDecided(round_id, kind, box, hand, decision, self.tick()))

    # composite steps

    def new_shoe(self, reveal: str = "2S", burn: tuple[str, ...] = ("3D", "4D")) -> None:
        answer = self.command("new_shoe")
        assert answer.ok, answer
        self.draw(reveal, *burn)
        assert self.phase is Phase.SHOE_READY, self.phase

    def open_and_close_betting(self, boxes: int = 0) -> None:
        answer = self.request_round(boxes)
        assert answer.ok, answer
        self.expire("betting")

    # what happened

    def published_events(self, name: str) -> list[dict[str, Any]]:
        return [
            effect.payload
            for effect in self.effects
            if isinstance(effect, PublishEvent) and effect.name == name
        ]

    def rejections(self) -> list[EventRejected]:
        return [effect for effect in self.last if isinstance(effect, EventRejected)]

    def dealer_lines(self) -> list[TellDealer]:
        return [effect for effect in self.last if isinstance(effect, TellDealer)]

    def expected_position(self) -> str | None:
        for effect in reversed(self.effects):
            if isinstance(effect, TellDealer) and effect.action == "deal":
                return effect.position
        return None


def table_for(game: str, **overrides: Any) -> Driver:
    """A ``game`` table whose shoe is shuffled and burnt, awaiting its first round.

    Blackjack decisions are timed at 8 s unless ``overrides`` say otherwise, so a test can
    compute the deadlines it expects to see published.
    """
    driver = Driver.for_game(game, **{"decision_s": 8.0, **overrides})
    driver.new_shoe()
    return driver


def play_rounds(driver: Driver, rounds: int = 3) -> None:
    """From a table awaiting its first shoe: a shoe (reveal 2S, burn 3D 4D); round 1
    settled (player 9S KC, banker TD 3H); round 2 paused by the supervisor after one card
    (8S to the player) and cancelled; then ``rounds - 2`` more settled rounds (player 8S KD,
    banker TC 3D)."""
    assert rounds >= 1, rounds
    driver.new_shoe()
    driver.open_and_close_betting()
    driver.draw("9S", "TD", "KC", "3H")
    if rounds < 2:
        return
    driver.open_and_close_betting()
    driver.draw("8S")
    assert driver.command("pause", reason="a dispute at the table").ok
    assert driver.command("cancel", reason="dealer error").ok
    for _ in range(rounds - 2):
        driver.open_and_close_betting()
        driver.draw("8S", "TC", "KD", "3D")


def write_journal(path: Path, rounds: int = 3) -> None:
    """The journal, at ``path``, of a baccarat table (``t1``) that played
    :func:`play_rounds` and stopped."""
    table, _ = JournaledTable.open(config_for("baccarat", path.parent), at=1.0, path=path)
    try:
        play_rounds(Driver(table), rounds)
    finally:
        table.close()


def shuffled_shoe(seed: int) -> list[Card]:
    """An 8-deck shoe in a random but reproducible order."""
    import random

    from controller.kernel.cards import ALL_FACES, DECKS_PER_SHOE

    cards = [card for card in ALL_FACES for _ in range(DECKS_PER_SHOE)]
    random.Random(seed).shuffle(cards)
    return cards


def deal_until_settled(driver: Driver, cards: list[Card], decide: str | None = None) -> None:
    """Deal from ``cards`` (consumed from the front) until the round leaves DEALING/DECIDING;
    decisions time out (the auto-play rule) unless ``decide`` names a token to send."""
    while driver.phase in (Phase.DEALING, Phase.DECIDING):
        if driver.phase is Phase.DEALING:
            driver.draw(cards.pop(0))
        elif decide is None:
            driver.expire("decision")
        else:
            step = driver.machine.state.round.next_step()
            token = decide if decide in step.options else step.default
            driver.decide(step.kind, step.box, step.hand, token)


def sign_in(
    driver: Driver, staff_id: str, by: str = "dealer7", role: str = "dealer"
) -> CommandAnswered:
    """``staff_id`` signs in at the table (from the dealer's own account unless ``role``
    says otherwise); the table's answer."""
    driver.commands += 1
    return driver.answer(
        driver.send(DealerSignedIn(f"i{driver.commands}", staff_id, by, role, driver.tick()))
    )
