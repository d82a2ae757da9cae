"""``livetable demo``: a whole simulated table in one process, with real parts where it counts.

A shoe simulator speaks the real protocol on a real pty; the production shoe driver reads it
through pyserial; every event goes through the journal (SQLite) into the table's state
machine, whose effects the runtime carries out: the simulated dealer draws the cards the
table asks for, the simulated platform opens rounds and answers decisions, the simulated
supervisor declares new shoes and resolves pauses. What the table publishes is printed.

(The MQTT daemon, ``livetable run``, is the next step: it will replace the printing and the
in-process platform with a broker.)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from controller.runtime import Published
from controller.table.effects import (
    AskCamera,
    CommandAnswered,
    EventRejected,
    PublishEvent,
    TellDealer,
)
from controller.table_config import GAME_IDS, TableConfig

QUIET_EVENTS = frozenset({"betting_closed"})


class ConsoleTable:
    """The effect handler of the demo: prints, and feeds the simulated people."""

    def __init__(self, out: TextIO, as_json: bool) -> None:
        self.out = out
        self.as_json = as_json
        self.observers: list[Any] = []
        self.dealer: Any = None
        self.shoe_driver: Any = None
        self.submit: Any = None
        self.clock: Any = time.time

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def publish(self, effect: Published) -> None:
        for observer in self.observers:
            observer.observe(effect)
        if self.as_json:
            self._print(json.dumps(effect.to_dict(), sort_keys=True))
            return
        if isinstance(effect, PublishEvent) and effect.name == "round_settled":
            self._print(f"  {effect.name:<18} {_settled(effect.payload)}")
        elif isinstance(effect, PublishEvent) and effect.name not in QUIET_EVENTS:
            self._print(f"  {effect.name:<18} {_summary(effect.payload)}")
        elif isinstance(effect, CommandAnswered):
            status = "ok" if effect.ok else "REFUSED"
            self._print(f"  {effect.command:<18} {status} ({effect.by}): {effect.message}")
        elif isinstance(effect, EventRejected):
            self._print(f"  {'rejected':<18} {effect.event}: {effect.reason}")

    def tell_dealer(self, effect: TellDealer) -> None:
        if not self.as_json and effect.action not in ("wait",):
            self._print(f"dealer> {effect.message}")
        if self.dealer is not None:
            self.dealer.tell(effect)

    def lock_shoe(self, locked: bool) -> None:
        from drivers.shoe.sessions import HostCommand

        command = HostCommand.LOCK if locked else HostCommand.UNLOCK
        driver = self.shoe_driver
        # Lock where the protocol allows it; a generic ASCII reader has no gate to close.
        if driver is None or not driver.online or command not in driver.session.supported_commands:
            return
        driver.send(command)

    def ask_camera(self, effect: AskCamera) -> None:
        # The demo table has no camera: the answer is an abstention, which pauses the round
        # for the supervisor exactly as a camera that could not read the card would.
        from controller.table.events import CameraRead

        self.submit(CameraRead(effect.position, None, self.clock()))


def _settled(payload: dict[str, Any]) -> str:
    """One line a person can read: the hands, the totals and the main result."""
    result = payload.get("result", {})
    if "winner" in result:
        return (
            f"round {payload.get('round_id')}: player {' '.join(result['player'])} "
            f"({result['player_total']}) vs banker {' '.join(result['banker'])} "
            f"({result['banker_total']}): {result['winner']}"
        )
    dealer = result.get("dealer", {})
    parts = [f"round {payload.get('round_id')}: dealer {' '.join(dealer.get('cards', []))}"]
    if "total" in dealer:
        parts[0] += f" ({dealer['total']})"
    if "player_cards" in result:
        parts.append(f"players' cards {' '.join(result['player_cards'])}")
        won = {bet: net for bet, net in result.get("side_bets", {}).items() if net > 0}
        if won:
            parts.append("side bets won: " + ", ".join(f"{b} {n:+g}" for b, n in won.items()))
    for box in result.get("boxes", []):
        hands = "; ".join(
            f"{' '.join(hand['cards'])} {hand.get('result', '')}" for hand in box.get("hands", [])
        )
        parts.append(f"box {box.get('box')}: {hands}")
    return " | ".join(parts) if len(parts) > 1 else _summary(payload)


def _summary(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, separators=(", ", ": "), sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def run_demo(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    from controller.runtime import TableRuntime
    from controller.table.table import JournaledTable
    from drivers.shoe.driver import ShoeConfig, ShoeDriver
    from simulators.dealer import DealerSimulator
    from simulators.platform import PlatformSimulator, SupervisorSimulator
    from simulators.shoe.simulator import FaultPlan, ShoeSimulator

    with tempfile.TemporaryDirectory(prefix="livetable-demo-") as workdir:
        work = Path(workdir)
        journal_path = Path(args.journal) if args.journal else work / "table.journal"
        config = TableConfig(
            table_id="demo",
            game=args.game,
            betting_s=args.betting_s,
            decision_s=args.decision_s,
            dealer_idle_s=args.dealer_idle_s,
            journal_path=journal_path,
        )
        faults = FaultPlan(
            garbage_rate=args.line_noise,
            corrupt_rate=args.line_noise,
            duplicate_rate=args.line_noise,
        )
        console = ConsoleTable(out, args.json)
        shoe = ShoeSimulator(
            args.protocol,
            work / "shoe",
            seed=args.seed,
            cut_card_depth=args.cut_card_depth,
            faults=faults,
        )
        table, start_effects = JournaledTable.open(config, at=time.time())
        runtime = TableRuntime(table, console)
        console.submit = runtime.submit
        platform = PlatformSimulator(runtime.submit, time.time, rounds=args.rounds, seed=args.seed)
        supervisor = SupervisorSimulator(runtime.submit, time.time)
        console.observers = [platform, supervisor]
        dealer = DealerSimulator(shoe, pace_s=args.pace_s, on_shuffled=supervisor.dealer_shuffled)
        console.dealer = dealer
        driver = ShoeDriver(
            ShoeConfig(port=str(work / "shoe"), protocol=args.protocol),
            runtime.events,  # type: ignore[arg-type]
        )
        console.shoe_driver = driver
        if not args.json:
            print(
                f"livetable demo: {args.game}, {args.rounds} round(s), shoe protocol "
                f"{args.protocol} on {shoe.link}, journal {journal_path}",
                file=out,
                flush=True,
            )
        deadline = time.monotonic() + args.timeout_s
        with shoe, driver, dealer:
            runtime.carry_out(start_effects)
            while not platform.done and time.monotonic() < deadline:
                runtime.step()
        table.close()
        if not args.json:
            print(
                f"livetable demo: {platform.rounds_settled} round(s) finished, "
                f"{dealer.cards_drawn} card(s) drawn, {runtime.events_handled} event(s) journaled",
                file=out,
                flush=True,
            )
        return 0 if platform.done else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run a whole simulated table (shoe on a pty, dealer, platform, supervisor)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--game", choices=GAME_IDS, default="baccarat")
    parser.add_argument("--rounds", type=int, default=5, help="rounds to play (default 5)")
    parser.add_argument(
        "--protocol",
        default="angel-eye",
        help="shoe protocol: angel-eye, ascii or native (default angel-eye)",
    )
    parser.add_argument("--seed", type=int, default=1, help="shuffle and decisions (default 1)")
    parser.add_argument("--pace-s", type=float, default=0.2, help="dealer's pause per card")
    parser.add_argument("--betting-s", type=float, default=1.0, help="betting window")
    parser.add_argument("--decision-s", type=float, default=2.0, help="decision deadline")
    parser.add_argument(
        "--dealer-idle-s",
        type=float,
        default=3.0,
        help="a card expected for longer than this pauses the table (a card lost on a noisy "
        "line is only noticed this way)",
    )
    parser.add_argument("--cut-card-depth", type=int, default=14)
    parser.add_argument(
        "--line-noise",
        type=float,
        default=0.0,
        help="rate of garbage, corrupted and duplicated frames on the serial line",
    )
    parser.add_argument("--journal", help="journal file (default: a temporary one)")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="give up after this")
    parser.add_argument("--json", action="store_true", help="print every effect as JSON")
    parser.set_defaults(func=run_demo)
