"""What every ``livetable`` command module shares: the conventions of one command line.

It imports nothing beyond the standard library's argparse, json, math, re, sys and textwrap,
so any command module (the demo, a bench) may use it without loading anything heavy. It is
not in :mod:`controller.tools.cli` because that module is the console script itself: a command
module importing it would load it a second time under ``python -m controller.tools.cli``.

The conventions, which the help walk in the tests checks for every sub-command:

- a time is given in seconds by an option whose name ends in ``-s`` (``--betting-s``), typed
  :func:`positive_seconds` or :func:`non_negative_seconds`;
- counts are :func:`positive_int` or :func:`non_negative_int`, probabilities :func:`rate_0_1`,
  so a negative or nonsensical value is refused by argparse (exit status 2) with one line;
- ``--json`` means one JSON object per line on stdout (:data:`JSON_HELP`, :func:`print_json`);
- choice lists come from the registries (games, shoe protocols), never typed out again;
- every sub-command's help ends with an example (:func:`examples`, the epilog), in plain
  words: no source markup and no paths inside the source tree;
- ``-v``/``--verbose`` is accepted before and after the sub-command (:func:`add_verbose`);
- an error is one line, ``livetable: error: <cause>``, exit status 1 (2 for a command line
  argparse refuses), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

# argparse's own exit status for a command line it cannot use.
USAGE_ERROR = 2

JSON_HELP = "one JSON object per line on stdout, for tools"
"""The help of every ``--json`` option: the same words for the same thing."""

VERBOSE_AFTER_DEST = "verbose_after_command"
"""Where ``-v`` given after the sub-command counts; :func:`verbosity` adds both."""


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


# -- help text ------------------------------------------------------------------------------


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that descriptions and epilogs keep their paragraphs
    (separated by a blank line) and their indented lines (examples) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = re.split(r"\n\s*\n", textwrap.dedent(text).strip("\n"))
        filled = []
        for paragraph in paragraphs:
            lines = paragraph.splitlines()
            if any(line.startswith(" ") for line in lines[1:]) or paragraph.startswith(" "):
                filled.append("\n".join(indent + line for line in lines))
            else:
                filled.append(super()._fill_text(" ".join(lines), width, indent))
        return "\n\n".join(filled)


def examples(*commands: str, note: str = "") -> str:
    """An epilog giving ``commands`` as examples (each a whole ``livetable ...`` line)."""
    title = "example:" if len(commands) == 1 else "examples:"
    body = "\n".join(f"  {command}" for command in commands)
    return f"{title}\n{body}" + (f"\n\n{note}" if note else "")


# -- values ---------------------------------------------------------------------------------


def _number(text: str, kind: Callable[[str], Any], what: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def positive_int(text: str) -> int:
    """A whole number above 0 (rounds, images, events)."""
    value: int = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive whole number")
    return value


def non_negative_int(text: str) -> int:
    """A whole number, 0 or more (a seed, a count where 0 means none)."""
    value: int = _number(text, int, "a whole number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more")
    return value


def positive_seconds(text: str) -> float:
    """A duration in seconds above 0 (a window, a deadline, a timeout)."""
    value: float = _number(text, float, "a number of seconds")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def non_negative_seconds(text: str) -> float:
    """A duration in seconds, 0 or more (a pace, where 0 means no pause)."""
    value: float = _number(text, float, "a number of seconds")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} seconds is negative: give 0 or more")
    return value


def positive_number(text: str) -> float:
    """A finite number above 0 (frames per second, a scale)."""
    value: float = _number(text, float, "a number")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def rate_0_1(text: str) -> float:
    """A probability or share, from 0 to 1 inclusive (``0.05``, not ``5%``)."""
    value: float = _number(text, float, "a number from 0 to 1")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a rate from 0 to 1")
    return value


def unit_interval_open(text: str) -> float:
    """A threshold strictly between 0 and 1 (a confidence the recogniser must exceed)."""
    value: float = _number(text, float, "a number between 0 and 1")
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (exclusive)")
    return value


# -- shared options and output ---------------------------------------------------------------


# A CSV cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV
# Injection"); a tab or a carriage return may hide one after it.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def defuse_formula(text: str) -> str:
    """A CSV cell a spreadsheet shows as text and never runs: ``'`` before a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def add_json(parser: argparse.ArgumentParser) -> None:
    """``--json``: one JSON object per line on stdout (see :func:`print_json`)."""
    parser.add_argument("--json", action="store_true", help=JSON_HELP)


def print_json(document: object) -> None:
    """Write ``document`` as one JSON line on stdout and flush it (tools read line by line)."""
    print(json.dumps(document, sort_keys=True), flush=True)


def add_verbose(parser: argparse.ArgumentParser) -> None:
    """Accept ``-v``/``--verbose`` on a sub-command too (``livetable journal verify -v``)."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        dest=VERBOSE_AFTER_DEST,
        default=argparse.SUPPRESS,
        help="more logging (-vv for debug)",
    )


def verbosity(args: argparse.Namespace) -> int:
    """``-v`` counted before and after the sub-command."""
    return int(getattr(args, "verbose", 0) or 0) + int(getattr(args, VERBOSE_AFTER_DEST, 0) or 0)


def sub_commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """``parser`` and every parser under it, each with its words (``("journal", "verify")``)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from sub_commands(child, (*path, name))
