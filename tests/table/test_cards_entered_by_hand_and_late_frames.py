"""Review of machine revision 3: a card entered by hand at a dealer-idle pause, the gap it
leaves in the shoe's numbering, its late frame, two resolutions taken one after the other,
and the runtime no longer journaling timers the machine does not await.

The tests pin what revision 3 gets right, the last five the bugs the review found (each
failed before its fix: a hole card's face in the late-frame pause's message, twice; the late
frame counted twice; two late frames dealt; another card's gap using up an entry).

The model behind the property test: a dealer who draws only when the table asks for a card
and lays it where the table says, a shoe whose frames come in order but may come late or be
lost (a lost frame shows as a gap, ``CardsLost``, before the next frame), and a supervisor
who looks at the felt: at a dealer-idle pause they enter the card lying there that the round
does not show, a held card that is the late frame of a card already in the round is burnt,
a held card that is the one the round is waiting for is accepted. Whatever the interleaving,
the round's cards must be exactly the physical cards, position by position, in order.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.games.base import CardNeeded, DecisionNeeded
from controller.games.registry import GAME_IDS
from controller.kernel.cards import Card, parse_card
from controller.service.journal import Journal
from controller.service.journaled_table import JournaledTable, replay
from controller.table.config import TableConfig
from controller.table.effects import (
    CommandAnswered,
    Effect,
    EventRejected,
    PublishEvent,
    PublishState,
    TellDealer,
)
from controller.table.events import (
    CardDrawn,
    CardsLost,
    ControllerStarted,
    PlatformDecided,
    RoundRequested,
    ShoeOffline,
    ShoeOnline,
    SupervisorCommanded,
    TimerExpired,
)
from controller.table.machine import TableMachine, event_kind
from controller.table.state import Pause, PauseReason, Phase, TableState
from controller.table.views import public_state, snapshot
from tests.table.driver import Driver, shuffled_shoe, table_for
from tests.table.test_properties import (
    check_no_secret_is_published,
    faces_in_play,
    helpful_event,
    random_event,
)

CARD_TOKEN = re.compile(r"\b[A2-9TJQK][SHDC]\b")
PUBLIC = (PublishState, PublishEvent)
BURNT_AT_START = 3  # Driver.new_shoe: 2S revealed, 3D 4D burnt


def public_text(effects: list[Effect]) -> str:
    """Everything the platform and the public are shown by ``effects``, as JSON text."""
    return "\n".join(json.dumps(e.to_dict()) for e in effects if isinstance(e, PUBLIC))


def dealt_in(effects: list[Effect]) -> bool:
    return any(isinstance(e, PublishEvent) and e.name == "card_dealt" for e in effects)


def cards_drawn(driver: Driver) -> int:
    return public_state(driver.machine.config, driver.machine.state)["cards_drawn"]


def to_the_hole(driver: Driver, filler: str = "5S") -> None:
    """Deal ``filler`` cards until the round wants its face-down card."""
    while True:
        step = driver.machine.state.round.next_step()
        assert isinstance(step, CardNeeded), step
        if step.face_down:
            return
        driver.draw(filler)


# -- what revision 3 gets right --------------------------------------------------------------


@pytest.mark.parametrize("phase", [Phase.BURN_REVEAL, Phase.BURNING])
def test_a_dealer_idle_pause_during_the_burn_has_no_idle_gap(phase: Phase) -> None:
    """A burn card is never entered by hand (its face would be in a round's view)."""
    driver = Driver.for_game("baccarat")
    assert driver.command("new_shoe").ok
    if phase is Phase.BURNING:
        driver.draw("5S")  # revealed: five to burn
    assert driver.phase is phase
    driver.expire("dealer_idle")
    pause = driver.machine.state.pause
    assert pause.reason.value == "dealer_idle" and not pause.idle_gap
    answer = driver.command("resume", resolution="enter_card", card="KC")
    assert not answer.ok
    assert driver.machine.state.unannounced_entered == ()
    assert driver.command("resume").ok and driver.phase is phase


def test_no_dealer_idle_deadline_runs_while_deciding_or_reading() -> None:
    """idle_gap comes from the dealer-idle deadline, which only a drawing phase starts: a
    pending decision or a camera read never takes a card from the felt."""
    driver = table_for("blackjack-classic", camera_cross_check=False)
    driver.open_and_close_betting(boxes=1)
    driver.draw("5S", "6D", "7C", "9H")  # box1 5 7, dealer 9 up (hole 6D)
    assert driver.phase is Phase.DECIDING
    assert "dealer_idle" not in driver.machine.state.timers.values()
    driver.decide("play", 1, 1, "H")
    assert driver.phase is Phase.DEALING
    driver.misread()
    assert driver.phase is Phase.READING
    assert "dealer_idle" not in driver.machine.state.timers.values()
    driver.expire("camera")
    pause = driver.machine.state.pause
    assert pause.reason.value == "misread" and not pause.idle_gap


@pytest.mark.parametrize("game", ["blackjack-classic", "blackjack-boundless", "blackjack-21"])
def test_a_hole_card_entered_at_a_dealer_idle_pause_is_not_published(game: str) -> None:
    driver = table_for(game)
    driver.open_and_close_betting(boxes=1)
    to_the_hole(driver)
    driver.expire("dealer_idle")
    assert driver.machine.state.pause.idle_gap
    start = len(driver.effects)
    assert driver.command("resume", resolution="enter_card", card="QH").ok
    (dealt,) = [
        e.payload
        for e in driver.effects[start:]
        if isinstance(e, PublishEvent) and e.name == "card_dealt"
    ]
    assert dealt == {
        "round_id": 1,
        "position": "dealer",
        "face_down": True,
        "source": "supervisor",
    }
    assert driver.machine.state.round_log[-1][1:] == ("dealer", parse_card("QH"), True)
    assert "QH" not in public_text(driver.effects[start:])
    assert "QH" not in json.dumps(public_state(driver.machine.config, driver.machine.state))


def test_an_idle_pause_survives_a_restart_and_replays(tmp_path: Path) -> None:
    """ControllerStarted while paused keeps the pause (and its idle_gap); the card entered
    after the restart is remembered in the state, and the journal replays to that state."""
    config = TableConfig(table_id="t1", game="baccarat", journal_path=tmp_path / "t.journal")
    table, _ = JournaledTable.open(config, at=1.0)
    driver = Driver(table)
    driver.new_shoe()
    driver.open_and_close_betting()
    driver.draw("9S", "TD")
    driver.expire("dealer_idle")
    table.close()
    # A shoe that accounts for every card across the restart: nothing more to confirm.
    table, _ = JournaledTable.open(config, at=driver.tick(), gaps_visible=True)
    driver.target = table
    pause = table.machine.state.pause
    assert pause.reason.value == "dealer_idle" and pause.idle_gap  # not "recovered"
    assert driver.command("resume", resolution="enter_card", card="KC").ok
    assert table.machine.state.unannounced_entered == (parse_card("KC"),)
    driver.send(ControllerStarted(driver.tick(), gaps_visible=True))  # recovered: no card
    pause = table.machine.state.pause
    assert pause.reason.value == "recovered" and not pause.idle_gap
    assert not driver.command("resume", resolution="enter_card", card="3H").ok
    assert table.machine.state.unannounced_entered == (parse_card("KC"),)
    again = replay(table.journal, config)
    assert again.snapshot() == table.machine.snapshot()
    assert driver.command("resume").ok
    driver.send(CardsLost((7,), driver.tick()))  # the KC's gap, after the restart: news
    assert driver.phase is Phase.DEALING
    driver.draw("3H")
    settled = driver.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]
    table.close()


