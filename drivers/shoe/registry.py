"""The shoe protocols by name: one line each, a package imported on first use.

The one list of shoe protocols: ``[shoe] protocol`` (:class:`~drivers.shoe.driver.ShoeConfig`),
the driver, every ``--protocol`` option (``livetable shoe monitor``, ``livetable sim shoe``,
``livetable bench shoe``, the demo), the simulator and the contract tests take the names and
the parts from here. A protocol is a package (``drivers/shoe/protocols/<name>/``) whose
``PROTOCOL`` is a :class:`ShoeProtocol`: its session, its shoe's speaker, its options. It is
imported only when first asked for (python-can's backends), so a table loads the one protocol
it speaks. See ``docs/shoe-protocol.md``, "Adding a protocol".
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Final

from controller.kernel.config_file import unknown_choice
from controller.kernel.errors import ConfigurationError
from drivers.shoe.options import NoOptions, ProtocolOptions
from drivers.shoe.sessions import ShoeSession
from drivers.shoe.speaker import ShoeSpeaker

_MODULES: dict[str, str] = {
    "angel-eye": "drivers.shoe.protocols.angel_eye",
    "ascii": "drivers.shoe.protocols.ascii_lines",
    "native": "drivers.shoe.protocols.native",
}
PROTOCOL_NAMES: Final = tuple(_MODULES)
"""The protocols livetable ships (:func:`protocol_names` adds any registered since)."""
_loaded: dict[str, ShoeProtocol] = {}


@dataclass(frozen=True, slots=True)
class ShoeProtocol:
    """The parts of one shoe protocol, as its package's ``PROTOCOL`` names them."""

    name: str
    session: type[ShoeSession]
    """The host's side: frames in, events out; declares its ``capabilities``."""
    speaker: type[ShoeSpeaker]
    """The shoe's side, for the simulator."""
    options: type[ProtocolOptions] = NoOptions
    """Its own settings, the ``[shoe.<name>]`` table."""


def register(name: str, module: str) -> None:
    """Add protocol ``name``, the package (or module) ``module`` whose ``PROTOCOL`` it is;
    imported when first used. A name already taken is a :class:`ConfigurationError`."""
    if name in _MODULES:
        raise ConfigurationError(f"the shoe protocol {name!r} is already registered")
    _MODULES[name] = module


def unregister(name: str) -> None:
    """Forget a protocol added with :func:`register` (a test's own)."""
    if name in PROTOCOL_NAMES:
        raise ConfigurationError(f"the shoe protocol {name!r} is livetable's own")
    _MODULES.pop(name, None)
    _loaded.pop(name, None)


def protocol_names() -> tuple[str, ...]:
    """Every protocol's name, livetable's first, without importing any of them."""
    return tuple(_MODULES)


def protocol(name: str) -> ShoeProtocol:
    """Protocol ``name``'s parts, importing its package on first use;
    :class:`ConfigurationError` for a name no one registered."""
    loaded = _loaded.get(name)
    if loaded is not None:
        return loaded
    module = _MODULES.get(name)
    if module is None:
        raise unknown_choice("shoe protocol", name, tuple(_MODULES))
    parts = importlib.import_module(module).PROTOCOL
    if not isinstance(parts, ShoeProtocol) or parts.name != name:
        raise ConfigurationError(f"{module}.PROTOCOL is not the shoe protocol {name!r}")
    _loaded[name] = parts
    return parts
