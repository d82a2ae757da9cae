"""``livetable demo``: a whole simulated table in one process, with real parts where it counts.

A shoe simulator speaks the real protocol on a real pty; the production shoe driver reads it
through pyserial; every event goes through the journal (SQLite) into the table's state
machine, whose effects the runtime carries out: the simulated dealer draws the cards the
table asks for, the simulated platform opens rounds and answers decisions, the simulated
supervisor declares new shoes and resolves pauses. What the table publishes is printed.

With ``--camera`` the table has a camera too: the simulated dealer lays every round card on
the camera simulator's felt (face down for the hole card, split hands moved apart, cleared at
the round's end), the shoe misreads some cards (``--misread-rate``), and the table's
``AskCamera`` questions are answered by the camera reader (``controller/camera_reader.py``)
from the simulated camera's pixels with an enrolled deck. Without ``--deck`` a deck of the
chosen ``--design`` is enrolled once from 1,040 pictures the simulated camera takes of the
cards laid in a slot (as ``livetable camera enrol`` does) and cached under
``$LIVETABLE_CACHE_DIR/decks`` (default ``~/.cache/livetable/decks``).

(The MQTT daemon, ``livetable run``, is the next step: it will replace the printing and the
in-process platform with a broker.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from controller.errors import ConfigurationError
from controller.runtime import Published
from controller.table.effects import (
    AskCamera,
    CommandAnswered,
    EventRejected,
    PublishEvent,
    TellDealer,
)
from controller.table_config import GAME_IDS, TableConfig

if TYPE_CHECKING:
    from controller.camera_reader import CameraAnswer

QUIET_EVENTS = frozenset({"betting_closed"})
# The demo's deck is enrolled as a studio enrols its own (`livetable camera enrol`): pictures
# of every card laid in a slot, taken by the table camera (here the camera simulator), 20 of
# each card: 5 in each of four camera set-ups and slots, none of them a set-up the demo then
# plays with. Enrolled from rendered scenes instead (docs/vision.md's synthetic pictures),
# its calibration met a misread at 0.926 and the deck abstained on 37-46 % of blackjack reads
# on the felt; enrolled from the felt, 11-26 % (docs/camera.md).
DEMO_DECK_LAYOUT = "blackjack-classic"
DEMO_DECK_SETUPS = (
    (100, "box1.hand1.card1"),
    (101, "box3.hand1.card1"),
    (102, "dealer.card1"),
    (103, "box2.hand1.card1"),
)
DEMO_DECK_PICTURES_PER_SETUP = 5
# With a camera the shoe misreads this share of round cards, so the camera has work to do.
DEFAULT_CAMERA_MISREAD_RATE = 0.1


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
        self.reader: Any = None  # the camera reader, with --camera
        self.felt: Any = None  # the camera simulator, for checking the camera's answers
        self.camera_reads = {"read": 0, "abstained": 0, "wrong": 0}
        self._print_lock = threading.Lock()

    def _print(self, text: str) -> None:
        # One write per line under a lock: the camera reader prints from its own thread.
        with self._print_lock:
            self.out.write(text + "\n")
            self.out.flush()

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
        if self.reader is not None:
            self.reader.ask(effect)
            return
        # Without --camera the table has none: the answer is an abstention, which pauses the
        # round for the supervisor exactly as a camera that could not read the card would.
        from controller.table.events import CameraRead

        self.submit(CameraRead(effect.position, None, self.clock(), effect.card_number))

    def camera_answered(self, answer: CameraAnswer) -> None:
        """The camera reader's answer (on its thread), checked against the simulated felt."""
        truth = None
        if self.felt is not None and answer.slot is not None:
            truth = self.felt.dealt().get(answer.slot)
        if answer.card is None:
            self.camera_reads["abstained"] += 1
        elif answer.card == truth:
            self.camera_reads["read"] += 1
        else:
            self.camera_reads["wrong"] += 1
        from controller.camera_reader import FACE_UP_REASONS

        hole = answer.ask.reason not in FACE_UP_REASONS
        if self.as_json:
            record: dict[str, Any] = {
                "slot": answer.slot,
                "reason": answer.ask.reason,
                "read": answer.card is not None,
                "why": answer.why,
                "confidence": round(answer.confidence, 4),
                "correct": None if answer.card is None else answer.card == truth,
            }
            if not hole:  # the hole card's face is for the table to publish, not the camera
                record["card"] = None if answer.card is None else str(answer.card)
            self._print(json.dumps({"camera_answer": record}, sort_keys=True))
            return
        where = f"at {answer.slot or answer.ask.position} ({answer.ask.reason})"
        if answer.card is None:
            self._print(f"camera> abstained {where}: {answer.why}")
        elif hole:
            # Turned over by now, but the hole card's face is for the table to publish, even
            # when the camera misread it.
            verdict = (
                "read the hole card" if answer.card == truth else "WRONG: misread the hole card"
            )
            self._print(f"camera> {verdict} {where}")
        elif answer.card != truth:
            self._print(f"camera> WRONG: read {answer.card} {where}, the card there is {truth}")
        else:
            self._print(f"camera> read {answer.card} {where}")


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


