"""Reading a livetable TOML file: one place, one error mapping.

Every section of a table's configuration (``[table]``, ``[shoe]``, ``[camera]``, ``[mqtt]``)
comes from one TOML file. :func:`read_toml` reads it and turns every way that can fail into a
:class:`~controller.kernel.errors.ConfigurationError` naming the file; :func:`section` picks a
(possibly dotted) table out of it. The section loaders then name the bad key, each in the
same words: :func:`check_keys` for a key no section has (``unknown keys in [mqtt]: colour``),
:func:`invalid` for a value of the wrong type or out of range (``[mqtt] port must be
1-65535, not 0``) and :func:`unknown_choice` for a name that is not one of the choices
(``unknown game 'bacarat': did you mean 'baccarat'? (expected ...)``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from controller.kernel.errors import ConfigurationError
from controller.kernel.words import unknown_choice as _choice_words


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed document; ConfigurationError (naming ``path``) if it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise ConfigurationError(f"config file {path} does not exist") from error
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"cannot read config file {path}: {error}") from error
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigurationError(f"{path} is not valid TOML: {error}") from error


def section(document: dict[str, Any], name: str, path: Path | None = None) -> dict[str, Any]:
    """Table ``name`` (dotted for nested tables) of ``document``; ConfigurationError if absent."""
    table: Any = document
    for key in name.split(".") if name else ():
        if not isinstance(table, dict) or key not in table:
            where = f"{path} has" if path is not None else "the configuration has"
            raise ConfigurationError(f"{where} no [{name}] table")
        table = table[key]
    if not isinstance(table, dict):
        raise ConfigurationError(f"[{name}] must be a table")
    return table


def check_keys(table: Mapping[str, object], known: Iterable[str], section: str) -> None:
    """ConfigurationError naming every key of ``table`` that ``[section]`` does not have."""
    unknown = sorted(map(str, set(table) - set(known)))
    if unknown:
        raise ConfigurationError(f"unknown keys in [{section}]: {', '.join(unknown)}")


_UNSHOWN: Final = object()


def invalid(
    key: str, wanted: str, value: object = _UNSHOWN, *, section: str | None = None
) -> ConfigurationError:
    """The error for a value of the wrong type or out of range, in the one wording:
    ``[section] key must be wanted, not value``. ``section`` is left out where the key is
    named alone (a ``[table]`` setting, which a table built in code checks too); ``value``
    where it could be a secret or says nothing more."""
    where = f"[{section}] {key}" if section is not None else key
    shown = "" if value is _UNSHOWN else f", not {value!r}"
    return ConfigurationError(f"{where} must be {wanted}{shown}")


def unknown_choice(key: str, value: object, choices: Sequence[str]) -> ConfigurationError:
    """The error for a name that is none of ``choices``, naming the nearest one when one is
    close: the words ``livetable rules replay`` uses for its choices."""
    return ConfigurationError(_choice_words(key, value, choices))
