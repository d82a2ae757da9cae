"""``livetable sim shoe``: run a simulated shoe on a pty behind a symlink until told to stop.

Control it by typing commands on stdin (``draw``, ``unplug 2``, ``help``...) or by
connecting to ``--control`` (a Unix socket, one command a line, one answer a line), e.g.
``socat - UNIX-CONNECT:/tmp/shoe.ctl``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from types import FrameType

from controller.kernel.cli_support import (
    examples,
    non_negative_int,
    non_negative_seconds,
    positive_int,
    rate_0_1,
)
from drivers.shoe.registry import protocol, protocol_names
from simulators.shoe.control import execute
from simulators.shoe.simulator import FaultPlan, ShoeSimulator

HELP = """Run a simulated card shoe on a real pseudo-terminal, behind a symlink that the
table's [shoe] port (or livetable shoe monitor --port) names, until told to stop.

Control it by typing commands on stdin (draw, unplug 2, help...) or through the Unix socket
given with --control: one command a line, one answer a line, for example with
socat - UNIX-CONNECT:/tmp/shoe.ctl. It speaks the table's own protocol codecs, and injects
the faults asked for below."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "shoe",
        help="a card shoe on a real pty, with fault injection",
        description=HELP,
        epilog=examples(
            "livetable sim shoe --protocol angel-eye --link /tmp/shoe",
            "livetable sim shoe --protocol angel-eye --variant wrap9 --link /tmp/shoe "
            "--control /tmp/shoe.ctl --no-stdin --garbage-rate 0.01 --pull-every 200",
        ),
    )
    parser.add_argument("--protocol", choices=protocol_names(), required=True)
    parser.add_argument("--link", type=Path, required=True, help="symlink to the pty's slave")
    parser.add_argument(
        "--seed", type=non_negative_int, default=0, help="the shuffle's seed (default 0)"
    )
    parser.add_argument("--decks", type=positive_int, default=8, help="decks in the shoe")
    parser.add_argument(
        "--order",
        default="shuffled",
        help="the order of each new shoe's cards: shuffled (default), factory (decks in "
        "new-deck order, cut), riffle:N (factory order riffled N times, cut) or a file of "
        "cards separated by spaces, the first dealt first",
    )
    parser.add_argument(
        "--cut-card-depth",
        type=non_negative_int,
        default=14,
        help="cards left behind the cut card",
    )
    parser.add_argument("--truth", type=Path, help="append every emitted event as JSON lines")
    parser.add_argument("--control", type=Path, help="Unix socket for control commands")
    parser.add_argument(
        "--no-stdin", action="store_true", help="ignore stdin (run until SIGINT/SIGTERM)"
    )
    for name in protocol_names():  # each protocol's shoe settings (Angel Eye: --variant...)
        protocol(name).speaker.add_arguments(parser)
    faults = parser.add_argument_group("fault injection (rates are probabilities 0-1)")
    for name, help_text in (
        ("garbage-rate", "garbage bytes before a frame"),
        ("corrupt-rate", "a frame with a spoilt checksum"),
        ("duplicate-rate", "a frame sent twice"),
        ("drop-rate", "a frame never sent"),
        ("bytewise-rate", "a frame written one byte at a time"),
        ("unreadable-rate", "a card whose face cannot be read"),
        ("foreign-rate", "a ninth copy of a face instead of the next card"),
    ):
        faults.add_argument(f"--{name}", type=rate_0_1, default=0.0, help=help_text)
    faults.add_argument(
        "--pull-every",
        type=non_negative_int,
        default=0,
        help="pull the cable every N cards (0: never)",
    )
    faults.add_argument(
        "--pull-s",
        type=non_negative_seconds,
        default=0.5,
        help="how long the cable stays out (default 0.5)",
    )
    faults.add_argument(
        "--stuck-every", type=non_negative_int, default=0, help="jam every Nth card (0: never)"
    )
    faults.add_argument(
        "--stuck-s",
        type=non_negative_seconds,
        default=3.0,
        help="how long a jammed card stays silent (default 3)",
    )
    parser.set_defaults(func=run)


def _faults(args: argparse.Namespace) -> FaultPlan:
    return FaultPlan(
        garbage_rate=args.garbage_rate,
        corrupt_rate=args.corrupt_rate,
        duplicate_rate=args.duplicate_rate,
        drop_rate=args.drop_rate,
        bytewise_rate=args.bytewise_rate,
        unreadable_rate=args.unreadable_rate,
        foreign_rate=args.foreign_rate,
        pull_every=args.pull_every,
        pull_seconds=args.pull_s,
        stuck_every=args.stuck_every,
        stuck_seconds=args.stuck_s,
    )


def _serve_control(
    server: socket.socket, simulator: ShoeSimulator, lock: threading.Lock, done: threading.Event
) -> None:
    server.settimeout(0.2)
    while not done.is_set():
        try:
            connection, _ = server.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        threading.Thread(
            target=_serve_client, args=(connection, simulator, lock), daemon=True
        ).start()


def _serve_client(
    connection: socket.socket, simulator: ShoeSimulator, lock: threading.Lock
) -> None:
    connection.settimeout(None)  # not the listener's accept timeout: a person may type slowly
    # Two streams: writing through a read/write text stream drops what it has read ahead,
    # which would lose the second of two commands sent together.
    with (
        connection,
        connection.makefile("r", encoding="utf-8", newline="\n") as commands,
        connection.makefile("w", encoding="utf-8", newline="\n") as answers,
    ):
        for line in commands:
            with lock:
                answer = execute(simulator, line)
            answers.write(answer + "\n")
            answers.flush()


def run(args: argparse.Namespace) -> int:
    simulator = ShoeSimulator(
        args.protocol,
        args.link,
        seed=args.seed,
        decks=args.decks,
        cut_card_depth=args.cut_card_depth,
        order=args.order,
        faults=_faults(args),
        truth_path=args.truth,
        **protocol(args.protocol).speaker.settings_from(args),
    )
    done = threading.Event()
    lock = threading.Lock()

    def stop(_signal: int, _frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, stop)
    server: socket.socket | None = None
    with simulator:
        print(f"shoe ({args.protocol}) on {args.link} -> {simulator.slave_path}", flush=True)
        described = simulator.speaker.describe()
        if described is not None:
            print(described, flush=True)
        if args.control is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(args.control)
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(args.control))
            server.listen()
            threading.Thread(
                target=_serve_control, args=(server, simulator, lock, done), daemon=True
            ).start()
        try:
            if not args.no_stdin:
                for line in sys.stdin:
                    if line.strip().lower() in ("quit", "exit"):
                        done.set()
                        break
                    with lock:
                        print(execute(simulator, line), flush=True)
                else:
                    if args.control is None:
                        done.set()
            while not done.wait(0.2):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            done.set()
            if server is not None:
                server.close()
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(args.control)
    return 0
