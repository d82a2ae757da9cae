"""What every `livetable rules replay` line is checked against before it is played: only the
keys its game takes (a misspelt key is refused, naming the nearest right one, rather than
dropped and its default played), and a named choice among the ones there are, said in words.

Pure code, shared by the games' ``replay`` functions and the replay command.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.kernel.errors import RulesError
from controller.kernel.words import nearest, unknown_choice


def _all_of(names: Sequence[str]) -> str:
    """``a and b``, ``a, b and c``: every one of ``names``."""
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def unknown_key_words(unknown: Sequence[str], known: Sequence[str]) -> str:
    """``unknown key 'decision': did you mean 'decisions'?`` for each of ``unknown``."""
    parts = []
    for key in unknown:
        guess = nearest(key, known)
        parts.append(f"unknown key {key!r}" + (f": did you mean {guess!r}?" if guess else ""))
    return "; ".join(parts)


def check_keys(request: Mapping[str, object], keys: Sequence[str], what: str) -> None:
    """RulesError unless every key of ``request`` is one of ``keys`` (``what``: which line,
    e.g. ``a baccarat line``, in the error)."""
    unknown = sorted(key for key in request if key not in keys)
    if unknown:
        raise RulesError(f"{unknown_key_words(unknown, keys)} ({what} takes {_all_of(keys)})")


def check_choice(value: object, choices: Sequence[str], what: str) -> None:
    """RulesError unless ``value`` is one of ``choices``: ``unknown baccarat mode 'x':
    expected traditional or no-commission``, with the nearest choice when one is close."""
    if isinstance(value, str) and value in choices:
        return
    raise RulesError(unknown_choice(what, value, choices))
