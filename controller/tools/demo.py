"""``livetable demo``: the table daemon with simulated devices and people around it.

The demo runs what a studio runs: ``livetable run``'s daemon (one per table: in this process
for one table or with ``--camera``, else one ``livetable run`` process each), each reading a
shoe simulator that speaks the real protocol on a real pseudo-terminal, journaling every
event and speaking the MQTT API to a broker. Around it, everyone talks to the table only
over MQTT, as people would (``simulators/mqtt_bots.py``): a dealer draws the card the table
asks for (now and then one out of turn: ``--mistake-rate``), the shoe misreads some cards
(``--misread-rate``) and the serial line is noisy if asked (``--line-noise``), so the table
pauses; a supervisor resolves each pause after a moment (``--resolve-delay-s``), entering
by hand a card neither the shoe nor the camera could read (the dealer saw it on the felt);
a platform opens rounds and answers decisions.

What you see is what an MQTT subscriber sees: on a terminal, a live view of every table
(phase, shoe, hands and totals, the decision awaited and its countdown, the result of each
bet, pauses and how they were resolved, the last events); otherwise one line per event;
with ``--json`` every message of the tables' topics (availability, state, events in ``seq``
order, the dealer's line) as one JSON object per line (``topic``, ``payload``). The view is
the API client's :class:`~controller.client.api_client.StudioClient`: one account's connection to
every table.

With ``--console`` the supervisors' web console (``livetable console``) runs beside it, on a
free loopback port against the demo's broker; with ``--supervisor manual`` the simulated
supervisor stands aside and a person resolves the pauses there. Ctrl-C and SIGTERM stop the
tables (and the console) and remove the temporary work folder.

Without ``--broker`` an MQTT broker (amqtt) runs inside the demo on a free loopback port
with one account, printed so that another client can watch, e.g.
``mosquitto_sub -h 127.0.0.1 -p PORT -u demo -P PASSWORD -i demo -t 'livetable/#' -v``.

Every client of the demo (daemons, people, view, console) speaks one MQTT version:
``--mqtt`` (or ``?mqtt=`` in the ``--broker`` URL), MQTT 5 against a ``--broker`` unless
told, 3.1.1 against the embedded broker (amqtt speaks nothing else). nats-server speaks
3.1.1 only and refuses MQTT 5 in its CONNACK; the broker check says so in one line ("refused
MQTT 5: try --mqtt 3.1.1").

With ``--camera`` the table has a camera too: the dealer lays every round card on the camera
simulator's felt and the table's camera reader reads the cards the shoe misreads. Without
``--deck`` a deck of ``--design`` is enrolled once from 1,040 pictures the simulated camera
takes (as ``livetable camera enrol`` does) and cached under ``$LIVETABLE_CACHE_DIR/decks``
(default ``~/.cache/livetable/decks``).

examples:
  livetable demo
  livetable demo --game blackjack-classic --rounds 10 --tables 2
  livetable demo --json --rounds 3 --broker mqtt://127.0.0.1:1883
  livetable demo --tables 2 --mqtt 3.1.1 --broker mqtt://127.0.0.1:1883
  livetable demo --console --supervisor manual
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from controller.kernel.errors import ConfigurationError
from controller.table.config import GAME_IDS

# The demo's parts, each a module of its own; their names are the demo's too (other tools
# and the tests import them from here).
from controller.tools.demo_broker import (
    CHECK_ANSWER_S,
    DEFAULT_BROKER_MQTT,
    EMBEDDED_BROKER_MQTT,
    MQTT_VERSIONS,
    TOPIC_PREFIX,
    BrokerAddress,
    broker_argument,
    check_broker,
    parse_broker_url,
)
from controller.tools.demo_console import ConsoleProcess
from controller.tools.demo_deck import (
    DEMO_DECK_PICTURES_PER_SETUP,
    DEMO_DECK_SETUPS,
    cache_dir,
    demo_deck,
    demo_deck_path,
)
from controller.tools.demo_table import (
    DEFAULT_CAMERA_MISREAD_RATE,
    DEFAULT_MISREAD_RATE,
    SETTLE_S,
    DemoTable,
    InProcessDaemon,
    write_table_config,
)
from controller.tools.demo_watcher import Printer, Watcher, watcher_account

__all__ = [
    "DEMO_DECK_PICTURES_PER_SETUP",
    "DEMO_DECK_SETUPS",
    "BrokerAddress",
    "ConsoleProcess",
    "DemoTable",
    "InProcessDaemon",
    "Printer",
    "Watcher",
    "cache_dir",
    "check_broker",
    "deliberate_faults_logged_as_debug",
    "demo_deck",
    "demo_deck_path",
    "parse_broker_url",
    "register",
    "run_demo",
    "watcher_account",
    "write_table_config",
]

logger = logging.getLogger(__name__)

# Rates of trouble, so that pauses happen and the supervisor has something to do (the shoe's
# misreads are the table's: controller.tools.demo_table).
DEFAULT_MISTAKE_RATE = 0.1
# A person at the console takes a moment to resolve a pause: long enough to be seen.
DEFAULT_RESOLVE_DELAY_S = 1.5
# A table whose daemon has not said "online" this long after it started cannot reach the
# broker (its daemon logs why, at once): the demo stops instead of waiting for its timeout.
ONLINE_WITHIN_S = 30.0
# The live view's redraws per second (the decision countdown moves in tenths).
REFRESH_PER_S = 8
# A studio's worth of tables (each its own livetable run process); the live view shows at
# most MAX_SHOWN, so more are followed one line per event, as with --plain.
MAX_TABLES = 50
MAX_SHOWN = 8
DEFAULT_TIMEOUT_S = 600.0


def table_count(text: str) -> int:
    """``--tables``' type: 1 to :data:`MAX_TABLES`."""
    from controller.kernel.cli_support import positive_int

    value = positive_int(text)
    if value > MAX_TABLES:
        raise argparse.ArgumentTypeError(f"{value} is more than the demo's {MAX_TABLES} tables")
    return value