def test_a_burn_then_a_card_entered_for_the_offline_gap(dealing: Driver) -> None:
    """Held card and offline gap (two resolutions): burn, then enter the card the shoe lost
    while offline, then confirm nothing else left. The entered card's gap is news.
    (Revision 4 also takes them the other way round: the held card came after the outage,
    so the card drawn while the shoe was offline may be entered first, see below.)"""
    dealing.send(ShoeOffline("p", "unplugged", dealing.tick()))
    dealing.send(ShoeOnline("p", dealing.tick()))
    dealing.draw("5D")  # held while paused
    assert dealing.command("resume", resolution="burn").ok
    assert dealing.phase is Phase.PAUSED and dealing.machine.state.pause.offline_gap
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    assert dealing.phase is Phase.PAUSED
    assert dealing.command("resume", resolution="no_cards_drawn").ok
    dealing.send(CardsLost((7,), dealing.tick()))
    dealing.draw("3H")
    settled = dealing.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]
    # 3 burnt at the start, 9S TD, 5D (held, burnt: it left the shoe), KC, 3H.
    assert cards_drawn(dealing) == BURNT_AT_START + 5


def test_a_card_entered_for_the_offline_gap_before_the_held_card_is_burnt(
    dealing: Driver,
) -> None:
    """Revision 4: the card drawn while the shoe was offline left it before the card held
    once it was back: it is entered first (into its place), then the held card burnt."""
    dealing.send(ShoeOffline("p", "unplugged", dealing.tick()))
    dealing.send(ShoeOnline("p", dealing.tick()))
    dealing.draw("5D")  # held while paused
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    assert dealing.machine.state.pause.held == (parse_card("5D"),)
    assert dealing.command("resume", resolution="burn").ok
    assert dealing.command("resume", resolution="no_cards_drawn").ok
    dealing.send(CardsLost((7,), dealing.tick()))
    dealing.draw("3H")
    settled = dealing.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]


