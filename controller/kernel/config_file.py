"""Reading a livetable TOML file: one place, one error mapping.

Every section of a table's configuration (``[table]``, ``[shoe]``, ``[camera]``, ``[mqtt]``)
comes from one TOML file. :func:`read_toml` reads it and turns every way that can fail into a
:class:`~controller.kernel.errors.ConfigurationError` naming the file; :func:`section` picks a
(possibly dotted) table out of it. The section loaders then name the bad key.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from controller.kernel.errors import ConfigurationError


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