# -- the demo -------------------------------------------------------------------------------


def table_ids(tables: int) -> list[str]:
    """The demo's table ids: ``demo`` alone, ``demo1``... when there are several."""
    return ["demo"] if tables == 1 else [f"demo{n}" for n in range(1, tables + 1)]


def _check_work_dir(args: argparse.Namespace) -> None:
    """A work folder that already holds a table's journal is refused: its shoe was dealt
    by a simulator that is gone, and a fresh one would continue it with other cards."""
    if not args.work_dir:
        return
    for table_id in table_ids(args.tables):
        folder = Path(args.work_dir) / table_id
        if folder.exists():
            raise ConfigurationError(
                f"--work-dir {args.work_dir} already holds table {table_id} from an earlier "
                f"demo ({folder}); its journal's shoe cannot be continued by a new simulated "
                "shoe: give an empty or new folder, or remove that one"
            )


class Stopped(KeyboardInterrupt):
    """SIGTERM, taken as Ctrl-C is: the demo stops its tables and removes its work folder."""


@contextlib.contextmanager
def _sigterm_as_ctrl_c() -> Any:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a handler (a demo run inside a test's thread)
        return

    def stop(_signum: int, _frame: Any) -> None:
        raise Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _DeliberateFault(logging.Filter):
    """The shoe protocol's warnings about what came down the line, lowered to debug: in the
    demo every misread, garbled or lost frame is one the simulated shoe made on purpose, and
    the table's events say each (a ``misread`` pause, ``cards_lost``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


@contextlib.contextmanager
def deliberate_faults_logged_as_debug() -> Any:
    """While the demo runs, the shoe protocol's warnings of the in-process daemon are debug
    lines (``-vv`` shows them); a daemon process logs to its own file."""
    shoe_logger = logging.getLogger("drivers.shoe.sessions")
    lowered = _DeliberateFault()
    shoe_logger.addFilter(lowered)
    try:
        yield
    finally:
        shoe_logger.removeFilter(lowered)


def run_demo(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    with _sigterm_as_ctrl_c(), deliberate_faults_logged_as_debug():
        return _run_demo(args, out)


def _run_demo(args: argparse.Namespace, out: TextIO) -> int:
    _check_work_dir(args)
    live = not args.json and not args.plain and out.isatty()
    if live and args.tables > MAX_SHOWN:
        print(
            f"livetable demo: {args.tables} tables are more than the live view shows "
            f"({MAX_SHOWN}): one line per event instead",
            file=out,
        )
        live = False
    # With --json, stdout is JSON lines only: everything said to a person goes to stderr.
    say = Printer(sys.stderr if args.json else out)
    deck = None
    if args.camera:
        deck = _camera_deck(args, sys.stderr if args.json else out)
    ids = table_ids(args.tables)
    with contextlib.ExitStack() as running:
        if args.broker:
            broker = parse_broker_url(args.broker, args.tls_ca)
            if args.mqtt is not None:
                if broker.protocol_named and broker.mqtt_protocol != args.mqtt:
                    raise ConfigurationError(
                        f"--mqtt {args.mqtt} and the --broker URL's mqtt={broker.mqtt_protocol} "
                        "disagree: give one"
                    )
                broker = dataclasses.replace(broker, mqtt_protocol=args.mqtt)
        else:
            if args.mqtt not in (None, EMBEDDED_BROKER_MQTT):
                raise ConfigurationError(
                    f"the embedded broker (amqtt) speaks MQTT {EMBEDDED_BROKER_MQTT} only: "
                    f"--mqtt {args.mqtt} needs a --broker that speaks it"
                )
            from simulators.embedded_broker import EmbeddedBroker

            # With the console, every person signs in under a name of their own.
            embedded = running.enter_context(EmbeddedBroker(any_account=args.console))
            broker = BrokerAddress(
                embedded.host,
                embedded.port,
                (embedded.username, embedded.password),
                EMBEDDED_BROKER_MQTT,
            )
        where = "embedded broker (amqtt)" if not args.broker else "broker"
        say(
            f"livetable demo: {where} at {broker.url}; watch it with: "
            f"{broker.watch_command()}"
        )
        if args.broker:
            check_broker(broker, ids, watcher_account(broker).name)
        if args.work_dir:
            work = Path(args.work_dir)
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = Path(
                running.enter_context(tempfile.TemporaryDirectory(prefix="livetable-demo-"))
            )
        from controller.tools.demo_view import DemoWatch, summary_line

        watch = DemoWatch(TOPIC_PREFIX, ids)
        lines = Printer(out) if args.json else say
        watcher = Watcher(broker, watch, None if live else lines, args.json)
        running.callback(watcher.close)
        if not watcher.wait_connected(CHECK_ANSWER_S):
            refused = watcher.studio.refused
            raise ConfigurationError(
                f"the broker at {broker.url} "
                + (f"refused the demo's view: {refused}" if refused else "did not answer")
            )
        console_url = ""
        if args.console:
            console = ConsoleProcess(work, broker)
            running.callback(console.stop)
            console_url = console.start()
            how = (
                "sign in under any name, e.g. supervisor floor, with any password (the demo's "
                "broker takes every account)"
                if not args.broker
                else "sign in with an account of that broker"
            )
            say(f"livetable demo: the supervisors' console at {console_url} : {how}")

        def stood_aside(table_id: str, said: str) -> None:
            watch.note(table_id, said)
            if not live:
                say(f"{table_id} {said}")

        in_process = args.tables == 1 or args.camera
        tables = [
            DemoTable(index, table_id, args, work, broker, in_process, deck, stood_aside)
            for index, table_id in enumerate(ids)
        ]
        if not args.json:
            how = "in this process" if in_process else "one `livetable run` process each"
            say(
                f"livetable demo: {len(tables)} {args.game} table(s) ({how}), {args.rounds} "
                f"round(s) each, shoe protocol {args.protocol}, work folder {work}"
            )
        started = time.monotonic()
        for table in tables:
            running.callback(table.stop)
            table.start()
        header = (
            f"livetable demo · {args.game} · broker {broker.url} · "
            f"Ctrl-C stops\n"
            + (f"console: {console_url}" if console_url else f"watch: {broker.watch_command()}")
        )
        ended: dict[str, Any] = {}

        def settle() -> None:
            """Once: note what ended how, then stop every table (the live view draws its
            last frame after it, so that it shows each table closing)."""
            if not ended:
                ended["elapsed"] = time.monotonic() - started
                ended["failed"] = [t for t in tables if not t.daemon.alive()]
                _settle(tables, watch)

        finished = _play(args, tables, watch, header, out, live, work, settle)
        unreached = [] if finished else _never_online(tables, watch)
        settle()
        elapsed, failed = ended["elapsed"], ended["failed"]
    # Every table is stopped now (availability offline), the broker too.
    if not args.json:
        for table in tables:
            with watch.lock:
                line = summary_line(
                    watch.tables[table.table_id], table.dealer.cards_drawn, args.camera
                )
            say(f"livetable demo: {line}")
        say(f"livetable demo: {elapsed:.1f} s")
    for table in failed:
        print(
            f"livetable demo: table {table.table_id} stopped: {table.daemon.why()}", file=sys.stderr
        )
    for table in unreached:
        logged = table.daemon.log() if hasattr(table.daemon, "log") else ""
        said = [line for line in logged.splitlines() if " ERROR " in line][-1:]
        print(
            f"livetable demo: table {table.table_id} never came online in {ONLINE_WITHIN_S:g} s: "
            "its daemon cannot reach the broker"
            + (f" ({said[0].split(': ', 1)[-1]})" if said else " (its error is logged above)"),
            file=sys.stderr,
        )
    for table in tables:
        for error in table.bots.errors[:5]:
            print(f"livetable demo: table {table.table_id}: {error}", file=sys.stderr)
    return 0 if finished and not failed and not unreached else 1


def verbosity(args: argparse.Namespace) -> int:
    from controller.kernel.cli_support import verbosity as counted

    return counted(args)


def _play(
    args: argparse.Namespace,
    tables: list[DemoTable],
    watch: Any,
    header: str,
    out: TextIO,
    live: bool,
    work: Path,
    settle: Callable[[], None],
) -> bool:
    """Until every table has played its rounds (True), a daemon stops or time runs out;
    the live view calls ``settle`` before its last frame."""
    timeout_s = args.timeout_s
    if timeout_s is None:
        # A person resolves the pauses: the demo waits for them as long as it takes.
        timeout_s = float("inf") if args.supervisor == "manual" else DEFAULT_TIMEOUT_S
    deadline = time.monotonic() + timeout_s
    online_by = time.monotonic() + ONLINE_WITHIN_S

    def playing() -> bool:
        return (
            not all(t.bots.done for t in tables)
            and all(t.daemon.alive() for t in tables)
            and time.monotonic() < deadline
            and not (time.monotonic() > online_by and _never_online(tables, watch))
        )

    try:
        if not live:
            while playing():
                time.sleep(0.05)
        else:
            _live(playing, watch, header, out, work, verbosity(args), settle)
    except KeyboardInterrupt:
        return False
    return all(t.bots.done for t in tables)


def _never_online(tables: list[DemoTable], watch: Any) -> list[DemoTable]:
    with watch.lock:
        return [t for t in tables if watch.tables[t.table_id].availability is None]


def _live(
    playing: Callable[[], bool],
    watch: Any,
    header: str,
    out: TextIO,
    work: Path,
    verbose: int,
    settle: Callable[[], None],
) -> None:
    from rich.console import Console
    from rich.live import Live

    from controller.kernel.logs import configure_logging
    from controller.tools.demo_view import render

    # Log lines would tear the view: while it is up they go to a file in the work folder.
    log = open(work / "demo.log", "a", encoding="utf-8")  # noqa: SIM115 - closed below
    configure_logging(verbose, stream=log)
    try:
        console = Console(file=out)
        with Live(
            console=console,
            refresh_per_second=REFRESH_PER_S,
            get_renderable=lambda: render(watch, header),
            redirect_stderr=False,
        ):
            while playing():
                time.sleep(0.1)
            settle()  # the tables close between rounds: the view shows it
            time.sleep(2 / REFRESH_PER_S)  # the last frame shows the last event
    finally:
        configure_logging(verbose)
        log.close()


def _settle(tables: list[DemoTable], watch: Any) -> None:
    """Let the last state after the last event arrive, then stop every table."""
    deadline = time.monotonic() + SETTLE_S

    def caught_up() -> bool:
        with watch.lock:
            return all(
                (seen := watch.tables[t.table_id]).state is not None
                and seen.state.get("seq") == seen.last_seq
                for t in tables
            )

    while not caught_up() and time.monotonic() < deadline:
        time.sleep(0.02)
    for table in tables:
        table.bots.stop()
    for table in tables:
        table.daemon.stop()
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline and any(
        watch.tables[t.table_id].availability != "offline" for t in tables
    ):
        time.sleep(0.02)


def _camera_deck(args: argparse.Namespace, out: TextIO) -> Path:
    try:
        import cv2  # noqa: F401
    except ImportError as error:
        raise ConfigurationError(
            "--camera needs OpenCV: pip install 'livetable[vision]'"
        ) from error
    deck = Path(args.deck) if args.deck else demo_deck(args.design, out)
    print(
        f"livetable demo: camera simulator over the {args.game} layout, {args.design} cards, "
        f"deck {deck}",
        file=out,
        flush=True,
    )
    return deck


DESCRIPTION = """\
Run simulated tables around the real table daemon (the code of livetable run), with
simulated devices and people, all over MQTT.

Each table's daemon reads a shoe simulator that speaks the real protocol on a real
pseudo-terminal, journals every event and speaks the MQTT API. A dealer draws the card the
table asks for (now and then one out of turn: --mistake-rate), the shoe misreads some cards
(--misread-rate), the serial line is noisy if asked (--line-noise), so the table pauses; a
supervisor resolves each pause after a moment (--resolve-delay-s), entering by hand a card
nobody could read; a platform opens rounds and answers decisions. They all talk to the
table only over MQTT.

On a terminal you see a live view of every table; otherwise one line per event; with
--json every message of the tables' topics as one JSON object per line (topic and
payload).

