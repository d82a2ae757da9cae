"""The shoe's commissioning tools: ``shoe monitor`` prints every event a shoe sends, ``shoe
ports`` lists this machine's serial ports with their stable names.

The monitor opens the port exactly as the table does (same driver, same reconnects, the
port held exclusively) and prints one line an event, or one JSON object a line with
``--json``. At the end it writes its statistics and the protocol's commissioning report, if
it has one (Angel Eye: the variant it saw and the ``[shoe.angel-eye]`` lines that fix it), to
stderr. Each protocol adds its own options (:meth:`ProtocolOptions.add_arguments`). A port that
cannot be opened, or that another program holds (a running table), ends the run at once with
one line (exit status 1) unless ``--wait`` is given; a run that never saw the shoe online
exits 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import queue
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from controller.kernel.cli_support import (
    add_json,
    default_to_help,
    examples,
    positive_int,
    positive_seconds,
)
from controller.kernel.errors import DeviceError
from drivers.shoe.driver import PARITIES, PortBusy, ShoeConfig, ShoeDriver, open_port
from drivers.shoe.events import ShoeEvent, event_name
from drivers.shoe.registry import protocol, protocol_names
from drivers.shoe.sessions import ShoeSession

BY_ID = Path("/dev/serial/by-id")


MONITOR_HELP = """Print every event a card shoe sends, decoded by the table's own driver.

