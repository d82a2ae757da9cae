"""A simulated game platform and supervisor, in-process, for the demo and tests.

The platform opens a round whenever the table is ready for one (until it has played the
rounds it was asked for) and answers every decision request: the rules' own default (the
timeout auto-play rule) most of the time, another legal option now and then, from a seeded
random generator, so a demo exercises hits, doubles and splits. The supervisor declares a new
shoe once the dealer has shuffled, resumes a pause that needs no choice, burns cards drawn out
of turn and cancels a round whose card could not be read.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

from controller.runtime import Published
from controller.table.effects import PublishEvent, PublishState
from controller.table.events import PlatformDecided, RoundRequested, SupervisorCommanded

Submit = Callable[[object], None]
Clock = Callable[[], float]


def _command_id() -> str:
    return uuid.uuid4().hex[:12]


class PlatformSimulator:
    """Requests ``rounds`` rounds, one after another, and answers decisions."""

    def __init__(
        self, submit: Submit, clock: Clock, *, rounds: int, seed: int = 0, explore: float = 0.3
    ) -> None:
        self.submit = submit
        self.clock = clock
        self.rounds_wanted = rounds
        self.rounds_requested = 0
        self.rounds_settled = 0
        self.explore = explore
        self._rng = random.Random(seed)
        self._requested_for: tuple[Any, Any] | None = None

    @property
    def done(self) -> bool:
        return self.rounds_settled >= self.rounds_wanted

    def observe(self, effect: Published) -> None:
        if isinstance(effect, PublishState):
            self._on_state(effect.state)
        elif isinstance(effect, PublishEvent):
            if effect.name == "decision_requested":
                self._decide(effect.payload)
            elif effect.name in ("round_settled", "round_voided"):
                self.rounds_settled += 1

    def _on_state(self, state: dict[str, Any]) -> None:
        ready = state["phase"] == "SHOE_READY"
        marker = (state["shoe_id"], state["round_id"])
        if ready and self.rounds_requested < self.rounds_wanted and marker != self._requested_for:
            self._requested_for = marker
            self.rounds_requested += 1
            self.submit(RoundRequested(_command_id(), "platform-simulator", self.clock()))

    def _decide(self, request: dict[str, Any]) -> None:
        options = list(request["options"])
        decision = request["default"]
        if options and self._rng.random() < self.explore:
            decision = self._rng.choice(options)
        self.submit(
            PlatformDecided(
                round_id=request["round_id"],
                kind=request["kind"],
                box=request["box"],
                hand=request["hand"],
                decision=decision,
                at=self.clock(),
            )
        )


class SupervisorSimulator:
    """Declares new shoes and resolves pauses, as a supervisor at the console would."""

    def __init__(
        self,
        submit: Submit,
        clock: Clock,
        name: str = "supervisor-simulator",
        *,
        shoe_shuffled: bool = True,
    ) -> None:
        self.submit = submit
        self.clock = clock
        self.name = name
        # A shuffled shoe that has not been declared yet (a simulator starts with one).
        self.shoe_shuffled = shoe_shuffled
        self._handled_pause: Any = None

    def command(self, command: str, **fields: Any) -> None:
        self.submit(
            SupervisorCommanded(
                command_id=_command_id(),
                command=command,
                by=self.name,
                role="supervisor",
                at=self.clock(),
                **fields,
            )
        )

    def dealer_shuffled(self) -> None:
        self.shoe_shuffled = False
        self.command("new_shoe")

    def observe(self, effect: Published) -> None:
        if not isinstance(effect, PublishState):
            return
        if effect.state["phase"] == "AWAITING_SHUFFLE" and self.shoe_shuffled:
            self.shoe_shuffled = False
            self.command("new_shoe")
        pause = effect.state.get("paused")
        if pause is None:
            self._handled_pause = None
            return
        if pause == self._handled_pause:
            return
        self._handled_pause = pause
        needs = " ".join(pause["needs"])
        if "no_cards_drawn" in needs:
            # The simulated dealer draws only when the table asks, and the table asks only
            # while the shoe is online: nothing can have left the shoe meanwhile.
            self.command("resume", resolution="no_cards_drawn")
        elif "enter_card" in needs:
            self.command("cancel", reason="card unreadable")
        elif "accept or burn" in needs:
            self.command("resume", resolution="burn")
        else:
            self.command("resume")
