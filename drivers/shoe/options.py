"""A protocol's own settings: the ``[shoe.<protocol>]`` table, parsed by the protocol itself.

Each protocol that has settings defines a frozen dataclass subclass of
:class:`ProtocolOptions`; its fields are the table's keys (``bool``, ``int``, ``float`` or
``str``; a field's ``metadata["choices"]`` lists the values a ``str`` may take).
:meth:`ProtocolOptions.from_mapping` checks the keys, their types and choices, and says what
is wrong in one line naming the key, like the rest of the configuration. Keys that older
configurations put in ``[shoe]`` itself are named in ``legacy_keys`` and still read there.
The same settings are ``livetable shoe monitor`` options (:meth:`add_arguments`).
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from controller.kernel.config_file import check_keys, invalid
from controller.kernel.errors import ConfigurationError

_TYPES: dict[Any, tuple[type, ...]] = {
    bool: (bool,),
    int: (int,),
    float: (int, float),
    str: (str,),
}


def _check(cls: type, key: str, value: object, where: str) -> None:
    hints = typing.get_type_hints(cls)
    types = _TYPES[hints[key]]
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        names = " or ".join(t.__name__ for t in types)
        raise invalid(key, names, value, section=where[1:-1])
    choices = next(f for f in dataclasses.fields(cls) if f.name == key).metadata.get("choices")
    if choices is not None and value not in choices:
        raise ConfigurationError(
            f"{where} {key} must be one of {', '.join(choices)}, not {value!r}"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ProtocolOptions:
    """The base of every protocol's settings (a frozen dataclass of TOML values)."""

    protocol: ClassVar[str] = ""
    """The protocol's name: the table is ``[shoe.<protocol>]``."""
    legacy_keys: ClassVar[frozenset[str]] = frozenset()
    """Keys still read from ``[shoe]`` itself, where configurations had them before the
    protocol had its own table."""

    def __post_init__(self) -> None:
        where = f"[shoe.{self.protocol}]" if self.protocol else type(self).__name__
        for option in dataclasses.fields(self):
            _check(type(self), option.name, getattr(self, option.name), where)

    @classmethod
    def from_mapping(
        cls,
        table: Mapping[str, Any],
        legacy: Mapping[str, Any] | None = None,
        protocol: str | None = None,
    ) -> Self:
        """Build from ``[shoe.<protocol>]`` (``table``) and the keys of ``[shoe]`` that are
        not the driver's (``legacy``); :class:`ConfigurationError` names the key."""
        where = f"[shoe.{protocol or cls.protocol}]"
        if not isinstance(table, Mapping):
            raise ConfigurationError(f"{where} must be a table")
        legacy = legacy or {}
        names = {option.name for option in dataclasses.fields(cls)}
        check_keys(legacy, cls.legacy_keys & names, "shoe")
        check_keys(table, names, where[1:-1])
        twice = sorted(set(table) & set(legacy))
        if twice:
            raise ConfigurationError(
                f"[shoe] {twice[0]} and {where} {twice[0]} are both set: keep the one in {where}"
            )
        for key, value in legacy.items():
            _check(cls, key, value, "[shoe]")
        for key, value in table.items():
            _check(cls, key, value, where)
        return cls(**legacy, **table)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add these settings to ``livetable shoe monitor`` (none by default). Every
        protocol's options are added to the one parser: name them after the protocol."""

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> Self:
        """These settings from the monitor's options."""
        return cls()


@dataclasses.dataclass(frozen=True, slots=True)
class NoOptions(ProtocolOptions):
    """A protocol without settings: its ``[shoe.<protocol>]`` table, if any, must be empty."""