def test_no_cards_drawn_then_accept(dealing: Driver) -> None:
    dealing.send(ShoeOffline("p", "unplugged", dealing.tick()))
    dealing.send(ShoeOnline("p", dealing.tick()))
    dealing.draw("KC")  # the player's third card, drawn once the shoe was back
    answer = dealing.command("resume", resolution="accept")
    # Not into the place of a card that may have been drawn while the shoe was offline.
    assert not answer.ok and "no_cards_drawn" in answer.message
    answer = dealing.command("resume", resolution="no_cards_drawn")
    assert answer.ok and "still needed" in answer.message
    assert dealing.command("resume", resolution="accept").ok
    dealing.draw("3H")
    settled = dealing.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_the_snapshot_holds_every_field_of_the_state_and_of_a_pause() -> None:
    """Equal snapshots mean equal states only if the snapshot shows every field: a new field
    of TableState or Pause must be added to views.snapshot (or named here, with why)."""
    shown = set(snapshot(TableState()))
    renamed = {"count": "seen", "round": "round_view"}  # and round_next; count.decks is fixed
    assert {renamed.get(name, name) for name in _fields(TableState)} <= shown
    state = TableState(pause=Pause(PauseReason.SUPERVISOR, "", Phase.DEALING))
    assert _fields(Pause) <= set(snapshot(state)["pause"])


@pytest.mark.parametrize("game", GAME_IDS)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_an_expired_timer_the_machine_no_longer_awaits_changes_nothing(
    game: str, data: st.DataObject
) -> None:
    """What the runtime now leaves out of the journal (JournaledTable.awaits_timer false) is
    exactly what the machine files as timer.stale, and taking it changes nothing: no effect,
    the same snapshot (next_timer_id included). A table fed every stale expiry reaches the
    state of one fed none, so a journal without them replays the same."""
    config = TableConfig(table_id="p", game=game, journal_path=Path(":memory:"))
    plain = TableMachine(config)
    journal = Journal(Path(":memory:"))
    table = JournaledTable(config, journal, TableMachine(config))
    try:
        for step in range(data.draw(st.integers(1, 100), label="length")):
            at = 1_000.0 + step
            if data.draw(st.integers(0, 3), label="helpful?"):
                event = helpful_event(data.draw, plain, at)
            else:
                event = random_event(data.draw, plain, at)
            plain.handle(event)
            table.handle(event)
            machine = table.machine
            top = machine.state.next_timer_id + 2
            for timer_id in range(top):
                stale = TimerExpired(timer_id, at)
                awaited = table.awaits_timer(timer_id)
                assert awaited == (event_kind(machine.state, stale) != "timer.stale")
                if awaited:
                    continue
                before = machine.snapshot()
                assert table.handle(stale) == []
                assert machine.snapshot() == before
            assert machine.snapshot() == plain.snapshot()
        assert replay(journal, config).snapshot() == plain.snapshot()
    finally:
        table.close()