The port is opened exactly as the table opens it (same driver, same reconnects). At the end
the monitor prints its statistics and the protocol's commissioning report, if it has one (an
Angel Eye shoe: the variant it saw and the [shoe.angel-eye] lines that fix it in the table's
configuration). A port that
cannot be opened, or that another program (a running table) holds, ends the run at once with
one line (exit status 1) unless --wait is given; a run that never saw the shoe online exits
1."""

PORTS_HELP = """List this machine's serial ports, one a line: the stable name under
/dev/serial/by-id (the one to put in the table's [shoe] port, as it survives a re-plug and a
reboot), the device, the USB vendor and product ids, the description and serial number."""

STOPBITS = {"1": 1.0, "1.5": 1.5, "2": 2.0}


def stop_bits(text: str) -> float:
    """1, 1.5 or 2 stop bits, as the serial line counts them."""
    try:
        return STOPBITS[text]
    except KeyError:
        raise argparse.ArgumentTypeError(f"{text!r} is not 1, 1.5 or 2") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    shoe = subparsers.add_parser(
        "shoe",
        help="card-shoe scanner tools",
        description="Tools for commissioning a card shoe: its ports and what it sends.",
        epilog=examples(
            "livetable shoe ports",
            "livetable shoe monitor --port /dev/ttyUSB0 --protocol angel-eye --duration-s 60",
        ),
    )
    shoe_commands = shoe.add_subparsers(dest="shoe_command", metavar="WHAT")
    default_to_help(shoe)
    monitor = shoe_commands.add_parser(
        "monitor",
        help="print each decoded shoe event",
        description=MONITOR_HELP,
        epilog=examples(
            "livetable shoe monitor --port /dev/serial/by-id/usb-FTDI-if00-port0 "
            "--protocol angel-eye --duration-s 120",
            "livetable shoe monitor --port socket://10.0.0.7:4001 --protocol native --json",
        ),
    )
    monitor.add_argument(
        "--port", required=True, help="device path, by-id link, or socket://host:port"
    )
    monitor.add_argument("--protocol", choices=protocol_names(), required=True)
    add_json(monitor)
    monitor.add_argument("--baud", type=positive_int, help="default: the protocol's")
    monitor.add_argument("--parity", choices=sorted(PARITIES), default="N")
    monitor.add_argument(
        "--stopbits", type=stop_bits, default=1.0, metavar="{1,1.5,2}", help="default: 1"
    )
    for name in protocol_names():
        protocol(name).options.add_arguments(monitor)
    monitor.add_argument("--count", type=positive_int, help="stop after this many events")
    monitor.add_argument("--duration-s", type=positive_seconds, help="stop after this many seconds")
    monitor.add_argument(
        "--wait", action="store_true", help="wait for a port that cannot be opened yet"
    )
    monitor.set_defaults(func=run)
    ports = shoe_commands.add_parser(
        "ports",
        help="list serial ports with their stable by-id names",
        description=PORTS_HELP,
        epilog=examples("livetable shoe ports"),
    )
    ports.set_defaults(func=list_ports)


def event_record(event: ShoeEvent) -> dict[str, Any]:
    """An event as a flat JSON-ready dict: ``{"event": "CardDrawn", "card": "AS", ...}``.

    ``event`` is the event's kind as the journal names it (:func:`event_name`), never the
    Python class's name.
    """
    record: dict[str, Any] = {"event": event_name(event)}
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
        options=protocol(args.protocol).options.from_arguments(args),
    )
    try:
        open_port(config).close()
    except PortBusy as error:
        # Two readers would split the shoe's bytes: never start beside one.
        if not args.wait:
            print(f"livetable: error: {error}", file=sys.stderr)
            return 1
        print(f"{error}; waiting for it (Ctrl-C to stop)", file=sys.stderr, flush=True)
    except DeviceError as error:
        if not args.wait:
            print(f"livetable: error: {error} (give --wait to wait for it)", file=sys.stderr)
            return 1
        print(f"{error}; waiting for it (Ctrl-C to stop)", file=sys.stderr, flush=True)
    events: queue.Queue[ShoeEvent] = queue.Queue()
    deadline = time.monotonic() + args.duration_s if args.duration_s is not None else None
    printed = 0
    driver = ShoeDriver(config, events.put)
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
    session = driver.session
    print(statistics(session), file=sys.stderr)
    report = session.commissioning_report()
    if report is not None:
        print(report, file=sys.stderr)
    if not driver.ever_online:
        print(f"The shoe on {config.port} was never online.", file=sys.stderr)
        return 1
    return 0


def statistics(session: ShoeSession) -> str:
    """The decoder's and the session's counters as one sentence each."""
    decoder, stats = session.decoder_stats, session.session_stats
    lines = [
        f"Frames decoded: {decoder.frames}; bad checksums: {decoder.bad_checksum}; "
        f"malformed spans: {decoder.malformed}; garbage bytes skipped: {decoder.garbage_bytes}; "
        f"buffer overflows: {decoder.overflows}.",
    ]
    if session.capabilities.numbered:
        lines.append(
            f"Duplicates dropped: {stats.duplicates_dropped}; sequence numbers lost: "
            f"{stats.sequences_lost}; resend requests: {stats.resend_requests}."
        )
    return "\n".join(lines)


def _by_id_names() -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    if BY_ID.is_dir():
        for link in sorted(BY_ID.iterdir()):
            names.setdefault(os.path.realpath(link), []).append(str(link))
    return names


def list_ports(args: argparse.Namespace) -> int:
    """One port a line: the stable by-id name (use it in [shoe] port), the device, the USB
    vendor and product ids, the description and serial number."""
    from serial.tools import list_ports as serial_ports

    ports = sorted(serial_ports.comports(), key=lambda port: port.device)
    if not ports:
        print("No serial ports found.")
        return 0
    by_id = _by_id_names()
    for port in ports:
        stable = by_id.get(os.path.realpath(port.device), [])
        usb = f"USB {port.vid:04x}:{port.pid:04x}" if port.vid is not None else "not USB"
        parts = [
            ", ".join(stable) if stable else f"{port.device} (no by-id name)",
            f"device {port.device}",
            usb,
        ]
        if port.description and port.description != "n/a":
            parts.append(port.description)
        if port.serial_number:
            parts.append(f"serial number {port.serial_number}")
        print("; ".join(parts))
    return 0
