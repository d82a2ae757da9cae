"""BeeTek-style ASCII line protocol: one card a line, ``SUIT RANK CR LF``.

The plug-in's parts: ``codec`` (lines, decoder), ``session`` (the host's side), ``speaker``
(the simulated shoe's side); it has no settings of its own.
"""

from drivers.shoe.protocols.ascii_lines.session import AsciiLineSession
from drivers.shoe.protocols.ascii_lines.speaker import AsciiLineSpeaker
from drivers.shoe.registry import ShoeProtocol

PROTOCOL = ShoeProtocol("ascii", AsciiLineSession, AsciiLineSpeaker)