# -- the property: random interleavings of idle pauses, entries, gaps and late frames ---------


@dataclasses.dataclass
class Frame:
    seq: int
    card: Card
    ident: int  # which physical card


@dataclasses.dataclass
class Felt:
    """The physical side: the shoe, the frames on their way, the cards on the felt."""

    shoe: list[Card]
    placed: list[tuple[int, str, Card, bool]] = dataclasses.field(default_factory=list)
    pending: list[Frame] = dataclasses.field(default_factory=list)
    lost: list[Frame] = dataclasses.field(default_factory=list)  # gap not shown yet
    next_seq: int = 1
    next_ident: int = 0
    held: list[int | None] = dataclasses.field(default_factory=list)  # ids of pause.held
    known: set[int] = dataclasses.field(default_factory=set)  # faces the table learned
    doubles: int = 0  # late frames of cards already counted, held (counted again)
    in_round: set[int] = dataclasses.field(default_factory=set)
    dealt: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)
    round_id: int | None = None


class Model:
    def __init__(self, game: str, seed: int, journal: Journal) -> None:
        self.config = TableConfig(table_id="m", game=game, journal_path=Path(":memory:"))
        self.table = JournaledTable(self.config, journal, TableMachine(self.config))
        self.driver = Driver(self.table)
        self.driver.new_shoe()
        self.felt = Felt(shoe=shuffled_shoe(seed))

    @property
    def state(self) -> TableState:
        return self.table.machine.state

    def shown(self) -> int:
        if self.state.round is None:
            return 0
        return sum(1 for entry in self.state.round_log if entry[0] == "card")

    def unshown(self) -> tuple[int, str, Card, bool] | None:
        """The card lying on the felt that the round does not show, if any."""
        felt = self.felt
        if self.state.round is None or len(felt.placed) <= self.shown():
            return None
        return felt.placed[self.shown()]

    # what may happen next

    def actions(self) -> list[str]:
        state, felt = self.state, self.felt
        acts = []
        if felt.pending:
            acts += ["deliver", "deliver", "lose"]
        if state.phase is Phase.DEALING and self.unshown() is None:
            acts += ["draw", "draw"]
        idle = [i for i, purpose in state.timers.items() if purpose == "dealer_idle"]
        pending_ids = {frame.ident for frame in felt.pending}
        lying = self.unshown()
        # Not modelled here (the tests at the end): a second card entered while the late frame
        # of a first is on its way, and the late frame of a face-down card entered by hand.
        if (
            idle
            and not pending_ids & felt.in_round
            and not (lying is not None and lying[3] and lying[0] in pending_ids)
        ):
            acts.append("idle")
        if state.phase is Phase.PAUSED:
            acts += ["supervisor", "supervisor"]
        # A gap no card entered can account for (a cancelled round's lost frame) is left
        # out of the next round here: see the test at the end on a gap that is not the card's.
        unknown_gap = any(f.ident not in felt.known for f in felt.lost)
        if state.phase is Phase.SHOE_READY and not felt.pending and not unknown_gap:
            acts.append("round")
        if state.phase in (Phase.BETTING, Phase.DECIDING):
            acts.append("platform")
        acts.append("restart")
        return acts

    def send(self, event: object) -> list[Effect]:
        effects = self.driver.send(event)
        refused = [
            e
            for e in effects
            if isinstance(e, EventRejected) or (isinstance(e, CommandAnswered) and not e.ok)
        ]
        assert not refused, (event, refused)
        return effects

    def act(self, action: str, data: st.DataObject) -> list[Effect]:
        state, felt, at = self.state, self.felt, self.driver.tick()
        if action == "draw":
            step = state.round.next_step()
            card = felt.shoe.pop(0)
            felt.placed.append((felt.next_ident, step.position, card, step.face_down))
            felt.pending.append(Frame(felt.next_seq, card, felt.next_ident))
            felt.next_ident += 1
            felt.next_seq += 1
            return []
        if action == "lose":
            felt.lost.append(felt.pending.pop(0))
            return []
        if action == "deliver":
            frame = felt.pending.pop(0)
            effects = []
            if felt.lost:
                unknown = [f for f in felt.lost if f.ident not in felt.known]
                paused_before = self.state.phase in (Phase.PAUSED, Phase.AWAITING_SHUFFLE)
                held_before = len(self.state.pause.held) if self.state.pause else 0
                effects += self.send(CardsLost(tuple(f.seq for f in felt.lost), at))
                felt_lost, felt.lost = felt.lost, []
                held_now = len(self.state.pause.held) if self.state.pause else 0
                # The gap is the entered cards' and nothing more: exactly the cards the
                # table never learned are held (news only while paused, as before).
                assert held_now - held_before == (0 if paused_before else len(unknown))
                felt.held += [None] * (held_now - held_before)
                hypothesis.event("gap accounted" if len(unknown) < len(felt_lost) else "gap")
            held_before = len(self.state.pause.held) if self.state.pause else 0
            counted_before = frame.ident in felt.known
            sent = self.send(CardDrawn(frame.card, frame.seq, at))
            effects += sent
            pause = self.state.pause
            if pause is not None and len(pause.held) > held_before:
                felt.held.append(frame.ident)
                # A fix may hold the late-frame candidate uncounted (counted if accepted).
                if len(pause.held) - 1 not in getattr(pause, "uncounted", ()):
                    felt.doubles += counted_before
                    felt.known.add(frame.ident)
                hypothesis.event("late frame of a card entered, held" if counted_before else "held")
            elif dealt_in(sent):
                felt.known.add(frame.ident)
                felt.in_round.add(frame.ident)
            elif pause is not None and pause.reason.value == "impossible_card":
                assert counted_before, "a genuine card refused as a ninth copy"
            else:
                raise AssertionError(("a frame neither dealt nor held", frame, sent))
            return effects
        if action == "idle":
            (timer_id,) = [i for i, p in state.timers.items() if p == "dealer_idle"]
            return self.send(TimerExpired(timer_id, at))
        if action == "round":
            return self.send(RoundRequested(f"r{at}", "platform", at, data.draw(st.integers(0, 2))))
        if action == "platform":
            (timer_id,) = state.timers
            step = state.round.next_step() if state.round is not None else None
            if isinstance(step, DecisionNeeded) and data.draw(st.booleans()):
                token = data.draw(st.sampled_from(sorted(step.options)))
                return self.send(
                    PlatformDecided(state.round_id, step.kind, step.box, step.hand, token, at)
                )
            return self.send(TimerExpired(timer_id, at))
        if action == "restart":
            # This model's shoe keeps every frame across a restart of the table (frames are
            # late or lost, never dropped by the restart): a shoe that accounts for every
            # card. A restart with one that does not is tested in test_restart_gaps.py.
            return self.send(ControllerStarted(at, gaps_visible=True))
        assert action == "supervisor"
        return self.supervise(at)

    def command(self, at: float, resolution: str = "", card: Card | None = None) -> list[Effect]:
        command = "cancel" if resolution == "cancel" else "resume"
        resolution = "" if command == "cancel" else resolution
        event = SupervisorCommanded(
            f"s{at}", command, "sam", "supervisor", at, "review", resolution, card
        )
        return self.send(event)

    def supervise(self, at: float) -> list[Effect]:
        pause, felt = self.state.pause, self.felt
        lying = self.unshown()
        needed = None if lying is None else lying[0]
        if pause.held:
            assert len(felt.held) == len(pause.held), (felt.held, pause.held)
            if needed not in felt.held:
                felt.held = []
                return self.command(at, "burn")
            if len(felt.held) == 1 and pause.resume_to is Phase.DEALING:
                effects = self.command(at, "accept")
                assert dealt_in(effects)
                hypothesis.event("accepted")
                ident = felt.held.pop()
                felt.in_round.add(ident)
                felt.known.add(ident)
                return effects
            felt.held = []
            hypothesis.event("cancelled")
            return self.cancel(at)
        if lying is not None and pause.idle_gap:
            ident, _position, card, _down = lying
            effects = self.command(at, "enter_card", card)
            assert dealt_in(effects)
            hypothesis.event("entered" + (" face down" if _down else ""))
            felt.known.add(ident)
            felt.in_round.add(ident)
            return effects
        return self.command(at, "")

    def cancel(self, at: float) -> list[Effect]:
        effects = self.command(at, "cancel")
        self.felt.placed = []
        return effects

    # what must hold

    def check(self, effects: list[Effect]) -> None:
        state, felt = self.state, self.felt
        for effect in effects:
            if isinstance(effect, PublishEvent) and effect.name == "betting_closed":
                felt.placed, felt.dealt = [], []
                felt.round_id = effect.payload["round_id"]
            if isinstance(effect, PublishEvent) and effect.name == "card_dealt":
                payload = effect.payload
                assert payload["round_id"] == felt.round_id
                felt.dealt.append((payload["position"], payload.get("card")))
                k = len(felt.dealt) - 1
                assert k < len(felt.placed), ("a card dealt that is not on the felt", payload)
                _ident, position, card, face_down = felt.placed[k]
                assert payload["position"] == position
                assert payload["face_down"] == face_down
                assert payload.get("card") == (None if face_down else str(card))
            if isinstance(effect, PublishEvent) and effect.name == "round_settled":
                hypothesis.event("settled")
                assert len(felt.dealt) == len(felt.placed), "a card on the felt never dealt"
        if state.round is not None:
            log = state.round_log
            cards = [entry for entry in log if entry[0] == "card"]
            assert len(cards) <= len(felt.placed), (cards, felt.placed)
            for entry, (_ident, position, card, face_down) in zip(cards, felt.placed, strict=False):
                assert (entry[1], entry[2], entry[3]) == (position, card, face_down), (
                    cards,
                    felt.placed,
                )
        pause = state.pause
        if pause is not None and pause.idle_gap:
            assert pause.resume_to is Phase.DEALING
        expected = BURNT_AT_START + len(felt.known)
        assert state.count is not None
        seen = state.count.cards_seen
        assert seen >= expected
        if not felt.doubles:
            assert seen == expected, (seen, expected)


