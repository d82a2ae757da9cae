"""Cards drawn while the daemon is down: never a later card in a lost card's place.

``livetable run`` as a subprocess on a real mosquitto, its shoe a simulator on a real pty.
A Classic round (five boxes) is dealt up to box 1's first card; the daemon is killed with
SIGKILL; the dealer draws 1, 2 or 11 more cards (the next positions of the deal) while
nobody reads the shoe; the daemon restarts. What the table may do then depends on what the
protocol can show:

* native: the shoe resends what it drew; the cards arrive while the table is paused
  ``recovered`` and are held; ``accept`` deals them in the order they came;
* Angel Eye (every numbering variant) and ASCII lines: a card drawn meanwhile may be gone
  without a trace (ASCII), or show only as a gap with the next card, whose count a SEQ of
  one character cannot tell beyond nine: the ``recovered`` pause needs ``no_cards_drawn`` or
  each card entered by hand. The supervisor enters them from the felt.

Either way the round then goes on, and every card published is where it physically went:
the faces dealt, in order, are the faces drawn, and each settled round is what the rules
engine gives for those cards (``check_stream``).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.client.api_client import Account, ApiClient
from simulators.dealer import shoe_target
from simulators.shoe.simulator import ShoeSimulator
from tests.support.daemon import DaemonProcess, check_stream, unique_by_seq, write_config
from tests.support.wait import wait_until

GAME = "blackjack-classic"
BOXES = 5

CASES = [
    *[
        pytest.param("angel-eye", variant, 2, id=f"angel-eye-{variant}-2")
        for variant in ("mod10", "wrap9", "wrap9-free-signals", "mod10-free-signals", "any-seq")
    ],
    pytest.param("angel-eye", "mod10", 1, id="angel-eye-mod10-1"),
    pytest.param("angel-eye", "mod10", 11, id="angel-eye-mod10-11"),
    *[
        pytest.param(protocol, None, drawn, id=f"{protocol}-{drawn}")
        for protocol in ("ascii", "native")
        for drawn in (1, 2, 11)
    ],
]


class Felt:
    """The dealer: draws what the table asks for, and remembers every face, in order."""

    def __init__(self, shoe: ShoeSimulator) -> None:
        self.shoe = shoe
        self.round_faces: list[str] = []
        self.drawn = 0
        """Cards out of this shoe (burn included): a state that counts fewer has not seen
        the last of them yet, so it asks for a card the dealer already drew."""

    def new_shoe(self) -> None:
        self.shoe.new_shoe()
        self.drawn = 0

    def caught_up(self, state: dict[str, Any]) -> bool:
        return (state["shoe"]["cards_drawn"] or 0) == self.drawn

    def draw(self, position: str | None, round_card: bool) -> str:
        emitted = self.shoe.draw(shoe_target(position))
        if emitted.event == "cut_card":
            emitted = self.shoe.draw(shoe_target(position))
        assert emitted.card is not None
        self.drawn += 1
        if round_card:
            self.round_faces.append(emitted.card)
        return emitted.card


def play(
    felt: Felt,
    platform: ApiClient,
    supervisor: ApiClient,
    until: Callable[[dict[str, Any]], bool],
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Dealer, platform and supervisor, one state at a time, until ``until(state)``."""
    deadline = time.monotonic() + timeout
    acted: Any = None
    while time.monotonic() < deadline:
        state = platform.state
        if state is None:
            time.sleep(0.02)
            continue
        if until(state):
            return state
        key = (state["seq"], state["journal"])
        if key == acted:
            time.sleep(0.01)
            continue
        acted = key
        phase, awaiting = state["phase"], state["awaiting"] or {}
        if phase in ("BURN_REVEAL", "BURNING", "DEALING") and not felt.caught_up(state):
            acted = None  # the table has not seen the last card yet: look again
            time.sleep(0.01)
            continue
        # A command is sent once per phase: states published before the table took it
        # (the shoe coming online, a lock acknowledged) still show the phase it leaves.
        if phase == "AWAITING_SHUFFLE":
            felt.new_shoe()
            answer = supervisor.request("new_shoe")
            assert answer["ok"], answer
            wait_until(lambda: platform.state["phase"] != "AWAITING_SHUFFLE", 10, "the new shoe")
        elif phase == "SHOE_READY":
            answer = platform.request("open_round", boxes=BOXES)
            assert answer["ok"], answer
            wait_until(lambda: platform.state["phase"] != "SHOE_READY", 10, "the round open")
        elif phase in ("BURN_REVEAL", "BURNING"):
            felt.draw(None, round_card=False)
        elif phase == "DEALING" and awaiting.get("what") == "card":
            felt.draw(awaiting["position"], round_card=True)
        elif phase == "PAUSED":
            raise AssertionError(f"an unexpected pause: {state['pause']}")
        # BETTING and DECIDING: the table's own timers close betting and default decisions.
    raise AssertionError("the table did not get there in time")


