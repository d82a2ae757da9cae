"""What every ``livetable`` command module shares; it imports nothing beyond argparse and sys.

It is not in :mod:`controller.cli` because that module is the console script itself: a
command module importing it would load it a second time under ``python -m controller.cli``.
"""

from __future__ import annotations

import argparse
import sys

# argparse's own exit status for a command line it cannot use.
USAGE_ERROR = 2


def print_help(parser: argparse.ArgumentParser) -> int:
    """Print ``parser``'s help on stderr and return the usage-error status.

    For a command group run without one of its sub-commands (``livetable journal``): the
    help says what to add, on stderr and with a failing status, as argparse does for any
    other incomplete command line, so a script that forgot the sub-command notices.
    """
    parser.print_help(sys.stderr)
    return USAGE_ERROR


def default_to_help(parser: argparse.ArgumentParser) -> None:
    """Make ``parser``, run without a sub-command, print its help (see :func:`print_help`)."""
    parser.set_defaults(func=lambda _args: print_help(parser))
