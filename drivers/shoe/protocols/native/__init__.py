"""livetable's native shoe protocol: sequence numbers, acknowledgements, retransmission.

The plug-in's parts: ``codec`` (frames, decoder), ``session`` (the host's side),
``speaker`` (the simulated shoe's side); it has no settings of its own.
"""

from drivers.shoe.protocols.native.session import NativeSession
from drivers.shoe.protocols.native.speaker import NativeSpeaker
from drivers.shoe.registry import ShoeProtocol

PROTOCOL = ShoeProtocol("native", NativeSession, NativeSpeaker)