@pytest.mark.slow
@pytest.mark.parametrize(("protocol", "variant", "drawn"), CASES)
def test_cards_drawn_while_the_daemon_is_down_are_never_misplaced(
    tmp_path: Path, mqtt_broker: tuple[str, int], protocol: str, variant: str | None, drawn: int
) -> None:
    host, port = mqtt_broker
    with ShoeSimulator(
        protocol, tmp_path / "shoe", seed=5, cut_card_depth=30, variant=variant or "mod10"
    ) as shoe:
        config = write_config(
            tmp_path / "t1.toml",
            game=GAME,
            shoe_port=tmp_path / "shoe",
            broker_port=port,
            protocol=protocol,
            shoe_variant=variant,
            decision_s=0.3,
            dealer_idle_s=60.0,
        )
        daemon = DaemonProcess(config, tmp_path / "daemon.log")
        viewer = ApiClient(host, port, "t1", Account("viewer", "watcher"))
        platform = ApiClient(host, port, "t1", Account("platform", "platform"))
        supervisor = ApiClient(host, port, "t1", Account("supervisor", "alice"))
        for client in (viewer, platform, supervisor):
            assert client.wait_connected(), "the broker refused a client"
        viewer.client.subscribe("livetable/t1/events", qos=1)
        felt = Felt(shoe)
        try:
            daemon.start()
            # Box 1's first card is dealt, then the daemon dies.
            play(
                felt,
                platform,
                supervisor,
                lambda s: s["phase"] == "DEALING" and len(felt.round_faces) == 1,
            )
            wait_until(
                lambda: any(e["type"] == "card_dealt" for e in viewer.events), 10, "box1's card"
            )
            daemon.kill(signal.SIGKILL)
            positions = [
                "box2",
                "box3",
                "box4",
                "box5",
                "dealer",
                "box1",
                "box2",
                "box3",
                "box4",
                "box5",
                "dealer",
            ]
            while_down = [felt.draw(position, round_card=True) for position in positions[:drawn]]
            daemon.start()
            paused = wait_until(
                lambda: (
                    platform.state is not None
                    and platform.state["phase"] == "PAUSED"
                    and platform.state["pause"]["reason"] in ("recovered", "card_out_of_turn")
                    and platform.state
                ),
                30,
                "the recovered pause",
            )
            if protocol == "native":
                # Every card drawn meanwhile is resent, held, and accepted in order.
                wait_until(
                    lambda: f"the {drawn} card(s)" in " ".join(platform.state["pause"]["needs"]),
                    15,
                    f"{drawn} cards held",
                )
                answer = supervisor.request("resume", resolution="accept")
                assert answer["ok"], answer
            else:
                assert paused["pause"]["offline_gap"], paused["pause"]
                refused = supervisor.request("resume")
                assert not refused["ok"] and "no_cards_drawn" in refused["message"], refused
                for face in while_down:
                    answer = supervisor.request("resume", resolution="enter_card", card=face)
                    assert answer["ok"], answer
                if "stays paused" in answer["message"]:
                    # Not when the cards entered completed the deal: a decision is due now.
                    answer = supervisor.request("resume", resolution="no_cards_drawn")
                    assert answer["ok"], answer
                else:
                    assert drawn == 11 and "goes on" in answer["message"], answer
            wait_until(lambda: platform.state["phase"] != "PAUSED", 10, "the table to resume")
            # The round goes on to its end; nothing else pauses.
            settled_before = sum(e["type"] == "round_settled" for e in viewer.events)
            play(
                felt,
                platform,
                supervisor,
                lambda s: sum(e["type"] == "round_settled" for e in viewer.events) > settled_before,
            )
            events = unique_by_seq(viewer.events)
            dealt = [e["data"] for e in events if e["type"] == "card_dealt"]
            settled = [e["data"] for e in events if e["type"] == "round_settled"][-1]
            # The hole card is face down on the wire: its face is in the result.
            hole = settled["result"]["dealer"]["cards"][0]
            faces = [card.get("card") or hole for card in dealt]
            assert faces == felt.round_faces
            assert check_stream(events, GAME) == 1
            lost = [e["data"]["count"] for e in events if e["type"] == "cards_lost"]
            if protocol == "angel-eye" and variant != "any-seq" and drawn < 10:
                assert lost == [drawn], "the gap after the restart, with its true count"
        finally:
            daemon.stop()
            for client in (viewer, platform, supervisor):
                client.close()