@pytest.mark.parametrize("game", GAME_IDS)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_the_round_holds_exactly_the_physical_cards_whatever_the_frames_do(
    game: str, data: st.DataObject
) -> None:
    journal = Journal(Path(":memory:"))
    model = Model(game, data.draw(st.integers(0, 10_000), label="shoe"), journal)
    machine = model.table.machine
    try:
        for _ in range(data.draw(st.integers(10, 160), label="length")):
            action = data.draw(st.sampled_from(model.actions()), label="action")
            public_before, _ = faces_in_play(machine)
            effects = model.act(action, data)
            check_no_secret_is_published(machine, public_before, effects)
            model.check(effects)
        assert replay(journal, model.config).snapshot() == machine.snapshot()
    finally:
        model.table.close()


# -- bugs found in review, fixed: each failed before the fix -----------------------------------


def test_the_late_frame_of_a_hole_card_entered_by_hand_does_not_publish_its_face() -> None:
    driver = table_for("blackjack-classic")  # box1, hole, box1, up card
    driver.open_and_close_betting(boxes=1)
    driver.draw("5S")
    to_the_hole(driver)
    driver.expire("dealer_idle")
    assert driver.command("resume", resolution="enter_card", card="QH").ok
    start = len(driver.effects)
    driver.draw("QH")  # its frame, late: held out of turn
    assert driver.machine.state.pause.reason.value == "card_out_of_turn"
    assert "QH" not in public_text(driver.effects[start:])
    assert "QH" not in json.dumps(public_state(driver.machine.config, driver.machine.state))


