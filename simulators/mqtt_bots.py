"""The people around a table, talking to it only over MQTT, as real ones would.

They speak the API through its one client, :class:`controller.client.api_client.ApiClient` (one
MQTT account: platform, supervisor or viewer). :class:`TableBots` plays the platform, the
supervisor and the dealer from what the table publishes: the supervisor declares new shoes
and resolves pauses, the platform opens rounds and answers decisions, and the dealer draws
the card the table asks for from the shoe (through ``draw``, e.g. the shoe simulator on its
pty).

What they do on each state is said once, for whoever plays them (TableBots here, the tests'
studio of many tables from one thread): :func:`next_move` (the phase's move),
:func:`decision` (the answer to a decision request) and :func:`resolution` (a pause's).
:func:`controller.client.api_client.start_client` makes every MQTT connection of theirs.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from controller.client.api_client import ApiClient

if TYPE_CHECKING:
    from simulators.shoe.simulator import Emitted

logger = logging.getLogger(__name__)


class Dealer(Protocol):
    """What the dealer's hands do (:class:`simulators.dealer.DealerSimulator`'s synchronous
    methods): draw from the shoe and lay the cards on the felt."""

    def deal(self, position: str, face_down: bool = False) -> Emitted | None: ...

    def reveal_first(self) -> None: ...

    def burn(self, count: int = 1) -> None: ...

    def draw_out_of_turn(self) -> Emitted | None: ...

    def turn_over(self) -> bool: ...

    def dealer_cards_shown(self, count: int) -> None: ...

    def split(self, box: int, hand: int) -> None: ...

    def collect(self) -> None: ...

    def shuffle(self) -> None: ...


# A dealer's mistake happens only this long before betting closes (it must arrive first).
MISTAKE_MARGIN_S = 0.5
# A supervisor whose resolution was refused looks again after this.
RETRY_S = 0.5
# How a pause names the dealer's misread hole card (controller.table.state.HOLE_UNREAD).
HOLE_CARD = "hole card"


LATEST = "latest"


def _round_id(state: dict[str, Any]) -> Any:
    return (state.get("round") or {}).get("id")


def _cards_drawn(state: dict[str, Any]) -> Any:
    return (state.get("shoe") or {}).get("cards_drawn")


def progress(state: dict[str, Any]) -> tuple[Any, ...]:
    """What must change before the bots act on a table again: its events, phase, what it
    awaits, the cards out of the shoe, the pause. Not the journal's head alone: the shoe's
    lock confirmations move it without asking for anything, and a dealer who drew again on
    those would draw a card out of turn."""
    pause = state.get("pause") or {}
    return (
        state["seq"],
        state["phase"],
        json.dumps(state.get("awaiting"), sort_keys=True),
        (state.get("shoe") or {}).get("cards_drawn"),
        tuple(pause.get("needs") or ()),
    )


# -- what the people at a table do, whoever plays them ------------------------------------------
# One table's (TableBots) or a studio's from one thread (tests/support/studio.py): the same
# reactions to the same published state.

NEW_SHOE: Final = "new_shoe"
DRAW: Final = "draw"
OPEN_ROUND: Final = "open_round"
DECIDE: Final = "decide"
RESOLVE: Final = "resolve"
ENTER_CARD: Final = "enter_card"
# The phases in which the table waits for the next card out of the shoe: the first card
# (revealed), the burn cards, the round's cards.
DRAWING_PHASES: Final = ("BURN_REVEAL", "BURNING", "DEALING")


def next_move(state: dict[str, Any], more_rounds: bool) -> str | None:
    """What the table's published ``state`` asks of the people around it:

    - :data:`NEW_SHOE`: the dealer puts a fresh shoe in and the supervisor declares it
      (``new_shoe``), while ``more_rounds`` are to be played;
    - :data:`DRAW`: the dealer draws the next card out of the shoe;
    - :data:`OPEN_ROUND`: the platform opens a round (``open_round``), while ``more_rounds``
      and the table holds nothing between rounds;
    - :data:`DECIDE`: the platform answers the decision requested (:func:`decision`);
    - :data:`RESOLVE`: the supervisor resolves the pause (:func:`resolution`);
    - None: nothing of theirs (a dealer with a felt may have more to do: see
      :class:`TableBots`).
    """
    phase = state["phase"]
    if phase == "AWAITING_SHUFFLE" and more_rounds:
        return NEW_SHOE
    if phase in DRAWING_PHASES:
        return DRAW
    if phase == "SHOE_READY" and more_rounds and not state.get("holds"):
        # A table held between rounds (a dealer change, closing) opens none: wait.
        return OPEN_ROUND
    if phase == "DECIDING":
        return DECIDE
    if phase == "PAUSED":
        return RESOLVE
    return None


def decision(request: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The ``decide`` request's arguments answering ``request`` (a ``decision_requested``
    event) with one of the options it offers, drawn with ``rng``."""
    data = request["data"]
    return {
        "round_id": data["round_id"],
        "request_seq": request["seq"],
        "kind": data["kind"],
        "box": data["box"],
        "hand": data["hand"],
        "decision": rng.choice(data["options"]),
    }


