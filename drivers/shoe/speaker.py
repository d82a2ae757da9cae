"""A protocol's shoe side: what a simulated shoe sends, and how it answers the host.

The simulator (``simulators/shoe/simulator.py``) owns the pty, the shuffled cards, the wire's
faults and the truth file; everything that depends on the protocol is asked of the
protocol's speaker (``drivers/shoe/protocols/<name>/speaker.py``), which builds its bytes only
from its own codec's frames and encoders: a shoe that speaks what the driver reads by
construction, as bellows' device simulator is built from its production codec. The speaker
lives in the protocol's package (the drivers never import the simulators); it does no I/O:
it returns bytes, and answers the host through the :class:`ShoeSide` it is handed.
"""

from __future__ import annotations

import argparse
import inspect
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Protocol

from controller.kernel.cards import Card
from controller.kernel.errors import ConfigurationError
from drivers.shoe.sessions import HostCommand

FAULT_MESSAGES: Final[dict[int, str]] = {
    1: "card could not be read",
    2: "overdraw (too many cards drawn)",
    3: "button mishandled",
    4: "card pulled back at the exit",
    5: "card pulled back midway",
    6: "card code error",
    7: "draw timed out",
}
"""The simulated shoe's own faults (``fault CODE``), numbered as the first shoe simulated,
Angel Eye, numbers them; each speaker says them in its protocol's words."""

EVENTS: Final = frozenset(
    ("card", "cut_card", "misread", "fault", "fault_cleared", "lock", "signal", "result")
)
GARBLED: Final = "garbled"
"""A ``misread``'s detail: the shoe reports the card drawn, but with a face that is no card."""


@dataclass(frozen=True, slots=True)
class ShoeAction:
    """Something the shoe does, before any protocol has a word for it."""

    sequence: int
    """The shoe's count of the events it numbered, this one included; for an event that
    takes no number (:meth:`ShoeSpeaker.takes_number`), the last one given (0: none yet)."""
    event: str
    """One of :data:`EVENTS`."""
    card: Card | None = None
    """``card``: the face; ``misread``: the face that could not be read."""
    detail: str | None = None
    """``fault`` and ``fault_cleared``: the code; ``lock``: ``"1"`` locked, ``"0"``;
    ``signal``: its code; ``result``: what :meth:`ShoeSpeaker.result_detail` made;
    ``misread``: :data:`GARBLED` for a card frame whose face is no card (a protocol
    without one says its plain misread)."""
    target: str = "player"
    """``card``: where it goes (``player``, ``banker``, ``burn``...), if the protocol says."""
    index: int = 1


@dataclass(frozen=True, slots=True)
class ShoeVariant:
    """A kind of shoe the protocol comes in, as the simulator's settings make it; the
    contract suite runs over each as ``<protocol>@<variant>``."""

    settings: Mapping[str, Any] = field(default_factory=dict)
    gaps_visible: bool = True
    """Whether the driver can name a frame this shoe lost (a shoe numbering with any byte
    shows repeats, not gaps)."""


class ShoeSide(Protocol):
    """What a speaker may do to the simulated shoe while answering the host."""

    locked: bool
    error_code: int | None

    @property
    def last_sequence(self) -> int:
        """The number of the last event the shoe numbered (0: none)."""
        ...

    def write(self, data: bytes) -> None:
        """Send ``data`` as it is (an answer: no wire faults)."""

    def transmit(self, raw: bytes, sequence: int) -> None:
        """Send the frame of event ``sequence`` again, through the wire's faults."""

    def command_received(self, text: str, command: HostCommand | None) -> None:
        """Record a host command: its words on the wire, and what it asks (None: nothing
        the table's vocabulary has)."""

    def turn_key(self, locked: bool) -> object:
        """The lock changes and the shoe reports it as an event."""

    def clear_error(self) -> int | None:
        """Clear the shoe's error and report it cleared; None (nothing done) if none."""


class ShoeSpeaker(ABC):
    """A protocol's shoe side; one per simulated shoe. Subclasses take their settings as
    keyword arguments with defaults (``livetable sim shoe`` options, the suites' variants)."""

    name: ClassVar[str]
    signal_codes: ClassVar[tuple[str, ...]] = ()
    """The signals the shoe can send (``livetable sim shoe``: ``signal CODE``)."""
    reports_results: ClassVar[bool] = False
    """Whether the shoe reports its own result of a hand (``result OUTCOME``)."""
    heartbeat_s: ClassVar[float | None] = None
    """How often an idle shoe says it is alive (:meth:`heartbeat`); None: never."""
    variants: ClassVar[Mapping[str, ShoeVariant]] = {}

    @classmethod
    def setting_names(cls) -> frozenset[str]:
        """The keyword settings this speaker takes."""
        parameters = inspect.signature(cls.__init__).parameters
        return frozenset(name for name in parameters if name != "self")

    def takes_number(self, event: str, detail: str | None) -> bool:
        """Whether ``event`` takes a sequence number of the shoe's count (and a place in
        the truth file)."""
        return True

    @abstractmethod
    def encode(self, action: ShoeAction) -> bytes:
        """The bytes of ``action`` on the wire."""

    def sent(self, sequence: int, raw: bytes) -> None:
        """Event ``sequence`` went out as ``raw`` (a shoe that resends keeps it)."""
        return None

    def heartbeat(self, last_sequence: int) -> bytes:
        """The idle shoe's sign of life (every :attr:`heartbeat_s`)."""
        return b""

    def result_detail(self, outcome: str, player_pair: bool, banker_pair: bool) -> str:
        """A hand's result as :attr:`ShoeAction.detail` (only if :attr:`reports_results`)."""
        raise ConfigurationError(f"the {self.name} protocol reports no results")

    def corrupt(self, raw: bytes, rng: random.Random) -> bytes:
        """``raw`` with its checksum spoilt: the last character, a hex digit, replaced."""
        last = raw[-1:]
        replacement = rng.choice([c for c in b"0123456789ABCDEF" if bytes((c,)) != last])
        return raw[:-1] + bytes((replacement,))

    def noise_spoils(self, noise: bytes) -> bool:
        """Whether ``noise`` sent just before a frame spoils it (a protocol that resyncs on
        a start byte is not spoilt; a line protocol is, by noise after its last line end)."""
        return False

    def plugged(self) -> None:
        """A new link: forget any half-read host bytes."""
        return None

    def host_bytes(self, data: bytes, shoe: ShoeSide) -> None:
        """Bytes from the host: decode them and answer through ``shoe``."""
        return None

    def describe(self) -> str | None:
        """A line on the shoe's settings, printed when ``livetable sim shoe`` starts."""
        return None

    def status(self) -> str:
        """``key=value`` words on the shoe's settings for the control ``status`` answer."""
        return ""

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add this shoe's settings to ``livetable sim shoe`` (every protocol's are added to
        the one parser: name them after the protocol, or as it is documented)."""
        return None

    @classmethod
    def settings_from(cls, args: argparse.Namespace) -> dict[str, Any]:
        """This shoe's settings from ``livetable sim shoe``'s options."""
        return {}
