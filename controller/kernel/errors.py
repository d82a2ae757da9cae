"""The one exception tree of livetable.

Every error that livetable raises on purpose derives from :class:`TableError`, so a caller
(the daemon, the CLI, a test) can catch the family it cares about and let the rest surface.
Library errors are converted at the boundary where they enter our code
(``raise ShoeDisconnected(...) from error``), never passed through raw.
"""

from __future__ import annotations

from dataclasses import dataclass


class TableError(Exception):
    """Base class of every error livetable raises on purpose."""


class ConfigurationError(TableError):
    """The configuration cannot be used.

    Examples: a TOML file that does not parse; an unknown game id; a camera region outside
    the frame; a shoe protocol name that no driver provides.
    """


class RulesError(TableError):
    """A request the game rules do not allow or cannot evaluate.

    Examples: an unknown card ``"1X"``; a ninth copy of ``QH`` from an 8-deck shoe; a split
    asked for on a hand of two different values; too few cards to finish a baccarat round.
    """


class ProtocolError(TableError):
    """Bytes from a device that do not make a valid frame.

    Examples: a frame whose checksum does not match; a payload that names an unknown card;
    a frame longer than the protocol allows. Decoders raise only subclasses of this.
    """


class DeviceError(TableError):
    """A device cannot be reached or stopped answering.

    Examples: the shoe's serial port vanished when the cable was pulled; an RTSP camera
    stream cannot be opened; a ``socket://`` serial server refuses the connection.
    """


class TransitionError(TableError):
    """An event or command that the table's state does not accept.

    Examples: ``resume`` when the round is not paused; ``new_shoe`` in the middle of a round;
    a decision for a box that has no pending decision. The state is left unchanged.
    """


class JournalError(TableError):
    """The journal cannot be written, or what was read back does not verify.

    Examples: a hash chain broken by an edited row; the disk is full; a journal from a newer
    schema version.
    """


@dataclass(frozen=True, slots=True)
class RequestError(TableError):
    """A request on the table's API refused before the table sees it; its fields are the
    error response's content (``code`` one of the API's error codes, ``docs/mqtt-api.md``).

    Examples: a payload that is not JSON (``malformed``); a viewer asking to ``pause``
    (``forbidden``); a command the API does not have (``unknown_command``); a payload larger
    than the API accepts (``too_large``).
    """

    code: str
    message: str
    command: str = ""
    transaction: str | None = None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