With --console the supervisors' web console runs on a free loopback port against the
demo's broker (its address is printed; sign in under any name); with --supervisor manual
no bot resolves a pause: a person does, at the console, and the demo waits for them.

Without --broker an MQTT broker (amqtt) runs inside the demo on a free loopback port, with
an account printed with a mosquitto_sub line so that another client can watch. Every
client speaks --mqtt's MQTT version (MQTT 5 against a --broker unless told; 3.1.1 for a
broker such as nats-server that speaks nothing else). With
--tables N each table is its own livetable run process (in this process with --camera).
With --camera the dealer lays the cards on a simulated felt and the camera reads the cards
the shoe misreads; without --deck a deck of --design is enrolled once and cached under
$LIVETABLE_CACHE_DIR/decks (default ~/.cache/livetable/decks)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from controller.kernel.cli_support import (
        HelpFormatter,
        add_json,
        examples,
        non_negative_int,
        non_negative_seconds,
        positive_int,
        positive_seconds,
        rate_0_1,
    )
    from drivers.shoe.registry import protocol_names

    parser = subparsers.add_parser(
        "demo",
        help="run simulated tables: the daemon, a shoe on a pty, dealer, platform and "
        "supervisor over MQTT, and a live view",
        description=DESCRIPTION,
        epilog=examples(
            "livetable demo",
            "livetable demo --game blackjack-classic --rounds 10 --tables 2",
            "livetable demo --json --rounds 3 --broker mqtt://127.0.0.1:1883",
            "livetable demo --tables 2 --mqtt 3.1.1 --broker mqtt://127.0.0.1:1883",
            "livetable demo --console --supervisor manual",
        ),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--game", choices=GAME_IDS, default="baccarat")
    parser.add_argument(
        "--rounds", type=positive_int, default=5, help="rounds to play at each table (default 5)"
    )
    parser.add_argument(
        "--tables",
        type=table_count,
        default=1,
        help=f"tables, each its own daemon and shoe, shown one above another (default 1, at "
        f"most {MAX_TABLES}; more than {MAX_SHOWN} are shown one line per event, as --plain)",
    )
    parser.add_argument(
        "--broker",
        metavar="BROKER",
        type=broker_argument,
        help="use this broker: host, host:port, mqtt://[user:password@]host[:port]"
        "[?mqtt=3.1.1], mqtts://... for TLS, or a cluster's nodes separated by commas "
        "(default: start one inside the demo on a free loopback port)",
    )
    parser.add_argument(
        "--tls-ca",
        metavar="FILE",
        help="speak TLS to the --broker, trusting this CA file (default with mqtts://: the "
        "system's CAs)",
    )
    parser.add_argument(
        "--mqtt",
        choices=MQTT_VERSIONS,
        default=None,
        help=f"the MQTT version the demo's tables, people and view speak (default "
        f"{DEFAULT_BROKER_MQTT} with --broker, which mosquitto speaks; {EMBEDDED_BROKER_MQTT} "
        "for the embedded broker, and for nats-server, which speaks nothing else)",
    )
    parser.add_argument(
        "--protocol", choices=protocol_names(), default="angel-eye", help="shoe protocol"
    )
    parser.add_argument(
        "--seed", type=non_negative_int, default=1, help="shuffle and decisions (default 1)"
    )
    parser.add_argument(
        "--pace-s",
        type=non_negative_seconds,
        default=0.2,
        help="the dealer's pause before each card (default 0.2)",
    )
    parser.add_argument(
        "--betting-s", type=positive_seconds, default=1.0, help="betting window (default 1)"
    )
    parser.add_argument(
        "--decision-s", type=positive_seconds, default=3.0, help="decision deadline (default 3)"
    )
    parser.add_argument(
        "--dealer-idle-s",
        type=positive_seconds,
        default=5.0,
        help="a card expected for longer than this pauses the table (a card lost on a noisy "
        "line is only noticed this way; default 5)",
    )
    parser.add_argument(
        "--cut-card-depth",
        type=non_negative_int,
        default=14,
        help="cards behind the cut card (default 14)",
    )
    parser.add_argument(
        "--misread-rate",
        type=rate_0_1,
        default=None,
        help=f"share of round cards the shoe misreads (default {DEFAULT_MISREAD_RATE}; "
        f"{DEFAULT_CAMERA_MISREAD_RATE} with --camera)",
    )
    parser.add_argument(
        "--mistake-rate",
        type=rate_0_1,
        default=DEFAULT_MISTAKE_RATE,
        help="share of rounds in which the dealer draws a card out of turn while bets are "
        f"taken (default {DEFAULT_MISTAKE_RATE})",
    )
    parser.add_argument(
        "--line-noise",
        type=rate_0_1,
        default=0.0,
        help="rate of garbage, corrupted and duplicated frames on the serial line (default 0)",
    )
    parser.add_argument(
        "--resolve-delay-s",
        type=non_negative_seconds,
        default=DEFAULT_RESOLVE_DELAY_S,
        help=f"how long the supervisor takes to resolve a pause (default "
        f"{DEFAULT_RESOLVE_DELAY_S})",
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
        "--camera-deadline-s",
        type=positive_seconds,
        default=2.0,
        help="how long the camera may look for a card before abstaining (default 2)",
    )
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        help="keep the tables' configuration, journals, shoe truth and logs here (default: a "
        "temporary folder, removed at the end)",
    )
    parser.add_argument(
        "--timeout-s",
        type=positive_seconds,
        default=None,
        help=f"give up after this (default {DEFAULT_TIMEOUT_S:g}; none with --supervisor manual)",
    )
    parser.add_argument(
        "--console",
        action="store_true",
        help="serve the supervisors' web console (livetable console) on a free loopback port "
        "against the demo's broker, and print its address",
    )
    parser.add_argument(
        "--supervisor",
        choices=("bot", "manual"),
        default="bot",
        help="bot: the simulated supervisor resolves every pause (default); manual: it stands "
        "aside and a person resolves them (at the console: --console)",
    )
    add_json(parser)
    parser.add_argument(
        "--plain",
        action="store_true",
        help="one line per event even on a terminal (no live view)",
    )
    parser.set_defaults(func=run_demo)