def test_a_held_card_that_becomes_the_hole_card_was_not_named() -> None:
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=1)
    driver.expire("dealer_idle")  # box1's card lies on the felt, its frame lost
    assert driver.command("resume", resolution="enter_card", card="7D").ok
    start = len(driver.effects)
    driver.draw("7D")  # another seven of diamonds, drawn for the hole: held
    held = driver.machine.state.pause
    assert held.reason.value == "card_out_of_turn"
    assert not CARD_TOKEN.search(held.message)
    paused = driver.published_events("table_paused")[-1]
    assert not CARD_TOKEN.search(paused["message"])
    assert not [
        e for e in driver.effects[start:] if isinstance(e, TellDealer) and "7D" in e.message
    ]
    assert driver.command("resume", resolution="accept").ok
    assert driver.machine.state.round_log[-1][1:] == ("dealer", parse_card("7D"), True)


def test_a_burnt_late_frame_is_not_counted_twice(dealing: Driver) -> None:
    dealing.expire("dealer_idle")
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    dealing.draw("KC")  # the KC's frame, late: held
    assert dealing.command("resume", resolution="burn").ok
    dealing.draw("3H")
    settled = dealing.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]
    assert dealing.machine.state.count.seen[parse_card("KC")] == 1
    assert cards_drawn(dealing) == BURNT_AT_START + 4  # 9S TD KC 3H


