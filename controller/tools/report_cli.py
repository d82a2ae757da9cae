"""``livetable report``: the command line of :mod:`controller.tools.report` (the figures) and
:mod:`controller.tools.report_html` (the page)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from controller.kernel.cli_support import examples
from controller.tools.report import (
    FORMATS,
    GROUPINGS,
    csv_text,
    groups,
    plain_text,
    read_journals,
    window_text,
)

EXAMPLE_JOURNALS: Final = "/var/lib/livetable/*.journal"


def utc_time(text: str) -> float:
    """``2026-12-06``, ``2026-12-06 14:00`` or ISO 8601 with an offset: seconds since the
    epoch; a time without an offset is UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give YYYY-MM-DD or YYYY-MM-DD HH:MM (UTC), or ISO 8601 "
            "with an offset"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="the studio's figures from table journals: rounds per hour, cards, pauses",
        description="Read any set of table journals, with the segments archived beside "
        "them (only read: nothing is written beside them) and report, by table, game, "
        "hour or dealer: the rounds settled and cancelled, rounds per hour of play, the "
        "cards dealt by source (shoe, camera, supervisor, unread), the pauses by reason "
        "with the minutes they lost, and the cards out of turn. As aligned text, CSV (a "
        "row per group) or a printable HTML page with charts that needs nothing but itself.",
        epilog=examples(
            f"livetable report {EXAMPLE_JOURNALS}",
            f"livetable report {EXAMPLE_JOURNALS} --by dealer --from 2026-12-06 --to 2026-12-07",
            f"livetable report {EXAMPLE_JOURNALS} --by hour --format csv --output day.csv",
            f"livetable report {EXAMPLE_JOURNALS} --format html --output report.html",
        ),
    )
    parser.add_argument(
        "journals", type=Path, nargs="+", metavar="JOURNAL", help="a table's journal file"
    )
    parser.add_argument(
        "--from",
        dest="start",
        type=utc_time,
        metavar="TIME",
        help="only rounds opened (and pauses begun) at or after TIME (UTC unless it says)",
    )
    parser.add_argument(
        "--to",
        dest="end",
        type=utc_time,
        metavar="TIME",
        help="only rounds opened (and pauses begun) before TIME",
    )
    parser.add_argument(
        "--by",
        choices=GROUPINGS,
        default="table",
        help="one row per table (default), game, hour (UTC) or dealer signed in",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text for people (default), csv for a spreadsheet, html for a page with charts",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the report to FILE instead of standard output",
    )
    parser.add_argument(
        "--immutable",
        action="store_true",
        help="the journals cannot change (copies on read-only media): read them without "
        "any locking",
    )
    parser.set_defaults(func=run_report, usage_error=parser.error)


def run_report(args: argparse.Namespace) -> int:
    if args.start is not None and args.end is not None and args.end <= args.start:
        args.usage_error("--to must come after --from")
    record = read_journals(args.journals, args.immutable, args.start)
    record = record.window(args.start, args.end)
    found = groups(record, args.by)
    window = window_text(args.start, args.end)
    if args.format == "csv":
        text = csv_text(found, args.by)
    elif args.format == "html":
        # Imported here: the page reads the chart library's script only when asked for.
        from controller.tools.report_html import report_page

        text = report_page(record, found, args.by, window)
    else:
        text = plain_text(found, args.by, window)
    if args.output is None:
        sys.stdout.write(text)
    else:
        # An OSError (no such folder, no right) is the CLI's one line naming the file.
        args.output.write_text(text, encoding="utf-8")
        print(f"{args.output}: {len(found)} {args.by} group(s), {window}")
    return 0
