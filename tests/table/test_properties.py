"""Property tests: random event sequences, garbage and commands at the wrong time included.

The machine never raises, never puts a card where the rules do not ask for one, never
counts a ninth copy, changes nothing when it refuses, and replaying its journal yields the
identical state."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.games.base import CardNeeded, DecisionNeeded
from controller.games.registry import GAME_IDS
from controller.kernel.cards import ALL_FACES, DECKS_PER_SHOE
from controller.service.journal import Journal
from controller.service.journaled_table import JournaledTable, replay
from controller.table import games
from controller.table.config import TableConfig
from controller.table.effects import (
    CommandAnswered,
    Effect,
    EventRejected,
    PublishEvent,
    PublishState,
)
from controller.table.events import (
    CameraRead,
    CardDrawn,
    CardMisread,
    CardsLost,
    ControllerStarted,
    CutCardDrawn,
    PlatformDecided,
    RoundRequested,
    ShoeFault,
    ShoeLockChanged,
    ShoeOffline,
    ShoeOnline,
    SupervisorCommanded,
    TimerExpired,
)
from controller.table.machine import TableMachine
from controller.table.state import Phase

faces = st.sampled_from(ALL_FACES)
positions = st.sampled_from(["player", "banker", "dealer", "box1", "box2", "burn", "nowhere"])
tokens = st.sampled_from(["H", "S", "D", "P", "R", "Y", "N", "h", "", "XX"])
kinds = st.sampled_from(["play", "insurance", "even_money", "more_cards", "bogus"])
commands = st.sampled_from(["pause", "resume", "cancel", "end_shoe", "new_shoe", "reboot"])
roles = st.sampled_from(["supervisor"] * 4 + ["dealer", "viewer"])
resolutions = st.sampled_from(["", "", "accept", "burn", "enter_card", "shred"])
garbage = st.sampled_from([None, "CardDrawn", 42, object()])


def random_event(draw, machine: TableMachine, at: float) -> object:
    state = machine.state
    choice = draw(st.integers(0, 99))
    if choice < 30:  # the dealer draws
        return CardDrawn(draw(faces), None, at)
    if choice < 42:  # the current timer, or any id
        live = sorted(state.timers)
        if live and draw(st.booleans()):
            return TimerExpired(draw(st.sampled_from(live)), at)
        return TimerExpired(draw(st.integers(0, 60)), at)
    if choice < 55:  # the platform decides, legally when it can
        step = state.round.next_step() if state.round is not None else None
        if isinstance(step, DecisionNeeded) and draw(st.booleans()):
            token = draw(st.sampled_from(sorted(step.options)))
            return PlatformDecided(state.round_id or 0, step.kind, step.box, step.hand, token, at)
        return PlatformDecided(
            draw(st.integers(0, 5)),
            draw(kinds),
            draw(st.integers(-1, 3)),
            draw(st.integers(0, 3)),
            draw(tokens),
            at,
        )
    if choice < 68:
        card = draw(st.none() | faces)
        return SupervisorCommanded(
            str(choice),
            draw(commands),
            "sam",
            draw(roles),
            at,
            draw(st.sampled_from(["", "x"])),
            draw(resolutions),
            card,
        )
    if choice < 76:
        return RoundRequested("r", "platform", at, draw(st.integers(0, 8)))
    if choice < 80:
        return CardMisread(None, at)
    if choice < 83:
        return CutCardDrawn(None, at)
    if choice < 87:
        return CameraRead(draw(positions), draw(st.none() | faces), at)
    if choice < 96:
        return draw(
            st.sampled_from(
                [
                    ShoeOffline("p", "gone", at),
                    ShoeOnline("p", at),
                    ShoeFault("E1", "jam", at),
                    CardsLost((1,), at),
                    ShoeLockChanged(True, at),
                    ControllerStarted(at),
                ]
            )
        )
    return draw(garbage)


def helpful_event(draw, machine: TableMachine, at: float) -> object:
    """What a well-behaved table would do next, so that the random walk reaches rounds,
    decisions and results, not only pauses."""
    state = machine.state
    phase = state.phase
    if phase is Phase.AWAITING_SHUFFLE:
        return SupervisorCommanded("h", "new_shoe", "sam", "supervisor", at)
    if phase is Phase.PAUSED:
        pause = state.pause
        if pause.unread is not None:
            return SupervisorCommanded(
                "h", "resume", "sam", "supervisor", at, "", "enter_card", draw(faces)
            )
        resolution = "burn" if pause.held else ""
        return SupervisorCommanded("h", "resume", "sam", "supervisor", at, "", resolution)
    if phase is Phase.SHOE_READY:
        return RoundRequested("h", "platform", at, draw(st.integers(0, 3)))
    if phase is Phase.READING:
        return CameraRead(state.reading, draw(st.none() | faces), at)
    if phase is Phase.DECIDING and draw(st.booleans()):
        step = state.round.next_step()
        token = draw(st.sampled_from(sorted(step.options)))
        return PlatformDecided(state.round_id, step.kind, step.box, step.hand, token, at)
    if phase in (Phase.BETTING, Phase.DECIDING):
        (timer_id,) = state.timers
        return TimerExpired(timer_id, at)
    card = draw(faces)
    return CardDrawn(card, None, at)


PUBLISHED = (PublishState, PublishEvent, CommandAnswered, EventRejected)
CARD_TOKEN = re.compile(r"\b[A2-9TJQK][SHDC]\b")


def faces_in_play(machine: TableMachine) -> tuple[set[str], set[str]]:
    """(public, secret) faces: burn cards and an unrevealed hole card are secret; the
    round's face-up (or revealed) cards are public."""
    state = machine.state
    public, secret = set(), {str(card) for card in state.burn_cards if card is not None}
    revealed = bool(getattr(state.round, "hole_revealed", False))
    for entry in state.round_log:
        if entry[0] == "card":
            (secret if entry[3] and not revealed else public).add(str(entry[2]))
    return public, secret