def cache_dir() -> Path:
    """``$LIVETABLE_CACHE_DIR``, else ``~/.cache/livetable`` (as the card artwork's cache)."""
    configured = os.environ.get("LIVETABLE_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "livetable"


def demo_deck_path(design: str, model_digest: str) -> Path:
    """Where the demo caches its enrolled deck of ``design`` for the model ``model_digest``.

    The name carries the deck file's format and the locator's revision: a deck cached by an
    older livetable still loads, but would read without what the newer enrolment adds (the
    corner thumbnails, the corners an older locator missed)."""
    from vision.deck import FORMAT_VERSION
    from vision.locate import LOCATOR_REVISION

    pictures = 52 * DEMO_DECK_PICTURES_PER_SETUP * len(DEMO_DECK_SETUPS)
    name = f"{design}-felt{pictures}-v{FORMAT_VERSION}-l{LOCATOR_REVISION}-{model_digest[:16]}.npz"
    return cache_dir() / "decks" / name


def demo_deck(design: str, out: TextIO) -> Path:
    """The enrolled deck of ``design`` for the demo: from the cache, or enrolled now (about
    a minute) from 1,040 pictures the camera simulator takes of the cards laid in a slot, with
    the collector of ``livetable camera enrol``, and cached. The file name carries the
    model's digest: a retrained model enrols again rather than load a deck it refuses."""
    from controller.games.cards import ALL_FACES, Card
    from drivers.camera_enrol import collect_pictures
    from simulators.camera import SimulatedCamera
    from vision.enrol import enrol, labelled_images, read_image
    from vision.model import DEFAULT_MODEL, CornerClassifier

    classifier = CornerClassifier(DEFAULT_MODEL)
    path = demo_deck_path(design, classifier.digest)
    if path.exists():
        print(f"livetable demo: using the enrolled {design} deck cached in {path}", file=out)
        return path
    pictures = 52 * DEMO_DECK_PICTURES_PER_SETUP * len(DEMO_DECK_SETUPS)
    print(
        f"livetable demo: enrolling a {design} deck from {pictures:,} pictures taken by the "
        f"simulated table camera (once: it is cached in {path}) ...",
        file=out,
        flush=True,
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="livetable-demo-deck-") as folder:
        for number, (seed, slot) in enumerate(DEMO_DECK_SETUPS, start=1):
            camera = SimulatedCamera(DEMO_DECK_LAYOUT, design, seed=seed)

            def lay(
                card: Card, _k: int, _n: int, camera: SimulatedCamera = camera, slot: str = slot
            ) -> None:
                camera.clear()
                camera.deal(slot, card)

            # The collector counts the pictures already in the folder: each set-up adds five.
            target = number * DEMO_DECK_PICTURES_PER_SETUP
            collect_pictures(camera, slot, ALL_FACES, target, lay, Path(folder), timeout_s=10.0)
        examples = ((item.card, read_image(item.path)) for item in labelled_images(Path(folder)))
        deck = enrol(classifier, examples, name=f"{design} (livetable demo)")
    deck.save(path)  # all or nothing: a stopped demo leaves no half-written cache
    print(
        f"livetable demo: enrolled in {time.monotonic() - started:.0f} s "
        f"(threshold {deck.threshold:.3f})",
        file=out,
        flush=True,
    )
    return path


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
        misread_rate = args.misread_rate
        if misread_rate is None:
            misread_rate = DEFAULT_CAMERA_MISREAD_RATE if args.camera else 0.0
        reader = _camera_reader(args, console, runtime.submit, out) if args.camera else None
        dealer = DealerSimulator(
            shoe,
            pace_s=args.pace_s,
            on_shuffled=supervisor.dealer_shuffled,
            felt=console.felt,
            misread_rate=misread_rate,
        )
        console.dealer = dealer
        # The dealer watches the table too: splits, the hole card's reveal, the round's end.
        console.observers = [platform, supervisor, dealer]
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
        with contextlib.ExitStack() as running:
            for part in (shoe, driver, dealer, reader):
                if part is not None:
                    running.enter_context(part)  # type: ignore[arg-type]
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
            if reader is not None:
                reads = console.camera_reads
                print(
                    f"livetable demo: the camera read {reads['read']} card(s), abstained on "
                    f"{reads['abstained']}, read {reads['wrong']} wrong",
                    file=out,
                    flush=True,
                )
        return 0 if platform.done else 1


def _camera_reader(
    args: argparse.Namespace, console: ConsoleTable, submit: Any, out: TextIO
) -> Any:
    """The simulated camera over the felt and the reader answering the table from it."""
    try:
        import cv2  # noqa: F401
    except ImportError as error:
        raise ConfigurationError(
            "--camera needs OpenCV: pip install 'livetable[vision]'"
        ) from error
    from controller.camera_reader import CameraReader, ReaderConfig
    from simulators.camera import SimulatedCamera

    # With --json, stdout is JSON lines only: the enrolment's progress goes to stderr.
    deck = (
        Path(args.deck) if args.deck else demo_deck(args.design, sys.stderr if args.json else out)
    )
    camera = SimulatedCamera(args.game, args.design, seed=args.seed, clock=time.time)
    console.felt = camera
    reader = CameraReader(
        camera,
        submit,
        config=ReaderConfig(deck=deck, deadline_s=args.camera_deadline_s),
        on_answer=console.camera_answered,
    )
    console.reader = reader
    if not args.json:
        print(
            f"livetable demo: camera simulator over the {args.game} layout, {args.design} cards, "
            f"deck {deck}",
            file=out,
            flush=True,
        )
    return reader


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
    parser.add_argument(
        "--camera",
        action="store_true",
        help="add a simulated camera: the dealer lays the cards on its felt and the camera "
        "reads the cards the shoe misreads",
    )
    parser.add_argument(
        "--deck",
        help="enrolled deck for the camera (default: enrol one of --design once and cache it)",
    )
    parser.add_argument(
        "--design", default="kde-standard", help="card design on the felt (default kde-standard)"
    )
    parser.add_argument(
        "--misread-rate",
        type=float,
        default=None,
        help=f"share of round cards the shoe misreads (default {DEFAULT_CAMERA_MISREAD_RATE} "
        "with --camera, else 0)",
    )
    parser.add_argument(
        "--camera-deadline-s",
        type=float,
        default=2.0,
        help="how long the camera may look for a card before abstaining",
    )
    parser.add_argument("--journal", help="journal file (default: a temporary one)")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="give up after this")
    parser.add_argument("--json", action="store_true", help="print every effect as JSON")
    parser.set_defaults(func=run_demo)
