"""What every protocol session is: decoded frames in, :mod:`drivers.shoe.events` and bytes out.

A session is the protocol's state between the codec and the port: sequence tracking (gaps
become :class:`CardsLost`, duplicates are dropped), command answers, acknowledgements and
resend requests. It does no I/O and reads no clock: the driver passes ``at`` (wall-clock
time stamped on events) and ``now`` (a monotonic reading for timers), so every session is
testable without a port or a thread. Each protocol's session lives in its own package
(``drivers/shoe/protocols/<name>/session.py``) and declares what it can do in its
:class:`Capabilities`, which the driver, the table and the contract tests read instead of
its name.
"""

from __future__ import annotations

import enum
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from drivers.shoe.codec import DecoderStats
from drivers.shoe.events import ShoeEvent
from drivers.shoe.options import NoOptions, ProtocolOptions

logger = logging.getLogger(__name__)
"""What came down the line, said by any protocol's session: every session logs here, so that
one name addresses the shoe's warnings (the demo lowers them: its faults are deliberate)."""


class HostCommand(enum.Enum):
    """What the table may ask of the shoe, whatever the protocol calls it."""

    LOCK = "lock"
    UNLOCK = "unlock"
    CLEAR_ERROR = "clear-error"
    CONFIRM_GAME = "confirm-game"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a protocol can do, declared by its session: read by the driver (heartbeat,
    commands), the table (gaps), the monitor (counters) and the contract tests."""

    numbered: bool = True
    """Frames carry sequence numbers: only then can a lost or repeated card be told."""
    retransmits: bool = False
    """The shoe resends what the host missed (asked by number): no card is lost to noise, a
    broken frame or a cable pull, each arrives once and in order."""
    gaps_always_visible: bool = False
    """The protocol accounts for every card whatever happens between two frames (a restart
    of the table, a cable pulled): it resends each, or names each it lost. A one-character SEQ
    that wraps every ten cards cannot; neither can unnumbered lines."""
    heartbeat_timeout_s: float | None = None
    """Silence after which the shoe counts as offline; ``None``: the protocol has no
    heartbeat, the shoe is online as soon as its port is open."""
    commands: frozenset[HostCommand] = frozenset()
    """The host commands the protocol has."""
    cut_card: bool = True
    """The protocol reports the cut card (without: the simulated shoe sends what the protocol
    reads as an unreadable frame, a misread)."""


@dataclass(slots=True)
class Reaction:
    """What a session wants done after some bytes arrived."""

    events: list[ShoeEvent] = field(default_factory=list)
    to_send: bytes = b""
    frames: int = 0
    """Valid frames decoded from these bytes (a sign the shoe is alive)."""
    results: list[tuple[int, ShoeResult]] = field(default_factory=list)
    """The shoe's own hand results (Angel Eye ``G``), not table events (see ShoeResult),
    each with its place in the stream: the number of ``events`` that came before it."""


@dataclass(slots=True)
class SessionStats:
    duplicates_dropped: int = 0
    sequences_lost: int = 0
    resend_requests: int = 0


class HandReport(Protocol):
    """A hand's result as a shoe reports it (Angel Eye's ``GameResult``)."""

    @property
    def outcome(self) -> str | None: ...
    @property
    def player_pair(self) -> bool: ...
    @property
    def banker_pair(self) -> bool: ...
    @property
    def text(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ShoeResult:
    """The shoe's own result of a hand (Angel Eye ``G``), for a cross-check with the table.

    Not a table event (the table computes results itself): the driver hands it to whoever
    asked for it (``ShoeDriver(on_result=...)``) in order with the events around it.
    """

    result: HandReport
    sequence: int | None
    at: float

    @property
    def text(self) -> str:
        return self.result.text


class ShoeSession(ABC):
    """One protocol's state for one driver; reset of the link via :meth:`closed`."""

    name: ClassVar[str]
    """The protocol's name in ``[shoe] protocol`` and every ``--protocol`` option."""
    default_baudrate: ClassVar[int]
    capabilities: ClassVar[Capabilities]

    def __init__(self) -> None:
        self.session_stats = SessionStats()

    @classmethod
    def from_options(cls, options: ProtocolOptions) -> ShoeSession:
        """A session with the protocol's own settings (``[shoe.<name>]``). A protocol with
        settings overrides this; one without takes none."""
        if not isinstance(options, NoOptions):
            raise TypeError(f"the {cls.name} session takes no {type(options).__name__}")
        return cls()

    @property
    @abstractmethod
    def decoder_stats(self) -> DecoderStats: ...

    def resume(self, last_sequence: int) -> None:
        """Number on from ``last_sequence``, the last shoe sequence number an earlier run
        delivered (a restarted table's journal), before the port is first opened: the first
        frame then shows what the shoe sent while nobody read it. A protocol without
        numbers has nothing to resume."""
        return None

    def opened(self, now: float) -> bytes:
        """The port has just been (re)opened; returns bytes to send first."""
        return b""

    @abstractmethod
    def receive(self, data: bytes, at: float, now: float) -> Reaction: ...

    def poll(self, now: float) -> bytes:
        """Timers: bytes to send now that no data has arrived."""
        return b""

    @abstractmethod
    def closed(self) -> None:
        """The link dropped: a partial frame will never be completed."""

    @abstractmethod
    def command(self, command: HostCommand) -> bytes:
        """Encode ``command``; :class:`ConfigurationError` if the protocol has none."""

    def commissioning_report(self) -> str | None:
        """What ``livetable shoe monitor`` prints after its statistics about what this run
        learnt of the shoe (Angel Eye: its variant), or None."""
        return None