def test_a_late_frame_accepted_as_another_card_is_counted_once(dealing: Driver) -> None:
    dealing.expire("dealer_idle")
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    dealing.draw("KC")  # a second king of clubs, for the banker
    assert dealing.command("resume", resolution="accept").ok
    assert dealing.machine.state.count.seen[parse_card("KC")] == 2
    assert cards_drawn(dealing) == BURNT_AT_START + 4


def test_two_late_frames_after_two_cards_entered_are_not_dealt() -> None:
    driver = table_for("baccarat")
    driver.open_and_close_betting()
    driver.expire("dealer_idle")  # the player's 9S lies on the felt, its frame late
    assert driver.command("resume", resolution="enter_card", card="9S").ok
    driver.expire("dealer_idle")  # the banker's TD too (the link is stalled)
    assert driver.command("resume", resolution="enter_card", card="TD").ok
    for late in ("9S", "TD"):  # the link recovers: both frames, in order, no gap
        driver.draw(late)
        if driver.phase is Phase.PAUSED and driver.machine.state.pause.held:
            assert driver.command("resume", resolution="burn").ok
    assert driver.phase is Phase.DEALING and driver.expected_position() == "player"
    driver.draw("KC", "3H")
    settled = driver.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]


def test_a_gap_that_is_not_the_entered_cards_does_not_let_its_late_frame_be_dealt() -> None:
    driver = table_for("baccarat")
    driver.open_and_close_betting()
    driver.send(CardDrawn(parse_card("9S"), 1, driver.tick()))  # the player's
    driver.expire("dealer_idle")  # the banker's TD lies on the felt, frame 2 lost
    assert driver.command("cancel", reason="a card the table does not show").ok
    driver.open_and_close_betting()
    driver.expire("dealer_idle")  # the player's KC lies on the felt, frame 3 late
    assert driver.command("resume", resolution="enter_card", card="KC").ok
    driver.send(CardsLost((2,), driver.tick()))  # the numbering: 2 lost, then 3
    driver.send(CardDrawn(parse_card("KC"), 3, driver.tick()))
    if driver.phase is Phase.PAUSED and driver.machine.state.pause.held:
        assert driver.command("resume", resolution="burn").ok  # the KC's frame, late
    cards = [entry[1:3] for entry in driver.machine.state.round_log]
    assert cards == [("player", parse_card("KC"))]
    assert driver.expected_position() == "banker"
