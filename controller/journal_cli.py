"""``livetable journal verify`` and ``livetable journal export --round ID``.

``verify`` checks the hash chain of a table's journal row by row and says where it breaks.
``export`` replays the journal through the table's state machine (under the settings the
journal recorded) and prints, one JSON object per line, every event of the round with the
effects it had: the round's full history for a dispute or a regulator. It includes what the
public never saw (the hole card before its reveal), because it is for them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from controller.cli_support import default_to_help
from controller.errors import JournalError

if TYPE_CHECKING:
    from controller.table.journal import Journal


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "journal",
        help="verify a table's journal or export a round from it",
        description="Verify a table's journal or export one round's history from it.",
    )
    commands = parser.add_subparsers(dest="journal_command", metavar="WHAT")
    verify = commands.add_parser("verify", help="check the journal's hash chain")
    verify.add_argument("journal", type=Path, help="the journal file")
    verify.set_defaults(func=run_verify)
    export = commands.add_parser("export", help="print one round's events and effects as JSON")
    export.add_argument("journal", type=Path, help="the journal file")
    export.add_argument("--round", dest="round_id", type=int, required=True, help="round id")
    export.set_defaults(func=run_export)
    default_to_help(parser)


def _open(path: Path) -> Journal:
    # Imported here so that building the CLI's parser stays light.
    from controller.table.journal import Journal

    return Journal(path, read_only=True)


def run_verify(args: argparse.Namespace) -> int:
    with _open(args.journal) as journal:
        rows = journal.verify()
    print(f"{args.journal}: {rows} rows, hash chain intact")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from controller.table.table import config_of, export_round

    with _open(args.journal) as journal:
        config = config_of(journal)
        lines = export_round(journal, config, args.round_id)
        if not lines:
            raise JournalError(f"round {args.round_id} is not in {args.journal}")
        for line in lines:
            print(json.dumps(line, sort_keys=True))
    return 0