def check_no_secret_is_published(
    machine: TableMachine, public_before: set[str], effects: list[Effect]
) -> None:
    """A secret face may appear in no published effect, unless another copy of that face is
    public anyway (dealt face up in this round, before or by this very event)."""
    public, secret = faces_in_play(machine)
    for effect in effects:
        if not isinstance(effect, PublishEvent):
            continue
        if effect.name == "card_dealt" and not effect.payload["face_down"]:
            public.add(effect.payload["card"])
        elif effect.name == "round_settled":
            # The result shows every card of the round, the hole card included (a peek
            # that finds a dealer BJ ends the round without turning the card over first).
            public |= set(CARD_TOKEN.findall(json.dumps(effect.payload["result"])))
    secrets = secret - public - public_before
    if not secrets:
        return
    pattern = re.compile(r"\b(" + "|".join(sorted(secrets)) + r")\b")
    for effect in effects:
        if isinstance(effect, PUBLISHED):
            text = json.dumps(effect.to_dict())
            assert not pattern.search(text), (sorted(secrets), text)


def check_round_is_what_the_rules_asked(machine: TableMachine) -> None:
    """Rebuild the round from the table's log with a fresh rules object: every card went to
    the position the rules asked for at that moment, every decision was legal."""
    state = machine.state
    if state.round is None:
        return
    fresh = games.new_round(machine.config.game, state.round_number, state.boxes)
    for entry in state.round_log:
        step = fresh.next_step()
        if entry[0] == "card":
            assert isinstance(step, CardNeeded) and step.position == entry[1], (entry, step)
            fresh.deal(entry[2])
        else:
            assert isinstance(step, DecisionNeeded) and (step.box, step.hand) == entry[1:3]
            assert entry[3] in step.options
            fresh.decide(entry[1], entry[2], entry[3])
    assert dict(fresh.public_view()) == dict(state.round.public_view())


@pytest.mark.parametrize("game", GAME_IDS)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_random_events_never_break_the_table(game: str, data: st.DataObject) -> None:
    config = TableConfig(table_id="p", game=game, journal_path=Path(":memory:"))
    journal = Journal(Path(":memory:"))
    table = JournaledTable(config, journal, TableMachine(config))
    machine = table.machine
    try:
        for step in range(data.draw(st.integers(1, 120), label="length")):
            if data.draw(st.integers(0, 3), label="helpful?"):
                event = helpful_event(data.draw, machine, 1_000.0 + step)
            else:
                event = random_event(data.draw, machine, 1_000.0 + step)
            before = machine.snapshot()
            public_before, _ = faces_in_play(machine)
            phase_before = machine.state.phase
            effects = table.handle(event)
            for effect in effects:
                json.dumps(effect.to_dict())
            refused = [
                e
                for e in effects
                if isinstance(e, EventRejected) or (isinstance(e, CommandAnswered) and not e.ok)
            ]
            assert not [e for e in refused if "internal error" in str(e)], refused
            if refused:
                assert machine.snapshot() == before, (event, refused)
            check_no_secret_is_published(machine, public_before, effects)
            if phase_before is Phase.PAUSED and isinstance(event, CardDrawn | CardMisread):
                assert machine.snapshot()["round_log"] == before["round_log"]
            check_round_is_what_the_rules_asked(machine)
            hypothesis.event(machine.state.phase.name)
            if any(getattr(e, "name", "") == "round_settled" for e in effects):
                hypothesis.event("settled")
            if machine.state.count is not None:
                assert max(machine.state.count.seen.values(), default=0) <= DECKS_PER_SHOE
        assert replay(journal, config).snapshot() == machine.snapshot()
    finally:
        table.close()


def test_the_machine_itself_refuses_what_is_not_an_event() -> None:
    machine = TableMachine(TableConfig(game="baccarat"))
    before = machine.snapshot()
    for thing in (None, "CardDrawn", 42, object(), {"card": "AS"}):
        (effect,) = machine.handle(thing)
        assert isinstance(effect, EventRejected)
    assert machine.snapshot() == before


@pytest.mark.parametrize(
    "event",
    [
        CardDrawn("AS", None, 1.0),  # type: ignore[arg-type]  # a card as text, not a Card
        CardDrawn(ALL_FACES[0], None, math.nan),
        CardDrawn(ALL_FACES[0], None, math.inf),
        CardDrawn(ALL_FACES[0], None, None),  # type: ignore[arg-type]
        CardsLost(None, 1.0),  # type: ignore[arg-type]
        CardsLost(5, 1.0),  # type: ignore[arg-type]
        TimerExpired("1", 1.0),  # type: ignore[arg-type]
    ],
)
def test_the_machine_itself_refuses_events_with_fields_of_the_wrong_type(event: object) -> None:
    # Fed directly, not through the journal's check: the machine keeps its own promise.
    for game in GAME_IDS:
        machine = TableMachine(TableConfig(game=game))
        machine.handle(SupervisorCommanded("c1", "new_shoe", "sam", "supervisor", 0.5))
        before = machine.snapshot()
        effects = machine.handle(event)
        assert [type(e) for e in effects] == [EventRejected]
        assert machine.snapshot() == before
