"""The ``livetable`` console script: one argparse tree, sub-commands contributed by modules.

Each command module exposes ``register(subparsers)``, which adds its parser(s) and sets
``func`` (called with the parsed namespace, returning the exit status). Modules are imported
when the parser is built, so they must import heavy dependencies (OpenCV, numpy-heavy models)
inside their ``func``, never at module level: ``livetable rules ...`` must not load OpenCV.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from controller.cli_support import default_to_help
from controller.errors import TableError
from controller.logs import configure_logging

# Top-level commands, by the module that registers them.
TOP_LEVEL_MODULES: tuple[str, ...] = (
    "controller.rules_cli",  # rules replay, rtp
    "drivers.shoe.cli",  # shoe monitor
    "vision.cli",  # vision classify / eval / enrol / train
    "drivers.camera_cli",  # camera calibrate
    "controller.journal_cli",  # journal verify / export
    "controller.demo",  # demo: a whole simulated table
    "controller.daemon",  # run: the table as a daemon with its MQTT API
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
            "controller.games.bench",
            "drivers.shoe.bench",
            "vision.bench",
            "controller.table.bench",
            "simulators.latency_bench",
        ),
    ),
}


def _register(module_name: str, subparsers: argparse._SubParsersAction) -> None:
    importlib.import_module(module_name).register(subparsers)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="livetable",
        description="Run and test a live-dealer casino table.",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in TOP_LEVEL_MODULES:
        _register(module_name, subparsers)
    for group, (help_text, module_names) in GROUP_MODULES.items():
        group_parser = subparsers.add_parser(group, help=help_text, description=help_text)
        group_subparsers = group_parser.add_subparsers(dest=f"{group}_command", metavar="WHAT")
        for module_name in module_names:
            _register(module_name, group_subparsers)
        default_to_help(group_parser)
    default_to_help(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # One line per record on stderr, journald's priorities under systemd, secrets redacted.
    configure_logging(args.verbose)
    try:
        return int(args.func(args) or 0)
    except TableError as error:
        print(f"livetable: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
