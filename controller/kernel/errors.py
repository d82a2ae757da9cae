"""The one exception tree of livetable.

Every error that livetable raises on purpose derives from :class:`TableError`, so a caller
(the daemon, the CLI, a test) can catch the family it cares about and let the rest surface.
Library errors are converted at the boundary where they enter our code
(``raise ShoeDisconnected(...) from error``), never passed through raw.
"""

from __future__ import annotations


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