@dataclass
class LaidCard:
    """The last round card laid on the felt, with what the table had counted when it was
    laid. If the table still counts as many when its dealer idle deadline pauses it
    (``pause.idle_gap``), the shoe never announced that card: its frame was lost."""

    laid: tuple[Any, Any, str] | None = None

    def note(self, state: dict[str, Any], card: str | None) -> None:
        """``card`` was just drawn for the round of ``state`` (the state it was drawn for)."""
        if card and state.get("phase") == "DEALING":
            self.laid = (_round_id(state), _cards_drawn(state), card)

    def unannounced(self, state: dict[str, Any]) -> str | None:
        """The card on the felt that the paused round does not show, else None."""
        if self.laid is None:
            return None
        round_id, counted, card = self.laid
        if round_id != _round_id(state) or counted != _cards_drawn(state):
            return None
        return card


def resolution(
    pause: dict[str, Any], unannounced: str | None = None
) -> tuple[str, dict[str, Any]] | None:
    """How the supervisor resolves ``pause`` (a state's ``pause``) as its ``needs`` say: the
    command and its arguments, or None for a pause a person made (a person resumes it).

    Cards held out of the round (drawn out of turn, or lost to the line unread) are burned
    first (a card to enter, if any, after). A shoe that
    went offline while cards were due is confirmed to have let none out
    (``no_cards_drawn``): the dealer draws only when the table asks for a card, which it
    does not while the shoe is offline. A card nobody read is :data:`ENTER_CARD`, whose
    ``card`` only someone who saw it can add. A dealer-idle pause while a card was due
    (``idle_gap``) enters ``unannounced``, the card laid that the table never counted
    (:class:`LaidCard`), if there is one. Anything else is a plain ``resume``.
    """
    if pause.get("by"):
        return None
    needs = list(pause.get("needs", []))
    if any(need.startswith("accept or burn") for need in needs):
        return "resume", {"resolution": "burn"}
    # Only the shoe's outage is confirmed so: a card nobody read lies on the felt (the
    # simulated shoe misreads only cards that left it), and is entered.
    if any(need.startswith("confirm no card left the shoe") for need in needs):
        return "resume", {"resolution": "no_cards_drawn"}
    if any(need.startswith("enter_card") for need in needs):
        return ENTER_CARD, {}
    if pause.get("idle_gap") and unannounced is not None:
        return ENTER_CARD, {"card": unannounced}
    return "resume", {}


