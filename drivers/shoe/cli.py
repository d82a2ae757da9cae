"""``livetable shoe monitor``: print every event a shoe sends, for commissioning a table.

Opens the port exactly as the table does (same driver, same reconnects) and prints one line
an event, or one JSON object a line with ``--json``. Statistics go to stderr at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import queue
import sys
import time
from datetime import datetime
from typing import Any

from controller.cli_support import default_to_help
from drivers.shoe.driver import PARITIES, ShoeConfig, ShoeDriver
from drivers.shoe.events import ShoeEvent
from drivers.shoe.sessions import PROTOCOL_NAMES


def register(subparsers: argparse._SubParsersAction) -> None:
    shoe = subparsers.add_parser("shoe", help="card-shoe scanner tools", description=__doc__)
    shoe_commands = shoe.add_subparsers(dest="shoe_command", metavar="WHAT")
    default_to_help(shoe)
    monitor = shoe_commands.add_parser(
        "monitor", help="print each decoded shoe event", description=__doc__
    )
    monitor.add_argument(
        "--port", required=True, help="device path, by-id link, or socket://host:port"
    )
    monitor.add_argument("--protocol", choices=PROTOCOL_NAMES, required=True)
    monitor.add_argument("--json", action="store_true", help="one JSON object a line")
    monitor.add_argument("--baud", type=int, help="default: the protocol's")
    monitor.add_argument("--parity", choices=sorted(PARITIES), default="N")
    monitor.add_argument("--stopbits", type=float, choices=(1, 1.5, 2), default=1)
    monitor.add_argument(
        "--command-bcc",
        choices=("with-stx", "without-stx"),
        default="with-stx",
        help="Angel Eye: whether host-command BCCs include STX",
    )
    monitor.add_argument("--count", type=int, help="stop after this many events")
    monitor.add_argument("--seconds", type=float, help="stop after this long")
    monitor.set_defaults(func=run)


def event_record(event: ShoeEvent) -> dict[str, Any]:
    """An event as a flat JSON-ready dict: ``{"event": "CardDrawn", "card": "AS", ...}``."""
    record: dict[str, Any] = {"event": type(event).__name__}
    for field in dataclasses.fields(event):
        value = getattr(event, field.name)
        if field.name == "card":
            value = str(value)
        elif isinstance(value, tuple):
            value = list(value)
        record[field.name] = value
    return record


def event_line(event: ShoeEvent) -> str:
    record = event_record(event)
    stamp = datetime.fromtimestamp(record.pop("at")).strftime("%H:%M:%S.%f")[:-3]
    name = record.pop("event")
    details = " ".join(f"{key}={value}" for key, value in record.items() if value is not None)
    return f"{stamp} {name} {details}".rstrip()


def run(args: argparse.Namespace) -> int:
    config = ShoeConfig(
        args.port,
        args.protocol,
        baudrate=args.baud,
        parity=args.parity,
        stopbits=args.stopbits,
        command_bcc_includes_stx=args.command_bcc == "with-stx",
    )
    events: queue.Queue[ShoeEvent] = queue.Queue()
    deadline = time.monotonic() + args.seconds if args.seconds is not None else None
    printed = 0
    driver = ShoeDriver(config, events)
    with driver:
        try:
            while args.count is None or printed < args.count:
                timeout = 0.2
                if deadline is not None:
                    timeout = min(timeout, deadline - time.monotonic())
                    if timeout <= 0:
                        break
                try:
                    event = events.get(timeout=timeout)
                except queue.Empty:
                    continue
                line = json.dumps(event_record(event)) if args.json else event_line(event)
                print(line, flush=True)
                printed += 1
        except KeyboardInterrupt:
            pass
    print(
        f"decoder: {driver.session.decoder_stats}; session: {driver.session.session_stats}",
        file=sys.stderr,
    )
    return 0
