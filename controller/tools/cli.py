"""The ``livetable`` console script: one argparse tree, sub-commands contributed by modules.

Each command module exposes ``register(subparsers)``, which adds its parser(s) and sets
``func`` (called with the parsed namespace, returning the exit status). Modules are imported
when the parser is built, so they must import heavy dependencies (OpenCV, numpy-heavy models)
inside their ``func``, never at module level: ``livetable rules ...`` must not load OpenCV.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from importlib import metadata

from controller.kernel.cli_support import (
    HelpFormatter,
    add_verbose,
    default_to_help,
    examples,
    sub_commands,
    verbosity,
)
from controller.kernel.errors import TableError
from controller.kernel.logs import configure_logging

logger = logging.getLogger(__name__)

# Top-level commands, by the module that registers them.
TOP_LEVEL_MODULES: tuple[str, ...] = (
    "controller.tools.rules_cli",  # rules replay, rtp
    "drivers.shoe.cli",  # shoe monitor
    "vision.cli",  # vision classify / eval / enrol / train
    "controller.tools.camera_cli",  # camera calibrate
    "controller.tools.journal_cli",  # journal verify / export
    "controller.tools.report_cli",  # report: rounds per hour, cards, pauses from journals
    "controller.tools.demo",  # demo: a whole simulated table
    "controller.service.daemon",  # run: the table as a daemon with its MQTT API
    "controller.tools.ctl",  # ctl: a supervisor's actions on a table over its MQTT API
    "controller.console.cli",  # console: the supervisors' web console over the MQTT API
    "controller.tools.studio_cli",  # studio accounts: the brokers' authorisation of the accounts
    "controller.tools.files_cli",  # files: the folder of the shipped unit and broker files
)

# Commands grouped under a shared word: `livetable sim shoe`, `livetable bench rules`.
GROUP_MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "sim": (
        "hardware simulators",
        ("simulators.shoe.cli", "simulators.camera_cli"),
    ),
    "bench": (
        "benchmarks (report percentiles and rates from one run)",
        (
            "controller.tools.bench_rules",
            "controller.tools.bench_shuffle",
            "controller.tools.bench_pictures",
            "simulators.shoe.bench",
            "vision.bench",
            "controller.tools.bench_table",
            "controller.tools.bench_journal",
            "controller.tools.bench_latency",
            "controller.tools.bench_console",
            "controller.tools.bench_studio",
        ),
    ),
}

GROUP_EXAMPLES: dict[str, str] = {
    "sim": examples(
        "livetable sim shoe --protocol angel-eye --link /tmp/shoe",
        "livetable sim camera --random 6 --video round.mkv",
    ),
    "bench": examples("livetable bench rules", "livetable bench table --json"),
}


def _register(module_name: str, subparsers: argparse._SubParsersAction) -> None:
    importlib.import_module(module_name).register(subparsers)


def version() -> str:
    """The installed livetable's version (``unknown`` when run from a bare source tree)."""
    try:
        return metadata.version("livetable")
    except metadata.PackageNotFoundError:
        return "unknown"


def version_text() -> str:
    """``--version``'s answer: the build, then the revisions that decide whether a journal
    written by this build replays under another (imported here, not at start-up: every other
    command starts without loading the table)."""
    from controller.service.wire import API_VERSION
    from controller.table.events import EVENT_ENCODING
    from controller.table.machine import MACHINE_REVISION

    return (
        f"livetable {version()}\n"
        f"journal encoding {EVENT_ENCODING}, machine revision {MACHINE_REVISION}, "
        f"MQTT API {API_VERSION}"
    )


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="livetable",
        description="Run and test a live-dealer casino table.",
        epilog=examples(
            "livetable demo --rounds 3",
            "livetable journal verify /var/lib/livetable/t1.journal",
            "livetable journal export /var/lib/livetable/t1.journal --round 12",
            note="Run livetable COMMAND --help for a command's options and an example.",
        ),
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)"
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in TOP_LEVEL_MODULES:
        _register(module_name, subparsers)
    for group, (help_text, module_names) in GROUP_MODULES.items():
        group_parser = subparsers.add_parser(
            group, help=help_text, description=help_text, epilog=GROUP_EXAMPLES[group]
        )
        group_subparsers = group_parser.add_subparsers(dest=f"{group}_command", metavar="WHAT")
        for module_name in module_names:
            _register(module_name, group_subparsers)
        default_to_help(group_parser)
    default_to_help(parser)
    # One look for every command: paragraphs and examples as written, -v after it too.
    for path, command in sub_commands(parser):
        command.formatter_class = HelpFormatter
        if path:
            add_verbose(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # One line per record on stderr, journald's priorities under systemd, secrets redacted.
    configure_logging(verbosity(args))
    try:
        return int(args.func(args) or 0)
    except TableError as error:
        return _fail(str(error))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as error:
        # A file that is missing or unreadable, a device that refuses: the system's words.
        return _fail(_os_error(error))
    except Exception as error:
        # A bug, not a bad command line: one line here, the traceback with -vv.
        logger.debug("internal error", exc_info=True)
        return _fail(f"internal error: {type(error).__name__}: {error} (-vv for details)")


def _fail(message: str) -> int:
    print(f"livetable: error: {' '.join(message.split())}", file=sys.stderr)
    return 1


def _os_error(error: OSError) -> str:
    where = error.filename if error.filename is not None else None
    cause = error.strerror or str(error)
    return f"{where}: {cause}" if where is not None else cause


if __name__ == "__main__":
    sys.exit(main())