@dataclass
class TableBots:
    """Platform, supervisor and dealer, each reacting to the table's published state.

    ``draw()`` takes the next card out of the shoe; ``shuffle()`` puts a fresh shoe in
    (before the supervisor declares it). With a ``dealer`` (:class:`Dealer`) the dealer
    instead draws the card for the position the state awaits, lays it on the felt, turns the
    hole card over, splits and collects, and remembers the face of every card the shoe
    misread, which the supervisor reads off the felt and enters by hand when the table
    pauses for it. ``rounds`` rounds are opened, then the bots stop opening rounds.
    Decisions are random among the offered options (``seed``).

    ``resolve_delay_s``: how long the supervisor takes to resolve a pause (so a person
    watching sees it). ``mistake_rate``: the share of rounds in which the dealer draws a card
    out of turn while bets are taken (the table pauses; the supervisor burns it).
    ``resolves_pauses`` False: the supervisor stands aside and a person resolves every pause
    (at the console); ``on_stood_aside`` is then told, once per pause, what the person needs:
    the pause and, for a card to enter, the card the dealer laid on the felt (a hole card
    only as where the dealer keeps it: it is shown to nobody before it is turned over).
    """

    platform: ApiClient
    supervisor: ApiClient
    draw: Callable[[], None] = lambda: None
    shuffle: Callable[[], None] = lambda: None
    rounds: int = 5
    seed: int = 1
    pace_s: float = 0.0
    dealer: Dealer | None = None
    resolve_delay_s: float = 0.0
    mistake_rate: float = 0.0
    resolves_pauses: bool = True
    on_stood_aside: Callable[[str], None] | None = None
    rounds_opened: int = 0
    rounds_settled: int = 0
    rounds_voided: int = 0
    mistakes: int = 0
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _acted_on: Any = None
    _decided: set[int] = field(default_factory=set)
    _seen_events: int = 0
    _ended: set[int] = field(default_factory=set)
    _mistaken_in: set[int] = field(default_factory=set)
    _misread: dict[str, str] = field(default_factory=dict)
    _dealt: dict[str, str] = field(default_factory=dict)
    # The last round card laid on the felt: (round id, cards the table had counted then,
    # its face). If the table still counts as many when the dealer idle deadline pauses
    # it, the shoe never announced that card (its frame was lost).
    _laid: LaidCard = field(default_factory=LaidCard)
    _retry_at: float = 0.0
    _stood_aside_for: Any = None
    unseen: list[str] = field(default_factory=list)
    """Cards the dealer drew while nobody read the shoe (the table was down), in order: at a
    pause that asks whether any card left the shoe unseen, the supervisor enters each from
    the felt before confirming that no other did."""
    unseen_entered: int = 0

    def start(self) -> None:
        self._rng = random.Random(self.seed)
        self._stop.clear()
        self._acted_on = None
        self._thread = threading.Thread(target=self._run, name="table-bots", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    @property
    def done(self) -> bool:
        return self.rounds_settled + self.rounds_voided >= self.rounds

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._step()
            except TimeoutError as error:
                self.errors.append(str(error))
            except Exception as error:  # keep playing; the test reads the errors
                logger.exception("bot step failed")
                self.errors.append(repr(error))
            time.sleep(0.01)

    def _step(self) -> None:
        state = self.platform.state
        if state is None:
            return
        self._follow_events()
        phase = state["phase"]
        key = progress(state)
        if key == self._acted_on:
            return
        if self.dealer is not None:
            self._dealer_watches(state)
        move = next_move(state, self.rounds_opened < self.rounds)
        if move == NEW_SHOE:
            if self.dealer is not None:
                self.dealer.shuffle()
            else:
                self.shuffle()
            self._expect(self.supervisor.request("new_shoe"), "new_shoe")
        elif move == DRAW:
            if self.pace_s:
                time.sleep(self.pace_s)
            if self.dealer is None:
                self.draw()
            else:
                laid = self._dealer_draws(phase, state.get("awaiting") or {})
                self._laid.note(state, laid)
        elif move == OPEN_ROUND:
            answer = self.platform.request("open_round")
            if answer["ok"]:
                self.rounds_opened += 1
            else:
                self.errors.append(f"open_round: {answer['message']}")
        elif move == DECIDE:
            self._decide()
        elif move == RESOLVE:
            if not self._resolve(state):
                return  # not resolved (refused, or for a person): try again later
        elif phase == "READING" and self.dealer is not None:
            # The table asks the camera; for a misread hole card the dealer turns it over.
            if str((state.get("awaiting") or {}).get("position", "")).startswith("dealer"):
                self.dealer.turn_over()
        elif phase == "BETTING" and self.dealer is not None and self.mistake_rate:
            live_round = state.get("round") or {}
            round_id, closes = live_round.get("id"), live_round.get("deadline")
            # Only well before betting closes: a card that came after it would be in turn.
            early = isinstance(closes, int | float) and closes - time.time() > MISTAKE_MARGIN_S
            if round_id not in self._mistaken_in and early:
                self._mistaken_in.add(round_id)
                if self._rng.random() < self.mistake_rate:
                    self.mistakes += 1
                    self.dealer.draw_out_of_turn()
        else:
            return
        self._acted_on = key

    def _follow_events(self) -> None:
        """Count the rounds that ended and, for the dealer, split and collect on the felt."""
        events = list(self.platform.events)
        for event in events[self._seen_events :]:
            kind, data = event["type"], event["data"]
            # By seq: QoS 1 may deliver an event twice.
            if kind in ("round_settled", "round_voided") and event["seq"] not in self._ended:
                self._ended.add(event["seq"])
                if kind == "round_settled":
                    self.rounds_settled += 1
                else:
                    self.rounds_voided += 1
                if self.dealer is not None:
                    self.dealer.collect()
            elif (
                kind == "decision_taken"
                and data.get("decision") == "P"
                and self.dealer is not None
                and event["seq"] not in self._ended
            ):
                self._ended.add(event["seq"])
                self.dealer.split(int(data["box"]), int(data["hand"]))
        self._seen_events = len(events)

    def _dealer_watches(self, state: dict[str, Any]) -> None:
        view = (state.get("round") or {}).get("view") or {}
        cards = (view.get("dealer") or {}).get("cards") if isinstance(view, dict) else None
        if cards and None not in cards:
            self.dealer.dealer_cards_shown(len(cards))  # type: ignore[union-attr]

    def _dealer_draws(self, phase: str, awaiting: dict[str, Any]) -> str | None:
        """Draw what ``phase`` and ``awaiting`` ask for; the round card laid, if any."""
        dealer = self.dealer
        assert dealer is not None
        if phase == "BURN_REVEAL":
            dealer.reveal_first()
        elif phase == "BURNING":
            dealer.burn(1)
        elif awaiting.get("what") == "card":
            position = str(awaiting["position"])
            face_down = bool(awaiting.get("face_down"))
            emitted = dealer.deal(position, face_down)
            if emitted is not None and emitted.card:
                self._dealt[position] = emitted.card
                where = HOLE_CARD if face_down else position
                if emitted.event == "misread":
                    self._misread[where] = emitted.card
                    self._misread[LATEST] = emitted.card
                else:
                    self._misread.pop(where, None)
                return emitted.card
        return None

    def _decide(self) -> None:
        requests = [e for e in list(self.platform.events) if e["type"] == "decision_requested"]
        if not requests or requests[-1]["seq"] in self._decided:
            return
        last = requests[-1]
        answer = self.platform.request(DECIDE, **decision(last, self._rng))
        self._decided.add(last["seq"])
        if not answer["ok"] and answer.get("error", {}).get("code") != "stale":
            self.errors.append(f"decide: {answer['message']}")

    def _resolve(self, state: dict[str, Any]) -> bool:
        """Resolve the pause (:func:`resolution`); whether the table took the resolution."""
        pause = state["pause"] or {}
        resolved = resolution(pause, self._laid.unannounced(state))
        if resolved is None:
            return True  # a person paused it: a person resumes it
        if resolved == ("resume", {"resolution": "no_cards_drawn"}) and self.unseen:
            resolved = ENTER_CARD, {"card": self.unseen[0]}
        if not self.resolves_pauses:
            self._stand_aside(pause, resolved)
            return True
        wait = max(self.resolve_delay_s, self._retry_at - time.monotonic())
        if wait > 0 and self._stop.wait(wait):
            return False
        command, args = resolved
        if command == ENTER_CARD and "card" not in args:
            card = self._unread_card(pause)
            if card is None:
                return True  # a person must read the card; the test decides
            args = {"card": card}
        answer = self.supervisor.request(command, **args)
        if command == ENTER_CARD and self.unseen and args.get("card") == self.unseen[0]:
            # Entered or refused, it is off the felt's list: a refusal is in ``errors``.
            self.unseen.pop(0)
            self.unseen_entered += answer["ok"]
        if answer["ok"]:
            return True
        self.errors.append(f"resolving {pause.get('reason')}: {answer['message']}")
        self._retry_at = time.monotonic() + RETRY_S
        return False

    def _stand_aside(self, pause: dict[str, Any], resolved: tuple[str, dict[str, Any]]) -> None:
        """Tell, once per pause, what a person resolving it needs."""
        key = (pause.get("reason"), pause.get("since"))
        if key == self._stood_aside_for:
            return
        self._stood_aside_for = key
        needs = "; ".join(pause.get("needs", [])) or "a plain resume"
        said = f"paused ({pause.get('reason')}), for a supervisor at the console: {needs}"
        command, args = resolved
        if command == ENTER_CARD:
            if HOLE_CARD in needs:
                said += (
                    " (the dealer shows the hole card to the supervisor alone: the demo's "
                    "dealer wrote it in the table's shoe-truth.jsonl)"
                )
            else:
                card = args.get("card") or self._unread_card(pause)
                if card is not None:
                    said += f"; the card on the felt is {card}"
        if self.on_stood_aside is not None:
            self.on_stood_aside(said)

    def _unread_card(self, pause: dict[str, Any]) -> str | None:
        """The face of the card the pause asks for, as the dealer saw it on the felt."""
        if self.dealer is None:
            return None
        needs = " ".join(pause.get("needs", []))
        match = re.search(r"enter_card for the unread card at ([^\s,]+)", needs)
        where = HOLE_CARD if HOLE_CARD in needs else (match[1] if match else "")
        # A card lost on a noisy line was read by nobody: the last one laid there.
        return self._misread.get(where) or self._dealt.get(where) or self._misread.get(LATEST)

    def _expect(self, answer: dict[str, Any], what: str) -> None:
        if not answer["ok"]:
            self.errors.append(f"{what}: {answer['message']}")
