"""How a refusal words a choice: the nearest right name, and the names there are.

Shared by the rules' replay requests (``livetable rules replay``) and the configuration
readers (:mod:`controller.kernel.config_file`), so that a misspelt name is refused in the
same words everywhere: ``unknown game 'bacarat': did you mean 'baccarat'? (expected ...)``.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence


def in_words(choices: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    if len(choices) <= 1:
        return "".join(choices)
    return f"{', '.join(choices[:-1])} or {choices[-1]}"


def nearest(word: object, choices: Sequence[str]) -> str | None:
    """The choice ``word`` was most likely meant to be, if one is close."""
    if not isinstance(word, str):
        return None
    close = difflib.get_close_matches(word, choices, n=1)
    return close[0] if close else None


def unknown_choice(what: str, value: object, choices: Sequence[str]) -> str:
    """``unknown baccarat mode 'x': expected traditional or no-commission``, with the
    nearest choice when one is close."""
    guess = nearest(value, choices)
    if guess is None:
        return f"unknown {what} {value!r}: expected {in_words(choices)}"
    return f"unknown {what} {value!r}: did you mean {guess!r}? (expected {in_words(choices)})"
